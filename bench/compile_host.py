"""Does timing a compile in a child of the compile host give a fresh process's figure?

For each variant, alternates (ABAB …) the two ways of timing its first call:
A = a fresh process (``python -m compile_studio.worker --isolated-compile V``:
a new interpreter, torch imported, then the first call timed), and B = a child
forked from a compile host that imported the same modules once
(:mod:`compile_studio.engine.compile_host`, what runs use). Prints every
round's compile seconds, each side's median, the ratio B/A, and the wall time
each way took (the host's saving is the interpreter start and imports).

    python bench/compile_host.py [--rounds 4] [--variants aot_eager,default]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time

from compile_studio import protocol
from compile_studio.config import BenchmarkConfig
from compile_studio.engine.compile_host import HOST_FLAG, CompileHost


def fresh(config: BenchmarkConfig, variant: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "compile_studio.worker", "--isolated-compile", variant],
        input=config.to_json() + "\n", capture_output=True, text=True, timeout=600,
    )
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        event = protocol.decode(line)
        if isinstance(event, protocol.CompiledEvent):
            return event.compile_s, wall
    sys.exit(f"the fresh process reported nothing:\n{proc.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--variants", default="aot_eager,default")
    ap.add_argument("--layers", default="64,64,10")
    args = ap.parse_args()
    config = BenchmarkConfig(layers=args.layers, batch_size=1, device="cpu", iterations=10,
                             warmup=0, rounds=1, variants=["eager", *args.variants.split(",")])
    for variant in args.variants.split(","):
        a: list[float] = []
        b: list[float] = []
        wall_a: list[float] = []
        wall_b: list[float] = []
        t0 = time.perf_counter()
        host = CompileHost([sys.executable, "-m", "compile_studio.worker", HOST_FLAG],
                           dict(__import__("os").environ), None, threading.Event())
        host_start = time.perf_counter() - t0
        try:
            host.compile_s(config.to_json(), variant)  # waits for the host's imports once
            host_ready = time.perf_counter() - t0
            for r in range(args.rounds):
                s, w = fresh(config, variant)
                a.append(s)
                wall_a.append(w)
                t1 = time.perf_counter()
                b.append(host.compile_s(config.to_json(), variant))
                wall_b.append(time.perf_counter() - t1)
                print(f"{variant} round {r + 1}: fresh process {a[-1]:.3f} s (wall {w:.2f} s), "
                      f"host child {b[-1]:.3f} s (wall {wall_b[-1]:.2f} s), ratio {b[-1] / a[-1]:.3f}")
        finally:
            host.close()
        ratios = [y / x for x, y in zip(a, b)]
        print(f"{variant}: median compile s fresh {statistics.median(a):.3f}, host child "
              f"{statistics.median(b):.3f}; ratio per round {' '.join(f'{q:.3f}' for q in ratios)}"
              f" (median {statistics.median(ratios):.3f}); wall per compile fresh "
              f"{statistics.median(wall_a):.2f} s vs host {statistics.median(wall_b):.2f} s "
              f"(host start {host_start:.2f} s, first answer after {host_ready:.2f} s)")


if __name__ == "__main__":
    main()
