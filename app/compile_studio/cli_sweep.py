"""``compile-studio-cli sweep``: one parameter over a list or range of values, a run per point.

``sweep --param batch_size --values 1,4,16`` (or ``--range 1:1024:x2``) takes
the same configuration flags as ``run``; ``sweep --resume FOLDER`` runs only
the points a stopped sweep did not finish. ``show SWEEP`` prints a sweep's
table and ``compare`` takes sweeps too (see :func:`cmd_compare_any`). Exit
codes as ``run``: 0 done, 2 bad configuration, 3 a point failed, 130
interrupted (the points done are kept).
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

from .cli import (
    EXIT_BAD_CONFIG,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    interrupts_stop,
    print_problems,
)
from .config import ConfigError, ConfigProblem, config_fields
from .config_cli import add_config_flags, config_from_args
from .results import RunDamaged, RunResult, load_run
from .results.formatting import break_even_text, fmt_interval, fmt_ms, fmt_seconds, text_table
from .results.locations import default_data_dir
from .results.sweep_store import (
    FAILED,
    SWEEP_JSON,
    SweepDamaged,
    SweepFolder,
    SweepRecord,
    load_sweep,
)
from .sweep import (
    DERIVED_PARAMS,
    SweepRunner,
    SweepSpec,
    describe_points,
    new_sweep,
    value_text,
)

SWEEP_HELP = """\
Each point is a whole run (eager plus the chosen variants, as `run` does it) kept
in its own run folder inside the sweep folder, beside sweep.json and sweep.csv.

PARAM is any configuration field below that holds one value (batch_size, dtype,
dynamic, iterations, layers, transformer, …) or one of:
""" + "\n".join(f"  {name:<14}{what}" for name, what in DERIVED_PARAMS.items()) + """

Values: --values 1,4,16 (layer sizes and other comma lists: --values '64,64,8;128,128,8'),
or --range 1:1024:x2 (doubling) / --range 64:512:+64 (a step).
Stop (Ctrl+C) keeps the points done; --resume FOLDER runs only the missing ones."""


def default_sweep_root() -> Path:
    """Where sweep folders go by default: beside the run store."""
    return default_data_dir() / "sweeps"


def register(sub: Any) -> None:
    """Add ``sweep`` to the CLI's subcommands; ``compare`` learns sweep folders."""
    p = sub.add_parser(
        "sweep",
        help="run one parameter over a list or range of values (a run per point)",
        epilog=SWEEP_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--param", metavar="PARAM", help="the parameter to sweep (see below)")
    p.add_argument("--values", metavar="A,B,…", help="the values, in the order they run")
    p.add_argument("--range", dest="range_text", metavar="START:STOP:xF|+S", help="a range of whole numbers")
    p.add_argument("--resume", type=Path, metavar="SWEEP", help="run the missing points of this sweep folder")
    p.add_argument("--retry-failed", action="store_true", help="with --resume: run failed points again too")
    p.add_argument(
        "--concurrency", type=int, default=None, metavar="N",
        help="points run at once (default 1; above 1 they share this machine's cores)",
    )
    p.add_argument(
        "--target", metavar="NAME",
        help="where the points run: a target of `compile-studio-cli targets` (default: this machine); "
        "--concurrency defaults to the target's workers (Slurm: each point its own job step)",
    )
    p.add_argument("--config", type=Path, metavar="FILE.json", help="start from this config file")
    p.add_argument(
        "--out", type=Path, metavar="DIR",
        help=f"folder the sweep folder is made in (default: {default_sweep_root()})",
    )
    p.add_argument("--quiet", action="store_true", help="no per-point progress")
    add_config_flags(p)
    p.set_defaults(handler=cmd_sweep)
    compare = sub.choices.get("compare") if hasattr(sub, "choices") else None
    if compare is not None:
        compare.set_defaults(handler=cmd_compare_any)


# -- running --------------------------------------------------------------------------------

def _print_problems(problems: list[ConfigProblem]) -> None:
    print_problems(problems, "The sweep cannot run")


def _config_flags_given(args: argparse.Namespace) -> list[str]:
    given = [s.flag for s in config_fields() if getattr(args, s.name, None) is not None]
    for name, flag in (("param", "--param"), ("values", "--values"), ("range_text", "--range"), ("config", "--config")):
        if getattr(args, name, None) is not None:
            given.append(flag)
    return given


class PointPrinter:
    """One line per point as it starts and ends (stderr); quiet prints only failures."""

    def __init__(self, stream: TextIO, quiet: bool):
        self.stream = stream
        self.quiet = quiet
        self._lock = threading.Lock()
        self._seen: dict[int, str] = {}

    def message(self, text: str) -> None:
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()

    def on_point(self, record: SweepRecord, index: int) -> None:
        point = next(p for p in record.points if p.index == index)
        if self._seen.get(index) == point.status:
            return
        self._seen[index] = point.status
        if self.quiet and point.status != FAILED:
            return
        where = f"point {index + 1}/{len(record.points)} {record.param}={value_text(point.value)}"
        text = f"{where}: {point.status}"
        if point.status == FAILED:
            text += f": {point.message}"
        elif point.status == "complete":
            text += "".join(f" · {v.variant} {_speedup_text(v)}" for v in point.variants if v.variant != "eager")
        self.message(text)


def cmd_sweep(args: argparse.Namespace) -> int:
    factory: Any = None
    target_workers = 1
    if args.target:
        from .remote import session_factory
        from .targets import TargetsFileError, load_targets

        try:
            target = load_targets().get(args.target)
            factory = session_factory(target)
        except (TargetsFileError, KeyError, ValueError) as exc:
            sys.stderr.write(f"error: --target: {exc.args[0] if exc.args else exc}\n")
            return EXIT_BAD_CONFIG
        target_workers = target.concurrency()
    concurrency = args.concurrency if args.concurrency is not None else target_workers
    if not 1 <= concurrency <= 64:
        _print_problems([ConfigProblem("--concurrency", "must be 1–64")])
        return EXIT_BAD_CONFIG
    if args.resume is not None:
        given = _config_flags_given(args)
        if given:
            _print_problems(
                [ConfigProblem(", ".join(given), "--resume runs the sweep as it was made; leave these out")]
            )
            return EXIT_BAD_CONFIG
        if sweep_path(str(args.resume)) is None:
            sys.stderr.write(f"error: {args.resume}: not a sweep folder (it has no {SWEEP_JSON})\n")
            return EXIT_BAD_CONFIG
        try:
            folder = SweepFolder.open(sweep_path(str(args.resume)) or args.resume)
        except SweepDamaged as exc:
            sys.stderr.write(f"error: {args.resume}: {exc}\n")
            return EXIT_FAILED
        for problem in folder.record.load_problems[:10]:
            sys.stderr.write(f"note: {problem}\n")
    else:
        if args.retry_failed:
            _print_problems([ConfigProblem("--retry-failed", "goes with --resume")])
            return EXIT_BAD_CONFIG
        if args.param is None:
            _print_problems([ConfigProblem("--param", "name the parameter to sweep (or --resume a sweep)")])
            return EXIT_BAD_CONFIG
        try:
            config = config_from_args(args)
            spec = SweepSpec.parse(args.param, args.values, args.range_text)
            spec.validate(config)
        except ConfigError as exc:
            _print_problems(exc.problems)
            return EXIT_BAD_CONFIG
        root = args.out or default_sweep_root()
        try:
            folder = new_sweep(spec, config, root)
        except ConfigError as exc:
            _print_problems(exc.problems)
            return EXIT_BAD_CONFIG
        except OSError as exc:
            sys.stderr.write(f"error: cannot create a sweep folder in {root}: {exc.strerror or exc}\n")
            return EXIT_FAILED
    printer = PointPrinter(sys.stderr, args.quiet)
    runner = SweepRunner(
        folder, concurrency=concurrency, on_point=printer.on_point, retry_failed=args.retry_failed,
        **({"session_factory": factory} if factory is not None else {}),
    )
    if args.resume is not None:
        todo = runner.to_run()
        if not todo:
            printer.message("nothing to resume: every point has run")
        else:
            printer.message(f"resuming: {len(todo)} of {len(folder.record.points)} points to run")

    def on_signal() -> None:
        printer.message("interrupted: stopping, keeping the points done…")
        runner.request_stop("interrupted")

    with interrupts_stop(lambda: runner.stop_requested, on_signal):
        outcome = runner.run()
    if outcome.refused is not None:
        _print_problems(outcome.refused)
        sys.stderr.write(f"the sweep is kept in {outcome.folder}\n")
        return EXIT_BAD_CONFIG
    print_sweep(outcome.record, sys.stdout)
    if outcome.write_error:
        sys.stdout.write(f"not saved in full: {outcome.write_error}\n")
    else:
        sys.stdout.write(f"saved: {outcome.folder}\n")
    if outcome.stop_requested:
        return EXIT_INTERRUPTED
    if outcome.failed or outcome.write_error:
        return EXIT_FAILED
    return EXIT_OK


# -- tables ----------------------------------------------------------------------------------

def _speedup_text(v: Any) -> str:
    if v.speedup is None or not math.isfinite(v.speedup):
        return "–"
    return fmt_interval(v.variant, v.speedup, v.speedup_lo, v.speedup_hi)


def _break_even_text(v: Any) -> str:
    """As the run table shows it: only for a variant found faster; ``never`` when slower."""
    return break_even_text(v.variant, v.compile_s, v.verdict, v.break_even_calls)


def _correct_text(v: Any) -> str:
    return "–" if v.allclose is None else ("yes" if v.allclose else "NO")


def _count(v: int | None) -> str:
    return "–" if v is None else str(v)


SWEEP_HEADERS = [
    "variant", "status", "median ms", "p95 ms", "speedup [95% CI]", "verdict", "compile s",
    "break-even calls", "TFLOP/s", "correct", "recompiles",
]


def sweep_rows(record: SweepRecord) -> list[list[str]]:
    """The table of a sweep: one row per point × variant; a point not run yet has one row."""
    rows = []
    for p in record.points:
        value = value_text(p.value)
        if not p.variants:
            rows.append([value, "–", p.status, *["–"] * (len(SWEEP_HEADERS) - 2)])
            continue
        for v in p.variants:
            status = "not run" if v.status == "not_run" else v.status
            rows.append(
                [
                    value,
                    v.variant,
                    status,
                    fmt_ms(v.median_ms),
                    fmt_ms(v.p95_ms),
                    _speedup_text(v),
                    v.verdict or "–",
                    fmt_seconds(v.compile_s),
                    _break_even_text(v),
                    "–" if v.tflops is None else f"{v.tflops:.3g}",
                    _correct_text(v),
                    _count(v.recompiles),
                ]
            )
    return rows


def print_sweep(record: SweepRecord, out: TextIO) -> None:
    """A sweep's title, its table, and what failed."""
    out.write(f"Sweep: {record.title()}  [{record.status}]\n")
    env = record.environment
    parts = [f"torch {env['torch']}" if isinstance(env.get("torch"), str) else "",
             record.config.workload, describe_points(record), f"sweep {record.sweep_id}"]
    out.write(" · ".join(p for p in parts if p) + "\n")
    out.write(text_table([record.param, *SWEEP_HEADERS], sweep_rows(record), left=3) + "\n")
    for p in record.points:
        if p.status == FAILED:
            out.write(f"! {record.param}={value_text(p.value)} failed: {p.message}\n")
    if record.message:
        out.write(f"note: {record.message}\n")
    for problem in record.load_problems[:10]:
        out.write(f"note: read with a problem: {problem}\n")


def sweep_path(ref: str) -> Path | None:
    """The sweep folder ``ref`` names: a sweep folder, its sweep.json, or a sweep's name in the
    default sweeps folder; None when it names none (it may then be a run)."""
    from .results.sweep_store import is_sweep_folder, sweep_folder_of

    path = Path(ref).expanduser()
    if is_sweep_folder(path):
        return sweep_folder_of(path)
    if "/" not in ref and ref not in ("", ".", ".."):
        named = default_sweep_root() / ref
        if is_sweep_folder(named):
            return named
    return None


def is_sweep_ref(ref: str) -> bool:
    """Whether ``ref`` (as ``show`` takes it) names a sweep rather than a run."""
    return sweep_path(ref) is not None


def show_sweep(ref: str) -> int:
    """``show SWEEP``: the sweep's table (exit 3 when its sweep.json cannot be read)."""
    path = sweep_path(ref) or Path(ref)
    try:
        record = load_sweep(path)
    except SweepDamaged as exc:
        sys.stderr.write(f"error: {ref}: {exc}\n")
        return EXIT_FAILED
    print_sweep(record, sys.stdout)
    return EXIT_OK


# -- compare ---------------------------------------------------------------------------------

def _point_runs(path: Path, record: SweepRecord) -> tuple[list[RunResult], list[str]]:
    runs, problems = [], []
    for p in record.points:
        if not p.run:
            continue
        try:
            runs.append(load_run(path / p.run))
        except RunDamaged as exc:
            problems.append(f"{record.param}={value_text(p.value)}: {exc}")
    return runs, problems


def compare_sweeps(records: list[SweepRecord]) -> str:
    """Sweeps side by side: per value and variant, each sweep's median and speedup."""
    headers = ["value", "variant"]
    for k in range(1, len(records) + 1):
        headers += [f"#{k} median ms", f"#{k} speedup"]
    keys: list[tuple[str, str]] = []
    cells: dict[tuple[str, str], dict[int, Any]] = {}
    for k, record in enumerate(records):
        for p in record.points:
            for v in p.variants:
                key = (value_text(p.value), v.variant)
                if key not in cells:
                    keys.append(key)
                    cells[key] = {}
                cells[key][k] = v
    rows = []
    for key in keys:
        row = list(key)
        for k in range(len(records)):
            cell = cells[key].get(k)
            row += [fmt_ms(cell.median_ms), _speedup_text(cell)] if cell is not None else ["–", "–"]
        rows.append(row)
    legend = "\n".join(
        f"#{k} {r.sweep_id}: {r.title()} [{r.status}]" for k, r in enumerate(records, 1)
    )
    return legend + "\n\n" + text_table(headers, rows, left=2)


def cmd_compare_any(args: argparse.Namespace) -> int:
    """``compare``: runs as before; one sweep compares its points' runs; several sweeps side by side."""
    from . import cli

    paths = [sweep_path(ref) for ref in args.runs]
    if not any(paths):
        return cli.cmd_compare(args)
    if not all(paths):
        sys.stderr.write("error: compare takes runs or sweeps, not both\n")
        return EXIT_BAD_CONFIG
    records = []
    for ref, path in zip(args.runs, paths):
        assert path is not None
        try:
            records.append((path, load_sweep(path)))
        except SweepDamaged as exc:
            sys.stderr.write(f"error: {ref}: {exc}\n")
            return EXIT_FAILED
    if len(records) == 1:
        path, record = records[0]
        runs, problems = _point_runs(path, record)
        for problem in problems:
            sys.stderr.write(f"error: {problem}\n")
        if not runs:
            sys.stderr.write(f"error: {path}: no point of this sweep has run yet\n")
            return EXIT_FAILED
        sys.stdout.write(f"Sweep: {record.title()}\n")
        sys.stdout.write(cli.compare_table(runs) + "\n")
        return EXIT_FAILED if problems else EXIT_OK
    sys.stdout.write(compare_sweeps([r for _, r in records]) + "\n")
    return EXIT_OK


__all__ = [
    "cmd_compare_any",
    "cmd_sweep",
    "compare_sweeps",
    "default_sweep_root",
    "is_sweep_ref",
    "print_sweep",
    "register",
    "show_sweep",
    "sweep_rows",
]
