"""Do the CLI's medians agree with torch.utils.benchmark run in a process of its own?

For each model (the seed MLP 1024,1024,512,10 at batch 256, and a tiny MLP
64,64,10 at batch 1), alternating rounds A B A B … (three by default), like
with like:

* A: a real ``compile-studio-cli run`` subprocess (supervised worker, a run
  folder written); its per-variant median is read back from that folder;
* B: ``torch.utils.benchmark.Timer.blocked_autorange`` in a fresh process of
  its own, on the same model, weights, input and flags, with the worker's
  thread count (read from the CLI run's ``run.json``).

Each side runs twice per round (``--pinning both``, the default): *pinned* — the
CLI as it runs by default (its worker's timing thread alone on the last core,
torch's other threads on the others) against a Timer process whose timing
thread is pinned the same way, with the app's own code, after its compiles —
and *unpinned* — the CLI with ``COMPILE_STUDIO_PIN_CPUS=0`` against a plain
Timer process, as a user's own program runs. Each pair is compared with its
like; the pinned/unpinned ratio of each side says what pinning changes.

Prints every round's medians and ratios per variant with /proc/loadavg, then
per pairing the median of the ratios, their spread (max − min) and whether
every round was within 1 ± 0.05. Runs on the CPU by default. On a machine whose
cores are busy with other work, ``--threads 1`` keeps a multi-threaded op from
waiting on a descheduled thread (both sides get it).

    PYTHONPATH=app python bench/fidelity.py [--rounds 3] [--variants eager,aot_eager]
        [--threads N] [--pinning both|pinned|unpinned]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

APP_DIR = Path(__file__).resolve().parent.parent / "app"
if str(APP_DIR) not in sys.path:
    sys.path.insert(0, str(APP_DIR))

#: name → (layers, batch)
MODELS = {
    "seed": ("1024,1024,512,10", 256),
    "tiny": ("64,64,10", 1),
}
AGREEMENT = 0.05
TIMER_CHILD = "--timer-child"


#: The two ways each side runs: the app's pinning, and none (a user's own process).
PINNINGS = ("pinned", "unpinned")


def child_environment(threads: int | None = None, pinned: bool = True) -> dict[str, str]:
    from compile_studio.core.affinity import PIN_ENV

    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    env[PIN_ENV] = "1" if pinned else "0"
    paths = [str(APP_DIR)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def cli_command() -> list[str]:
    """``compile-studio-cli`` beside this Python (or on PATH), else ``python -m compile_studio.cli``."""
    here = Path(sys.executable).parent / "compile-studio-cli"
    if here.exists():
        return [str(here)]
    found = shutil.which("compile-studio-cli")
    return [found] if found else [sys.executable, "-m", "compile_studio.cli"]


def loadavg() -> str:
    """The first three fields of /proc/loadavg (os.getloadavg elsewhere)."""
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            return " ".join(fh.read().split()[:3])
    except OSError:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cli_medians(
    layers: str, batch: int, args: argparse.Namespace, store: Path, pinned: bool = True
) -> tuple[dict[str, tuple[float, float]], int, str]:
    """((median ms, IQR %) per variant, the worker's torch threads, run folder) of one CLI run."""
    from compile_studio.results import load_run, summarize

    cmd = [
        *cli_command(), "run", "--out", str(store), "--quiet",
        "--device", args.device, "--layers", layers, "--batch-size", str(batch),
        "--dtype", args.dtype, "--variants", args.variants,
        "--iterations", str(args.iterations), "--warmup", str(args.warmup),
        "--compile-timing", "in_run", "--label", "fidelity",
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=child_environment(args.threads, pinned),
        timeout=1800,
    )
    if proc.returncode != 0:
        sys.exit(f"the CLI failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    folder = next(
        (line[len("saved: "):].strip() for line in proc.stdout.splitlines() if line.startswith("saved: ")),
        None,
    )
    if folder is None:
        sys.exit(f"the CLI did not say where it saved the run:\n{proc.stdout[-2000:]}")
    run = load_run(folder)
    medians = {
        r.name: (r.median_ms, r.iqr_pct if r.iqr_pct is not None else float("nan"))
        for r in summarize(run)
        if r.median_ms is not None
    }
    threads = int(run.measurement.get("torch_threads") or 0)
    placed = str(run.measurement.get("cpu_pinning") or "")
    if pinned != placed.startswith("timing thread alone"):
        sys.exit(f"the CLI run was to be {'pinned' if pinned else 'unpinned'}; it says: {placed}")
    return medians, threads, folder


def timer_medians(
    layers: str, batch: int, args: argparse.Namespace, threads: int, pinned: bool = False
) -> dict[str, tuple[float, float]]:
    """(median ms, IQR %) per variant from Timer.blocked_autorange, in a process of its own.

    ``pinned``: its timing thread alone on the last core, as the CLI's worker pins its own.
    """
    request = {
        "layers": layers, "batch": batch, "device": args.device, "dtype": args.dtype,
        "variants": args.variants.split(","), "warmup": args.warmup, "threads": threads,
        "min_run_time": args.min_run_time, "pinned": pinned,
    }
    proc = subprocess.run(
        [sys.executable, __file__, TIMER_CHILD, json.dumps(request)],
        capture_output=True, text=True, env=child_environment(threads, pinned), timeout=1800,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"the Timer process failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return {k: (float(v[0]), float(v[1])) for k, v in json.loads(lines[-1]).items()}


def timer_child(request: dict[str, Any]) -> int:
    """The Timer side: same model, weights, input and flags as the worker builds."""
    import torch
    from torch.utils import benchmark

    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.engine.environment import compile_modes
    from compile_studio.engine.mlp import TORCH_DTYPES
    from compile_studio.engine.run_state import apply_precision, resolve_device
    from compile_studio.engine.runner import make_input
    from compile_studio.engine.variant import build_variant

    threads = int(request["threads"]) or torch.get_num_threads()
    torch.set_num_threads(threads)
    config = BenchmarkConfig(
        layers=request["layers"], batch_size=int(request["batch"]), device=request["device"],
        dtype=request["dtype"], variants=list(request["variants"]),
    )
    device = torch.device(resolve_device(config.device))
    dtype = TORCH_DTYPES[config.dtype]
    apply_precision(config.dtype)
    x = (make_input(config).to(device, dtype),)  # a step takes the tuple of inputs
    modes = compile_modes()
    out: dict[str, tuple[float, float]] = {}
    with torch.inference_mode():
        # every variant built and compiled first, then (pinned) the timing thread on its core,
        # as the worker does: what a compile starts keeps every core
        built = {}
        for name in config.variants:
            built[name] = build_variant(config, name, device, dtype, modes)
            built[name].step(x)
        if request.get("pinned"):
            from compile_studio.core import affinity
            from compile_studio.engine.pinning import pin_timing_thread

            os.environ[affinity.TIMING_CPU_ENV] = str(affinity.available_cpus()[-1])
            pinned, text = pin_timing_thread()
            if not pinned:
                print(f"not pinned: {text}", file=sys.stderr)
                return 1
        for name in config.variants:
            v = built[name]
            for _ in range(int(request["warmup"])):
                v.step(x)
            end = time.monotonic() + config.warmup_min_ms / 1000.0
            while time.monotonic() < end:
                v.step(x)
            m = benchmark.Timer(
                stmt="step(x)", globals={"step": v.step, "x": x}, num_threads=threads
            ).blocked_autorange(min_run_time=float(request["min_run_time"]))
            out[name] = (m.median * 1e3, m.iqr / m.median * 100.0)
    print(json.dumps(out), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == TIMER_CHILD:
        return timer_child(json.loads(argv[1]))
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="A B rounds per model (at least 3)")
    ap.add_argument("--models", default="seed,tiny", help=f"some of {', '.join(MODELS)}")
    ap.add_argument("--variants", default="eager,aot_eager",
                    help="eager plus a compiled variant, e.g. eager,default")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--threads", type=int, default=0,
                    help="OMP_NUM_THREADS for the worker (and so the Timer); 0: torch's default")
    ap.add_argument("--min-run-time", type=float, default=1.0,
                    help="Timer.blocked_autorange's min_run_time per variant, seconds")
    ap.add_argument("--pinning", choices=("both", *PINNINGS), default="both",
                    help="pinned: the app's pinning on both sides; unpinned: none on either "
                         "(a user's own process); both (default): each, every round")
    args = ap.parse_args(argv)
    if args.rounds < 3:
        ap.error("--rounds must be at least 3")
    import torch

    pinnings = PINNINGS if args.pinning == "both" else (args.pinning,)
    print(f"torch {torch.__version__}, {os.cpu_count()} cores, loadavg {loadavg()}, "
          f"device {args.device}, {args.dtype}, variants {args.variants}, "
          f"{args.rounds} rounds, each: " + ", ".join(f"A (CLI, {p}) B (Timer, {p})" for p in pinnings),
          flush=True)
    variants = args.variants.split(",")
    store = Path(tempfile.mkdtemp(prefix="fidelity-runs-"))
    verdicts: list[tuple[str, bool, float]] = []
    for model in args.models.split(","):
        layers, batch = MODELS[model]
        print(f"\n== {model} MLP {layers}, batch {batch}", flush=True)
        #: per pinning and variant: (CLI ms, Timer ms) of each round
        got: dict[str, dict[str, list[tuple[float, float]]]] = {
            p: {v: [] for v in variants} for p in pinnings
        }
        for r in range(args.rounds):
            for p in (pinnings if r % 2 == 0 else pinnings[::-1]):  # neither way always first
                pinned = p == "pinned"
                load_before = loadavg()
                t0 = time.monotonic()
                cli, threads, _ = cli_medians(layers, batch, args, store, pinned)
                t1 = time.monotonic()
                tim = timer_medians(layers, batch, args, threads, pinned)
                t2 = time.monotonic()
                for v in variants:
                    (c, c_iqr), (t, t_iqr) = cli[v], tim[v]
                    got[p][v].append((c, t))
                    print(f"round {r + 1} {p:8s} {v:10s} CLI {c:9.4f} ms (IQR {c_iqr:5.1f} %)   "
                          f"Timer {t:9.4f} ms (IQR {t_iqr:5.1f} %)   ratio {c / t:.3f}", flush=True)
                print(f"         ({threads} threads; CLI run {t1 - t0:.0f} s, Timer process "
                      f"{t2 - t1:.0f} s; loadavg {load_before} → {loadavg()})", flush=True)
        for p in pinnings:
            for v in variants:
                rs = [c / t for c, t in got[p][v]]
                med = statistics.median(rs)
                every = all(abs(x - 1) <= AGREEMENT for x in rs)
                verdicts.append((f"{model} {p} {v}", every, med))
                print(f"{model} {p:8s} {v:10s} CLI/Timer median {med:.3f} ({(med - 1) * 100:+.1f} %), "
                      f"spread {max(rs) - min(rs):.3f}, rounds {', '.join(f'{x:.3f}' for x in rs)}"
                      f"{'' if every else '  (a round outside ±5 %)'}", flush=True)
        if len(pinnings) == 2:
            for v in variants:
                for side, k in (("CLI", 0), ("Timer", 1)):
                    ratio = [a[k] / b[k] for a, b in zip(got["pinned"][v], got["unpinned"][v])]
                    print(f"{model} pinning changes {side:5s} {v:10s}: pinned/unpinned median "
                          f"{statistics.median(ratio):.3f}, rounds "
                          f"{', '.join(f'{x:.3f}' for x in ratio)}", flush=True)
        base = variants[0]
        for v in variants[1:]:
            for p in pinnings:
                for side, k in (("CLI", 0), ("Timer", 1)):
                    sp = [e[k] / c[k] for e, c in zip(got[p][base], got[p][v])]
                    print(f"{model} {v} speedup over {base}, {p:8s} {side:5s}: median "
                          f"{statistics.median(sp):.3f}×, rounds {', '.join(f'{x:.3f}' for x in sp)}",
                          flush=True)
    print(f"\nloadavg at the end {loadavg()}")
    for label, every, med in verdicts:
        print(f"{label}: every round within ±{AGREEMENT:.0%}: {'yes' if every else 'NO'} "
              f"(median {med:.3f})")
    print(f"runs kept in {store}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
