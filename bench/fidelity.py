"""Do the CLI's medians agree with torch.utils.benchmark run in a process of its own?

For each model (the seed MLP 1024,1024,512,10 at batch 256, and a tiny MLP
64,64,10 at batch 1), alternating rounds A B A B … (seven by default), like
with like:

* A: a real ``compile-studio-cli run`` subprocess (supervised worker, a run
  folder written); its per-variant median and its timed calls are read back
  from that folder;
* B: a fresh process of its own on the same model, weights, input and flags,
  with the worker's thread count (read from the CLI run's ``run.json``), timed
  as the worker times: every variant compiled first, warmed up together, then
  the CLI's rounds (``--cli-rounds``) in the same order. Per round and variant,
  untimed calls for ``SETTLE_S`` as the worker starts each block, ``timeit`` single calls,
  then ``torch.utils.benchmark.Timer.blocked_autorange``.

Two statistics, each compared with its like: *per-call* — the median of single
calls (the CLI's median against ``timeit``'s) — and *blocked* — the median of
block means (``blocked_autorange``'s against the CLI's own calls cut into
blocks of the Timer's size). A block mean carries the slow calls the median of
single calls leaves out, so on a busy machine the two differ by more than any
harness: the *unlike* line (the CLI's median against ``blocked_autorange``, what
a plain Timer invites) is shown, never judged.

Each side runs twice per round (``--pinning both``, the default): *pinned* — the
CLI as it runs by default (its worker's timing thread alone on the last core,
torch's other threads on the others) against a Timer process whose timing
thread is pinned the same way, with the app's own code, after its compiles —
and *unpinned* — the CLI with ``COMPILE_STUDIO_PIN_CPUS=0`` against a plain
process, as a user's own program runs. The pinned/unpinned ratio of each side
says what pinning changes.

Prints every round's figures and ratios per variant with /proc/loadavg, then
per pairing and statistic the median of the ratios, their spread (max − min)
and whether every round was within 1 ± 0.05. Runs on the CPU by default. On a
machine whose cores are busy with other work, ``--threads 1`` keeps a
multi-threaded op from waiting on a descheduled thread (both sides get it), and
``--nice -15`` (root) gives the measured sessions the cores first (both sides).

    PYTHONPATH=app python bench/fidelity.py [--rounds 7] [--variants eager,aot_eager]
        [--threads N] [--pinning both|pinned|unpinned] [--cli-rounds 5] [--nice N]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

APP_DIR = Path(__file__).resolve().parent.parent / "app"
if str(APP_DIR) not in sys.path:
    sys.path.insert(0, str(APP_DIR))

#: name → (layers, batch, timed calls per variant: a few seconds of each variant's calls on a
#: small CPU, so that a stretch of seconds in which the machine runs slower meets a few rounds of
#: one side, not all of its calls)
MODELS = {
    "seed": ("1024,1024,512,10", 256, 300),
    "tiny": ("64,64,10", 1, 50_000),
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


def cli_samples(
    layers: str, batch: int, args: argparse.Namespace, store: Path, pinned: bool = True
) -> tuple[dict[str, float], dict[str, list[list[float]]], int, str]:
    """One CLI run: (its median ms per variant, its timed calls per variant and round (ms),
    the worker's torch threads, run folder)."""
    from compile_studio.results import load_run, summarize

    cmd = [
        *cli_command(), "run", "--out", str(store), "--quiet",
        "--device", args.device, "--layers", layers, "--batch-size", str(batch),
        "--dtype", args.dtype, "--variants", args.variants,
        "--iterations", str(args.iterations), "--warmup", str(args.warmup),
        "--rounds", str(args.cli_rounds), "--compile-timing", "in_run", "--label", "fidelity",
    ]
    proc = run_child(cmd, child_environment(args.threads, pinned), args.nice)
    if proc.returncode != 0:
        sys.exit(f"the CLI failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    folder = next(
        (line[len("saved: "):].strip() for line in proc.stdout.splitlines() if line.startswith("saved: ")),
        None,
    )
    if folder is None:
        sys.exit(f"the CLI did not say where it saved the run:\n{proc.stdout[-2000:]}")
    run = load_run(folder)
    medians = {r.name: r.median_ms for r in summarize(run) if r.median_ms is not None}
    # a pinned run's own figure for a user's process (no thread pinned), beside its median
    medians.update({
        f"{n} unpinned_ms": v.unpinned_ms for n, v in run.variants.items()
        if getattr(v, "unpinned_ms", None) is not None
    })
    rounds: dict[str, dict[str, list[float]]] = {}
    with open(Path(folder) / "samples.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["phase"] == "measure" and row["variant"] in tim_names(medians):
                rounds.setdefault(row["variant"], {}).setdefault(row["round"], []).append(
                    float(row["wall_ms"])
                )
    threads = int(run.measurement.get("torch_threads") or 0)
    placed = str(run.measurement.get("cpu_pinning") or "")
    if pinned != placed.startswith("timing thread alone"):
        sys.exit(f"the CLI run was to be {'pinned' if pinned else 'unpinned'}; it says: {placed}")
    return medians, {v: list(r.values()) for v, r in rounds.items()}, threads, folder


def tim_names(medians: dict[str, float]) -> set[str]:
    """The variant names among the keys of :func:`cli_samples`'s figures."""
    return {k for k in medians if not k.endswith(" unpinned_ms")}


def block_median(rounds: list[list[float]], size: int) -> float:
    """Timer.blocked_autorange's statistic on per-call times: the median of the means of
    consecutive blocks of ``size`` of the variant's calls (its rounds in order; a short tail is
    left out)."""
    calls = [c for r in rounds for c in r]
    size = max(1, min(size, len(calls)))
    means = [statistics.fmean(calls[i:i + size]) for i in range(0, len(calls) - size + 1, size)]
    return statistics.median(means) if means else float("nan")


def raise_priority(nice: int, pid: int | str = "self") -> bool:
    """Put the autogroup (session) of ``pid`` at ``nice`` (Linux, root or CAP_SYS_NICE): on a
    machine other people load, the measured processes get the cores first. With autogroups
    on, a process's own nice only counts inside its session, hence the session's."""
    try:
        with open(f"/proc/{pid}/autogroup", "w", encoding="ascii") as fh:
            fh.write(str(nice))
        return True
    except OSError:
        return False


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc/*/task/*/children)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/children", encoding="ascii") as fh:
                    kids = [int(k) for k in fh.read().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def run_child(cmd: list[str], env: dict[str, str], nice: int | None) -> subprocess.CompletedProcess[str]:
    """``cmd`` to its end; with ``nice``, every session it starts (the worker starts its own)
    gets that autogroup nice too, as this process's session has."""
    if nice is None:
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
        done = threading.Event()
        seen: set[int] = set()

        def watch() -> None:
            while not done.wait(0.05):
                for kid in descendants(proc.pid):
                    if kid not in seen:
                        seen.add(kid)
                        raise_priority(nice, kid)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            out, err = proc.communicate(timeout=1800)
        finally:
            done.set()
            watcher.join()
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def timer_medians(
    layers: str, batch: int, args: argparse.Namespace, threads: int, pinned: bool = False
) -> dict[str, dict[str, float]]:
    """Per variant, from a process of its own: ``per_call_ms`` (median of single calls timed by
    ``timeit``), ``block_ms`` (``Timer.blocked_autorange``'s median) and ``calls_per_block``.

    ``pinned``: its timing thread alone on the last core, as the CLI's worker pins its own.
    """
    request = {
        "layers": layers, "batch": batch, "device": args.device, "dtype": args.dtype,
        "variants": args.variants.split(","), "warmup": args.warmup, "threads": threads,
        "min_run_time": args.min_run_time, "pinned": pinned,
        "iterations": args.iterations, "rounds": args.cli_rounds,
    }
    proc = run_child(
        [sys.executable, __file__, TIMER_CHILD, json.dumps(request)],
        child_environment(threads, pinned), args.nice,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"the Timer process failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return {k: {f: float(x) for f, x in v.items()} for k, v in json.loads(lines[-1]).items()}


def timer_child(request: dict[str, Any]) -> int:
    """The Timer side: same model, weights, input and flags as the worker builds, timed as it is.

    Every variant is built (outside inference mode, as the worker builds it) and compiled
    first; then (pinned) the timing thread goes on its core as the worker's does; the
    variants warm up together, then run in the CLI's rounds,
    in the same order each round: per round and variant, ``timeit.repeat(number=1)`` per call
    (the CLI's statistic: the median of single calls), then ``Timer.blocked_autorange`` (its
    statistic: the median of block means). Prints one JSON line.
    """
    import timeit

    import torch
    from torch.utils import benchmark

    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.engine.environment import compile_modes
    from compile_studio.engine.mlp import TORCH_DTYPES
    from compile_studio.engine.run_state import apply_precision, resolve_device
    from compile_studio.engine.runner import make_input, round_blocks
    from compile_studio.engine.timing import settle
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
    blocks = round_blocks(int(request["iterations"]), int(request["rounds"]))
    calls: dict[str, list[float]] = {n: [] for n in config.variants}
    block_means: dict[str, list[float]] = {n: [] for n in config.variants}
    per_block: dict[str, list[int]] = {n: [] for n in config.variants}
    # built outside inference mode, as the worker builds them (and a user's program does): a
    # parameter made inside it is an inference tensor, and calls on those skip work that calls on
    # a model's usual parameters do (1.1 µs a call for the tiny MLP, ~5 % of its eager call)
    built = {name: build_variant(config, name, device, dtype, modes) for name in config.variants}
    with torch.inference_mode():
        # every variant compiled first, then (pinned) the timing thread on its core, as the
        # worker does: what a compile starts keeps every core
        for name in config.variants:
            built[name].step(x)
        if request.get("pinned"):
            from compile_studio.core import affinity
            from compile_studio.engine.pinning import pin_timing_thread

            os.environ[affinity.TIMING_CPU_ENV] = str(affinity.available_cpus()[-1])
            pinned, text = pin_timing_thread()
            if not pinned:
                print(f"not pinned: {text}", file=sys.stderr)
                return 1
        # warm-up together, as the worker's: blocks of warmup // 4 in turn, for warmup_min_ms at least
        block = max(1, int(request["warmup"]) // 4)
        done = 0
        end = time.monotonic() + config.warmup_min_ms / 1000.0
        while done < int(request["warmup"]) or time.monotonic() < end:
            for name in config.variants:
                for _ in range(block):
                    built[name].step(x)
            done += block
        plain = {
            n: timeit.Timer("step(x)", globals={"step": built[n].step, "x": x}) for n in config.variants
        }
        timers = {
            n: benchmark.Timer(stmt="step(x)", globals={"step": built[n].step, "x": x}, num_threads=threads)
            for n in config.variants
        }
        share = float(request["min_run_time"]) / len(blocks)
        for count in blocks:
            for name in config.variants:
                # as the worker starts each round's block of a variant: untimed calls first
                settle(lambda step=built[name].step: step(x), lambda: None)
                calls[name] += plain[name].repeat(repeat=count, number=1)
            for name in config.variants:
                m = timers[name].blocked_autorange(min_run_time=share)
                block_means[name] += list(m.times)
                per_block[name].append(int(m.number_per_run))
    out = {
        n: {
            "per_call_ms": statistics.median(calls[n]) * 1e3,
            "block_ms": statistics.median(block_means[n]) * 1e3,
            "calls_per_block": int(statistics.median(per_block[n])),
            "blocks": len(block_means[n]),
            "calls": len(calls[n]),
        }
        for n in config.variants
    }
    print(json.dumps(out), flush=True)
    return 0


#: The two statistics compared, each with its like: the CLI's (median of single calls)
#: and Timer.blocked_autorange's (median of block means).
STATISTICS = ("per-call", "blocked")


def one_round(
    layers: str, batch: int, args: argparse.Namespace, store: Path, pinned: bool
) -> tuple[dict[str, dict[str, tuple[float, float]]], str]:
    """One A B pair: per variant and statistic (CLI ms, Timer ms); and a line about the pair."""
    load_before = loadavg()
    t0 = time.monotonic()
    medians, rounds, threads, _ = cli_samples(layers, batch, args, store, pinned)
    t1 = time.monotonic()
    tim = timer_medians(layers, batch, args, threads, pinned)
    t2 = time.monotonic()
    got = {}
    for v, t in tim.items():
        size = int(t["calls_per_block"])
        got[v] = {
            "per-call": (medians[v], t["per_call_ms"]),
            "blocked": (block_median(rounds[v], size), t["block_ms"]),
            # the comparison a plain Timer invites: the CLI's median against blocked_autorange's
            "unlike": (medians[v], t["block_ms"]),
        }
        if f"{v} unpinned_ms" in medians:  # the pinned run's unpinned figure against this process
            got[v]["recorded unpinned"] = (medians[f"{v} unpinned_ms"], t["per_call_ms"])
    note = (f"({threads} threads; Timer blocks of {', '.join(str(int(t['calls_per_block'])) for t in tim.values())} "
            f"calls; CLI run {t1 - t0:.0f} s, Timer process {t2 - t1:.0f} s; "
            f"loadavg {load_before} → {loadavg()})")
    return got, note


def summarize_model(
    model: str, variants: list[str], pinnings: tuple[str, ...],
    got: dict[str, dict[str, dict[str, list[tuple[float, float]]]]],
) -> list[tuple[str, bool, float]]:
    """Per pinning, variant and statistic: the median CLI/Timer ratio, spread, every round."""
    verdicts = []
    for p in pinnings:
        for v in variants:
            for stat in (*STATISTICS, "unlike"):
                rs = [c / t for c, t in got[p][v][stat]]
                med = statistics.median(rs)
                every = all(abs(x - 1) <= AGREEMENT for x in rs)
                if stat != "unlike":
                    verdicts.append((f"{model} {p} {v} {stat}", every, med))
                what = "(CLI median / blocked_autorange: unlike, shown only)" if stat == "unlike" else ""
                print(f"{model} {p:8s} {v:10s} {stat:8s} CLI/Timer median {med:.3f} "
                      f"({(med - 1) * 100:+.1f} %), spread {max(rs) - min(rs):.3f}, rounds "
                      f"{', '.join(f'{x:.3f}' for x in rs)}"
                      f"{'' if every or stat == 'unlike' else '  (a round outside ±5 %)'} {what}",
                      flush=True)
    if len(pinnings) == 2:
        for v in variants:
            for side, k in (("CLI", 0), ("Timer", 1)):
                ratio = [a[k] / b[k] for a, b in zip(got["pinned"][v]["per-call"], got["unpinned"][v]["per-call"])]
                print(f"{model} pinning changes {side:5s} {v:10s}: pinned/unpinned per-call median "
                      f"{statistics.median(ratio):.3f}, rounds {', '.join(f'{x:.3f}' for x in ratio)}",
                      flush=True)
        for v in variants:
            # the question a user asks: the app as it runs by default against their own process
            rs = [a[0] / b[1] for a, b in zip(got["pinned"][v]["per-call"], got["unpinned"][v]["per-call"])]
            print(f"{model} the app as it runs (CLI, pinned) / a plain process (Timer, unpinned) "
                  f"{v:10s}: per-call median {statistics.median(rs):.3f}, rounds "
                  f"{', '.join(f'{x:.3f}' for x in rs)}", flush=True)
            recorded = got["pinned"][v].get("recorded unpinned", [])
            if len(recorded) == len(got["unpinned"][v]["per-call"]):
                rs = [a[0] / b[1] for a, b in zip(recorded, got["unpinned"][v]["per-call"])]
                print(f"{model} the pinned run's recorded unpinned_ms / a plain process (Timer, "
                      f"unpinned) {v:10s}: median {statistics.median(rs):.3f}, rounds "
                      f"{', '.join(f'{x:.3f}' for x in rs)}", flush=True)
    base = variants[0]
    for v in variants[1:]:
        for p in pinnings:
            for stat in STATISTICS:
                for side, k in (("CLI", 0), ("Timer", 1)):
                    sp = [e[k] / c[k] for e, c in zip(got[p][base][stat], got[p][v][stat])]
                    print(f"{model} {v} speedup over {base}, {p:8s} {stat:8s} {side:5s}: median "
                          f"{statistics.median(sp):.3f}×, rounds {', '.join(f'{x:.3f}' for x in sp)}",
                          flush=True)
    return verdicts


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == TIMER_CHILD:
        return timer_child(json.loads(argv[1]))
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7,
                    help="A B rounds per model (at least 3; the median of 7 is not moved by three "
                         "rounds the machine slowed)")
    ap.add_argument("--models", default="seed,tiny", help=f"some of {', '.join(MODELS)}")
    ap.add_argument("--variants", default="eager,aot_eager",
                    help="eager plus a compiled variant, e.g. eager,default")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--iterations", type=int, default=0,
                    help="timed calls per variant; 0 (default): the model's own (seed 300, tiny 50,000)")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--cli-rounds", type=int, default=5,
                    help="the CLI's --rounds; the Timer process alternates its variants as many times")
    ap.add_argument("--threads", type=int, default=0,
                    help="OMP_NUM_THREADS for the worker (and so the Timer); 0: torch's default")
    ap.add_argument("--min-run-time", type=float, default=1.0,
                    help="Timer.blocked_autorange's min_run_time per variant, seconds (split over rounds)")
    ap.add_argument("--pinning", choices=("both", *PINNINGS), default="both",
                    help="pinned: the app's pinning on both sides; unpinned: none on either "
                         "(a user's own process); both (default): each, every round")
    ap.add_argument("--nice", type=int, default=None,
                    help="on a machine other people load (root): the benchmark runs in a session "
                         "of its own whose autogroup, and every session the CLI and Timer processes "
                         "start, is at this nice (e.g. -15); the calling shell's is left as it was")
    args = ap.parse_args(argv)
    if args.rounds < 3:
        ap.error("--rounds must be at least 3")
    if args.nice is not None and os.getsid(0) != os.getpid():
        # an autogroup's nice is its session's: in the caller's session it would stay on the
        # calling shell and everything started from it later (a test run beside its own busy
        # loops then starves its workers); a session of its own keeps it to this run
        return subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv],
                              start_new_session=True).returncode
    if args.nice is not None and not raise_priority(args.nice):
        ap.error("--nice: /proc/self/autogroup cannot be written (not Linux, or not allowed)")
    import torch

    pinnings = PINNINGS if args.pinning == "both" else (args.pinning,)
    print(f"torch {torch.__version__}, {os.cpu_count()} cores, loadavg {loadavg()}, "
          f"autogroup nice {'0' if args.nice is None else args.nice}, "
          f"device {args.device}, {args.dtype}, variants {args.variants}, "
          f"{args.rounds} rounds, each: " + ", ".join(f"A (CLI, {p}) B (Timer, {p})" for p in pinnings),
          flush=True)
    variants = args.variants.split(",")
    store = Path(tempfile.mkdtemp(prefix="fidelity-runs-"))
    verdicts: list[tuple[str, bool, float]] = []
    for model in args.models.split(","):
        layers, batch, calls = MODELS[model]
        margs = argparse.Namespace(**{**vars(args), "iterations": args.iterations or calls})
        print(f"\n== {model} MLP {layers}, batch {batch}, {margs.iterations} timed calls a variant",
              flush=True)
        #: per pinning, variant and statistic: (CLI ms, Timer ms) of each round
        got: dict[str, dict[str, dict[str, list[tuple[float, float]]]]] = {
            p: {v: {s: [] for s in (*STATISTICS, "unlike")} for v in variants} for p in pinnings
        }
        for r in range(args.rounds):
            for p in (pinnings if r % 2 == 0 else pinnings[::-1]):  # neither way always first
                pair, note = one_round(layers, batch, margs, store, p == "pinned")
                for v in variants:
                    parts = []
                    for stat, (c, t) in pair[v].items():
                        got[p][v].setdefault(stat, []).append((c, t))
                        if stat in STATISTICS:
                            parts.append(f"{stat} CLI {c:8.4f} Timer {t:8.4f} ms ratio {c / t:.3f}")
                    print(f"round {r + 1} {p:8s} {v:10s} " + "   ".join(parts), flush=True)
                print(f"         {note}", flush=True)
        verdicts += summarize_model(model, variants, pinnings, got)
    print(f"\nloadavg at the end {loadavg()}")
    for label, every, med in verdicts:
        print(f"{label}: every round within ±{AGREEMENT:.0%}: {'yes' if every else 'NO'} "
              f"(median {med:.3f})")
    print(f"runs kept in {store}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
