"""``compile-studio-cli coldstart``: what each compiled variant costs a new program to start.

Takes the run flags (model, device, variants, …). Per round, a fresh process
per variant and start kind — cold (every compiler cache empty), warm (the
caches the cold start left), carried (a fresh cache with only the cold start's
Mega-Cache artifacts loaded) — and one for eager; prints per start kind the
time to first result and to the first fast call (median, range over rounds),
the break-even against eager and where the compile time went.
``--save-cache FILE`` keeps the artifacts to ship; ``--load-cache FILE``
carries a file made elsewhere (checked first: refused with the reason when it
cannot help). ``show FOLDER`` prints a saved job again. Exit codes as ``run``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from ..core.config import ConfigError, ConfigProblem
from ..core.protocol import START_KINDS
from ..results.records.coldstart_record import (
    PHASES,
    SUMMARY_COLUMNS,
    ColdStartRecord,
    is_coldstart_folder,
    load_coldstart,
    summarize,
    summary_rows,
)
from ..results.records.sweep_record import SweepDamaged
from ..results.report.formatting import text_table
from ..results.report.terminal import escape_controls
from ..results.storage.locations import default_data_dir
from .common import (
    EXIT_BAD_CONFIG,
    EXIT_FAILED,
    EXIT_OK,
    add_trust_flag,
    code_agreed,
    print_problems,
)
from .config_flags import add_config_flags, config_from_args
from .job_end import report_end, run_to_end


def default_coldstart_root() -> Path:
    """Where cold-start folders go by default: beside the run store (as the window keeps them)."""
    return default_data_dir() / "coldstart"


def register(sub: Any) -> None:
    """Add ``coldstart`` to the CLI's subcommands."""
    p = sub.add_parser(
        "coldstart",
        help="time to first result in fresh processes: cold, warm and carried compile caches",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--start-rounds", dest="start_rounds", type=int, default=3, metavar="N",
                   help="rounds of fresh starts (default 3); each round starts every kind once")
    p.add_argument(
        "--kinds", default=",".join(START_KINDS), metavar="K,…",
        help="start kinds among cold,warm,carried (default all; warm and carried need a cold start)",
    )
    p.add_argument("--calls", type=int, default=20, metavar="N",
                   help="calls timed per process after the first, their median its time per call (default 20)")
    p.add_argument("--save-cache", type=Path, metavar="FILE",
                   help="write the Mega-Cache artifacts of the first cold start, with the torch/Triton/device "
                   "they are valid for")
    p.add_argument("--load-cache", type=Path, metavar="FILE",
                   help="the carried starts load this file's artifacts (checked against this machine first; "
                   "loading lets torch unpickle what the file holds: only files you trust)")
    p.add_argument("--target", metavar="NAME", help="where the job runs (a target of `targets`)")
    p.add_argument("--config", type=Path, metavar="FILE.json", help="start from this config file")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help=f"folder the job's folder is made in (default: {default_coldstart_root()})")
    p.add_argument("--quiet", action="store_true", help="no per-process progress")
    add_trust_flag(p)
    add_config_flags(p)
    p.set_defaults(handler=cmd_coldstart)


def phase_text(phases: dict[str, float]) -> str:
    """``Dynamo tracing 0.4 s · C++/Triton build 22.8 s · …`` in the order of :data:`PHASES`."""
    return " · ".join(f"{k} {phases[k]:.2f} s" for k in PHASES if phases.get(k))


def print_coldstart(record: ColdStartRecord, out: TextIO) -> None:
    """The job's title, its table per start kind, the phases, and what failed."""
    out.write(escape_controls(f"Cold start: {record.title()}  [{record.status}]\n"))
    env = record.environment
    parts = [f"torch {env['torch']}" if isinstance(env.get("torch"), str) else "",
             str(env['triton']) if isinstance(env.get("triton"), str) else "",
             f"{record.rounds} rounds", f"job {record.sweep_id}"]
    out.write(escape_controls(" · ".join(p for p in parts if p) + "\n"))
    summary = summarize(record)
    out.write(escape_controls(text_table(SUMMARY_COLUMNS, summary_rows(summary), left=2)) + "\n")
    out.write("times from the process's start (imports included): median (lowest–highest over rounds); "
              "per call: the median over all the variant's processes\n")
    phased = [s for s in summary if s.phases]
    if phased:
        out.write("\nWhere the first call's time goes (median seconds):\n")
        names = [p for p in PHASES if any(s.phases.get(p) for s in phased)]
        prow = [[s.variant, s.start, *(f"{s.phases[p]:.2f}" if s.phases.get(p) else "–" for p in names)]
                for s in phased]
        out.write(escape_controls(text_table(["variant", "start", *names], prow, left=2)) + "\n")
    for s in summary:
        if s.start == "carried" and s.first_result is not None:
            out.write(escape_controls(
                f"carried {s.variant}: {s.loaded} artifacts loaded into an empty cache, "
                f"{s.cache_hits} cache hits\n"))
        for e in s.errors:
            out.write(escape_controls(f"! {s.variant} {s.start} failed: {e}\n"))
    if record.loaded_cache:
        out.write(escape_controls(f"carried: the artifacts of {record.loaded_cache}\n"))
    if record.saved_cache:
        out.write(escape_controls(f"cache artifacts saved: {record.saved_cache}\n"))
    for note in record.notes:
        out.write(escape_controls(f"note: {note}\n"))
    if record.message:
        out.write(escape_controls(f"note: {record.message}\n"))
    for problem in record.load_problems[:10]:
        out.write(escape_controls(f"note: read with a problem: {problem}\n"))


def is_coldstart_ref(ref: str) -> bool:
    """Whether ``ref`` (as ``show`` takes it) names a cold-start folder or its coldstart.json."""
    return is_coldstart_folder(Path(ref).expanduser())


def show_coldstart(ref: str) -> int:
    """``show FOLDER`` of a cold-start job: its tables (exit 3 when coldstart.json cannot be read)."""
    try:
        record = load_coldstart(Path(ref).expanduser())
    except SweepDamaged as exc:
        sys.stderr.write(escape_controls(f"error: {ref}: {exc}\n"))
        return EXIT_FAILED
    print_coldstart(record, sys.stdout)
    return EXIT_OK


def _launcher(target_name: str | None) -> Any:
    if not target_name:
        return None
    from ..jobs.workers import launcher_for
    from ..launchers.targets import load_targets

    targets = load_targets()
    return launcher_for(targets.get(target_name), targets)


def cmd_coldstart(args: argparse.Namespace) -> int:
    """``coldstart``: the job, its table, where it is kept."""
    from ..jobs.coldstart_run import ColdStartRun, coldstart_request, new_coldstart
    from ..launchers.targets import TargetsFileError
    from ..results.records.cache_file import CacheFileError, read_cache_file

    try:
        launcher = _launcher(args.target)
    except (TargetsFileError, KeyError, ValueError) as exc:
        sys.stderr.write(escape_controls(f"error: --target: {exc.args[0] if exc.args else exc}\n"))
        return EXIT_BAD_CONFIG
    kinds = [k.strip() for k in (args.kinds or "").split(",") if k.strip()]
    try:
        config = config_from_args(args)
        request = coldstart_request(config, args.start_rounds, kinds, args.calls)
    except ConfigError as exc:
        print_problems(exc.problems)
        return EXIT_BAD_CONFIG
    if args.config is not None and not code_agreed(config, f"--config {args.config}", args):
        return EXIT_BAD_CONFIG
    load = None
    if args.load_cache is not None:
        if "carried" not in request.kinds:
            print_problems([ConfigProblem("--load-cache", "goes with the carried start (--kinds …,carried)")])
            return EXIT_BAD_CONFIG
        try:
            load = (args.load_cache, read_cache_file(args.load_cache))
        except CacheFileError as exc:
            print_problems([ConfigProblem("--load-cache", str(exc))])
            return EXIT_BAD_CONFIG
    if args.save_cache is not None and request.kinds == ["carried"] and load is not None:
        print_problems([ConfigProblem("--save-cache", "needs a cold start (--kinds cold,…): the carried "
                                      "starts load the file of --load-cache instead")])
        return EXIT_BAD_CONFIG
    root = args.out or default_coldstart_root()
    try:
        folder = new_coldstart(request, root)
    except OSError as exc:
        sys.stderr.write(escape_controls(f"error: cannot create a cold-start folder in {root}: {exc.strerror or exc}\n"))
        return EXIT_FAILED
    seen = [0]

    def on_point(record: ColdStartRecord) -> None:
        for p in record.points[seen[0]:]:
            if args.quiet and not p.error:
                continue
            text = f"round {p.round + 1} · {p.variant} {p.start}: "
            text += f"failed: {p.error}" if p.error else (
                f"first result {p.first_result_s:.2f} s, first fast call {p.first_fast_s:.2f} s"
                if p.first_result_s is not None and p.first_fast_s is not None else "measured")
            sys.stderr.write(escape_controls(text + "\n"))
        seen[0] = len(record.points)

    run = ColdStartRun(folder, launcher=launcher, on_point=on_point, load_cache=load, save_cache=args.save_cache)
    return report_end(run_to_end(run, "the processes measured"), "cold-start job", print_coldstart)


__all__ = ["cmd_coldstart", "is_coldstart_ref", "print_coldstart", "register", "show_coldstart"]
