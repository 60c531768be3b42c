"""Are the verdict's intervals calibrated on this machine, as it is now?

For each configuration (the tiny MLP 64,64,10 at batch 1 and the seed MLP
1024,1024,512,10 at batch 256), through the real CLI with the default run
length (iterations, warm-up and rounds of a new configuration):

* **A/A** — runs of eager against the A/A control (eager again), half of them
  with a competing CPU load started here (a busy-loop process with a time
  limit). Counts the runs whose 95 % interval covers 1.00 or whose verdict is
  "cannot tell" (target ≥ 17 of 20) and the runs whose verdict claims a
  difference (target ≤ 3 of 20).
* **Power** — runs of eager against ``run_twice`` (a test backend that runs
  the model twice per call, from ``tests/support/backends_for_tests.py``). Its true
  ratio is measured first: the geometric mean of three runs (each its own
  process) with eight times the rounds and calls; counts "slower"
  verdicts (target ≥ 19 of 20) and intervals that cover the true ratio
  (target ≥ 17 of 20).

Prints each run (interval, verdict, seconds) and the counts against the
targets. Exit status 0 when every target is met, 1 otherwise.

    python bench/calibration.py [--quick] [--runs 20] [--only tiny|seed] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compile_studio.core.config import BenchmarkConfig
from compile_studio.core.variants import AA_CONTROL
from compile_studio.results import RunResult, SummaryRow, load_run, summarize
from compile_studio.results.analysis.machine_load import machine_load

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ROOT / "tests" / "support" / "backends_for_tests.py"
SLOW_VARIANT = "run_twice"
CONFIGS = {
    "tiny": {"layers": "64,64,10", "batch_size": 1},
    "seed": {"layers": "1024,1024,512,10", "batch_size": 256},
}
#: The true ratio is measured with this many times the default rounds and iterations.
TRUTH_FACTOR = 8
#: Long runs (each its own process) whose geometric mean is the true ratio.
TRUTH_RUNS = 3
#: Further long runs tried when one of them gives no clear verdict.
TRUTH_ATTEMPTS = 2
#: Longest a competing load may run, seconds (it is stopped after its run anyway).
LOAD_LIMIT_S = 900


@dataclass
class Outcome:
    """One calibration run: the compiled (or A/A) variant's summary row and the run's duration."""

    row: SummaryRow
    eager: SummaryRow
    seconds: float
    loaded: bool

    def covers(self, value: float) -> bool:
        lo, hi = self.row.speedup_lo, self.row.speedup_hi
        return lo is not None and hi is not None and lo <= value <= hi

    def line(self, index: int, label: str) -> str:
        r = self.row
        shown = "–" if r.speedup is None else f"{r.speedup:.3f}× [{r.speedup_lo:.3f}–{r.speedup_hi:.3f}]"
        failed = [f"{x.name}: {x.checks}" for x in (self.eager, r) if x.checks]
        checks = f"  checks: {' | '.join(failed)}" if failed else ""
        return (
            f"  {label} #{index:02d} {'load ' if self.loaded else 'quiet'}  {shown:28s} "
            f"{r.verdict or '–':12s} {self.seconds:6.1f} s{checks}"
        )


@contextmanager
def competing_load(enabled: bool, processes: int):
    """``processes`` busy-loop processes while the block runs (none when not ``enabled``)."""
    procs: list[subprocess.Popen] = []
    if enabled:
        code = f"import time\nend = time.monotonic() + {LOAD_LIMIT_S}\nwhile time.monotonic() < end: pass\n"
        procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(processes)]
        time.sleep(0.5)
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def run_cli(config: dict[str, Any], out: Path) -> tuple[RunResult, float]:
    """Run ``config`` through ``compile_studio.cli run``; the loaded run and its wall time."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.iterdir())
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(config, fh)
        cfg_path = fh.name
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "compile_studio.cli", "run", "--quiet", "--out", str(out), "--config", cfg_path],
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - t0
    Path(cfg_path).unlink(missing_ok=True)
    if p.returncode != 0:
        sys.exit(f"the run failed (exit {p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    (folder,) = set(out.iterdir()) - before
    return load_run(folder), seconds


def row_of(run: RunResult, name: str) -> SummaryRow:
    return next(r for r in summarize(run) if r.name == name)


def calibrate(name: str, model: dict[str, Any], args: argparse.Namespace, out: Path) -> bool:
    defaults = BenchmarkConfig()
    base = {**model, "device": args.device, "label": f"calibration {name}"}
    print(f"\n== {name}: MLP {model['layers']} · batch {model['batch_size']} · {args.device}")
    print(
        f"   default run length: {defaults.iterations} timed calls per variant in "
        f"{defaults.rounds} rounds, {defaults.warmup} warm-up calls"
    )
    print(f"   machine now: {machine_load().summary()}")

    runs = args.runs
    print(f"\n   A/A: eager vs {AA_CONTROL}, {runs} runs, {runs // 2} with {args.load_processes} busy-loop load")
    aa: list[Outcome] = []
    for i in range(runs):
        loaded = i % 2 == 1
        with competing_load(loaded, args.load_processes):
            run, seconds = run_cli({**base, "variants": ["eager", AA_CONTROL]}, out / name / "aa")
        o = Outcome(row_of(run, AA_CONTROL), row_of(run, "eager"), seconds, loaded)
        aa.append(o)
        print(o.line(i + 1, "A/A"), flush=True)

    print(f"\n   power: eager vs {SLOW_VARIANT} (runs the model twice per call)")
    slow = {**base, "variants": ["eager", SLOW_VARIANT], "backend_modules": [str(BACKENDS)]}
    truth_cfg = {
        **slow,
        "iterations": defaults.iterations * TRUTH_FACTOR,
        "rounds": defaults.rounds * TRUTH_FACTOR,
    }
    # one long run has an offset of its own process (memory layout, core placement): the true
    # ratio is the geometric mean of TRUTH_RUNS long runs, each its own process
    truths: list[float] = []
    for attempt in range(1, TRUTH_RUNS + TRUTH_ATTEMPTS + 1):
        truth_run, truth_s = run_cli(truth_cfg, out / name / "truth")
        truth_row = row_of(truth_run, SLOW_VARIANT)
        print(
            f"   true ratio, run {attempt} ({truth_cfg['iterations']} calls in {truth_cfg['rounds']} rounds, "
            f"{truth_s:.0f} s): "
            + ("–" if truth_row.speedup is None else
               f"{truth_row.speedup:.3f}× [{truth_row.speedup_lo:.3f}–{truth_row.speedup_hi:.3f}]")
            + f" {truth_row.verdict}" + (f"  checks: {truth_row.checks}" if truth_row.checks else ""),
            flush=True,
        )
        if truth_row.verdict == "slower" and truth_row.speedup:
            truths.append(truth_row.speedup)
        if len(truths) == TRUTH_RUNS:
            break
    if not truths:
        sys.exit(f"the true ratio could not be measured: {truth_row.verdict_reason or truth_row.error}")
    truth = math.exp(sum(math.log(x) for x in truths) / len(truths))
    spread = (max(truths) / min(truths) - 1) * 100
    print(f"   true ratio: {truth:.3f}× (geometric mean of {len(truths)} runs; they differ by {spread:.1f} %)")
    power: list[Outcome] = []
    for i in range(runs):
        run, seconds = run_cli(slow, out / name / "power")
        o = Outcome(row_of(run, SLOW_VARIANT), row_of(run, "eager"), seconds, False)
        power.append(o)
        print(o.line(i + 1, "power"), flush=True)

    points = [o.row.speedup for o in power if o.row.speedup]
    if points:
        pooled = math.exp(sum(math.log(x) for x in points) / len(points))
        print(f"   the power runs' own geometric mean: {pooled:.3f}× (the true ratio measured first: {truth:.3f}×)")
    n = runs
    aa_ok = sum(o.covers(1.0) or o.row.verdict == "cannot tell" for o in aa)
    aa_claims = sum(o.row.verdict in ("faster", "slower") for o in aa)
    aa_loaded_ok = sum(o.covers(1.0) or o.row.verdict == "cannot tell" for o in aa if o.loaded)
    slower = sum(o.row.verdict == "slower" for o in power)
    covered = sum(o.covers(truth) for o in power)
    need = {k: -(-v * n // 20) for k, v in {"aa_ok": 17, "slower": 19, "covered": 17}.items()}
    most_claims = 3 * n // 20
    results = [
        (f"A/A interval covers 1.00 or cannot tell: {aa_ok}/{n} (under load {aa_loaded_ok}/{n // 2})",
         f"≥ {need['aa_ok']}", aa_ok >= need["aa_ok"]),
        (f"A/A verdict claims a difference: {aa_claims}/{n}", f"≤ {most_claims}", aa_claims <= most_claims),
        (f"power: verdict 'slower': {slower}/{n}", f"≥ {need['slower']}", slower >= need["slower"]),
        (f"power: interval covers the true {truth:.3f}×: {covered}/{n}", f"≥ {need['covered']}",
         covered >= need["covered"]),
    ]
    durations = sorted(o.seconds for o in aa + power)
    print(f"\n   {name}: each run took {durations[0]:.1f}–{durations[-1]:.1f} s "
          f"(median {durations[len(durations) // 2]:.1f} s)")
    for text, target, ok in results:
        print(f"   {'ok  ' if ok else 'MISS'} {text}  (target {target})")
    print(f"   machine after: {machine_load().summary()}")
    return all(ok for *_, ok in results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 runs per experiment (a smoke check)")
    parser.add_argument("--runs", type=int, default=20, help="runs per experiment (default 20)")
    parser.add_argument("--only", choices=sorted(CONFIGS), help="one configuration only")
    parser.add_argument("--device", default="cpu", help="device of every run (default cpu)")
    parser.add_argument("--load-processes", type=int, default=1, help="busy-loop processes of the competing load")
    parser.add_argument("--out", type=Path, help="keep the run folders here (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs = 4
    t0 = time.monotonic()
    ok = True
    with tempfile.TemporaryDirectory(prefix="calibration-") as tmp:
        out = args.out or Path(tmp)
        for name, model in CONFIGS.items():
            if args.only in (None, name):
                ok = calibrate(name, model, args, out) and ok
    print(f"\ncalibration {'met every target' if ok else 'missed a target'} in {time.monotonic() - t0:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
