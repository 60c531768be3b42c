"""Does a variant's compile time depend on whether it is compiled first or second?

Runs the CLI (real, supervised workers) with the same compiled variant listed
first and then second among the compiled variants, alternating (ABAB …), in
both compile-timing methods: ``isolated`` (each variant's first call in a
fresh process, the app's default) and ``in_run`` (the first call inside the
run). Prints every round's compile seconds and the ratio second/first; with
``isolated`` the ratio should stay within 1 ± 0.25, while ``in_run`` shows what
the first compiled variant pays for the others (Inductor's imports, workers).

    python bench/compile_order.py [--rounds 3] [--variant default] [--other aot_eager]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from compile_studio.results import load_run


def compile_s(config: dict, store: Path, variant: str) -> float:
    cfg = store / "config.json"
    cfg.write_text(json.dumps(config))
    before = set(store.iterdir())
    proc = subprocess.run(
        [sys.executable, "-m", "compile_studio.cli", "run", "--quiet", "--out", str(store),
         "--config", str(cfg)],
        capture_output=True, text=True,
    )
    if proc.returncode != 0:
        sys.exit(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    folder = next(p for p in set(store.iterdir()) - before if p.is_dir())
    value = load_run(folder).variants[variant].compile_s
    assert value is not None
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variant", default="default")
    parser.add_argument("--other", default="aot_eager")
    parser.add_argument("--layers", default="256,256,10")
    args = parser.parse_args()
    base = {
        "layers": args.layers, "batch_size": 32, "device": "cpu", "iterations": 20,
        "warmup": 2, "warmup_min_ms": 0, "rounds": 1, "compile_cache": "warm",
    }
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp)
        # pre-warm: the warm cache holds this variant's kernels before any timed round
        compile_s({**base, "variants": ["eager", args.variant], "compile_timing": "in_run"},
                  store, args.variant)
        for timing in ("isolated", "in_run"):
            firsts, seconds = [], []
            for r in range(args.rounds):
                first = compile_s({**base, "compile_timing": timing,
                                   "variants": ["eager", args.variant, args.other]},
                                  store, args.variant)
                second = compile_s({**base, "compile_timing": timing,
                                    "variants": ["eager", args.other, args.variant]},
                                   store, args.variant)
                firsts.append(first)
                seconds.append(second)
                print(f"{timing:8s} round {r + 1}: listed first {first:.3f} s, "
                      f"second {second:.3f} s, ratio {second / first:.2f}", flush=True)
            ratios = [s / f for f, s in zip(firsts, seconds)]
            print(f"{timing:8s} median ratio second/first {statistics.median(ratios):.2f} "
                  f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)})\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
