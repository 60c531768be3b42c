"""Does a compile host started ahead give the figure of a process started on demand?

For each variant, alternates (ABAB …) the two ways of timing its first call:
A = a process started on demand (``python -m compile_studio.worker
--isolated-compile V``: a new interpreter, torch imported, then the first
call timed), and B = a compile host (:mod:`compile_studio.engine.compile_host`,
what runs use) started and ready before it is asked. Prints every round's
compile seconds, each side's median, the ratio B/A, and the wall time from
the request to the answer (a run overlaps a host's start with other work).

    python bench/compile_host.py [--rounds 4] [--variants aot_eager,default]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
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
        for r in range(args.rounds):
            s, w = fresh(config, variant)
            a.append(s)
            wall_a.append(w)
            host = CompileHost([sys.executable, "-m", "compile_studio.worker", HOST_FLAG],
                               dict(os.environ), None, threading.Event())
            host.wait_ready(variant)
            t1 = time.perf_counter()
            b.append(host.compile_s(config.to_json(), variant))
            wall_b.append(time.perf_counter() - t1)
            print(f"{variant} round {r + 1}: on demand {a[-1]:.3f} s (wall {w:.2f} s), "
                  f"host started ahead {b[-1]:.3f} s (wall {wall_b[-1]:.2f} s), "
                  f"ratio {b[-1] / a[-1]:.3f}")
        ratios = [y / x for x, y in zip(a, b)]
        print(f"{variant}: median compile s on demand {statistics.median(a):.3f}, host "
              f"{statistics.median(b):.3f}; ratio per round {' '.join(f'{q:.3f}' for q in ratios)}"
              f" (median {statistics.median(ratios):.3f}); wall from request: on demand "
              f"{statistics.median(wall_a):.2f} s, host {statistics.median(wall_b):.2f} s")


if __name__ == "__main__":
    main()
