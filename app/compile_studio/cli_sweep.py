"""``compile-studio-cli sweep``: one parameter over a list or range of values, a run per point.

``sweep --param batch_size --values 1,4,16`` (or ``--range 1:1024:x2``) takes
the same configuration flags as ``run``; ``sweep --resume FOLDER`` runs only
the points a stopped sweep did not finish. ``show SWEEP`` prints a sweep's
table and ``compare`` takes sweeps too (see :func:`cmd_compare_any`).
``sweep --shape --values 1,2,4,8`` is a shape sweep: one worker calls each
compiled variant at each batch size in turn, for dynamic=false, auto and
true, and prints the recompiles and compile time each batch size caused. Exit
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

from .cli_common import (
    EXIT_BAD_CONFIG,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    add_trust_flag,
    cmd_compare,
    code_agreed,
    compare_table,
    interrupts_stop,
    print_problems,
)
from .config import ConfigError, ConfigProblem, config_fields
from .config_cli import add_config_flags, config_from_args
from .protocol import SHAPE_MODES
from .results import RunDamaged, RunResult, load_run
from .results.formatting import (
    break_even_text,
    fmt_interval,
    fmt_ms,
    fmt_seconds,
    rough_speedup_header,
    rough_speedup_text,
    text_table,
)
from .results.locations import default_data_dir
from .results.sweep_store import (
    FAILED,
    SWEEP_JSON,
    ShapeSweepFolder,
    ShapeSweepRecord,
    SweepDamaged,
    SweepFolder,
    SweepRecord,
    is_shape_sweep_folder,
    load_shape_sweep,
    load_sweep,
)
from .shape_sweep_run import SHAPE_REPEATS
from .sweep import SweepRunner, new_sweep
from .sweep_spec import DERIVED_PARAMS, SweepSpec, describe_points, value_text

SWEEP_HELP = """\
Each point is a whole run (eager plus the chosen variants, as `run` does it) kept
in its own run folder inside the sweep folder, beside sweep.json and sweep.csv.

PARAM is any configuration field below that holds one value (batch_size, dtype,
dynamic, iterations, layers, transformer, …) or one of:
""" + "\n".join(f"  {name:<14}{what}" for name, what in DERIVED_PARAMS.items()) + """

Values: --values 1,4,16 (layer sizes and other comma lists: --values '64,64,8;128,128,8'),
or --range 1:1024:x2 (doubling) / --range 64:512:+64 (a step).
Stop (Ctrl+C) keeps the points done; --resume FOLDER runs only the missing ones.

Shape sweep: --shape --values 1,2,4,8,16 (or a --range) with the run flags. One
worker calls each compiled variant at each batch size in turn, once per dynamic
mode (--modes false,auto,true), and prints per mode the compile (or recompile)
ms and the recompiles each batch size caused, and a warning line where Dynamo
hit its recompile limit (--recompile-limit N lowers it) and ran eager from there
on. Saved as shape_sweep.json and shape_sweep.csv; `show` and --resume take it."""


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
    add_trust_flag(p)
    shape = p.add_argument_group("shape sweep")
    shape.add_argument(
        "--shape", action="store_true",
        help="a shape sweep: the batch sizes of --values/--range in one worker, per dynamic mode",
    )
    shape.add_argument(
        "--modes", metavar="M,M", default=None,
        help="with --shape: the dynamic modes compared (default false,auto,true)",
    )
    shape.add_argument(
        "--recompile-limit", type=int, default=None, metavar="N",
        help="with --shape: Dynamo's recompile limit in the worker (default: torch's own)",
    )
    shape.add_argument(
        "--repeats", type=int, default=None, metavar="N",
        help="with --shape: timed calls per point, their median reported (default 5)",
    )
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
    shape_only = [f for f, v in (("--modes", args.modes), ("--recompile-limit", args.recompile_limit),
                                 ("--repeats", args.repeats)) if v is not None]
    resumes_shape = args.resume is not None and is_shape_sweep_folder(args.resume)
    if args.shape or resumes_shape:
        return cmd_shape_sweep(args)
    if shape_only:
        _print_problems([ConfigProblem(", ".join(shape_only), "go with --shape")])
        return EXIT_BAD_CONFIG
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
        if not code_agreed(folder.record.config, f"the sweep {folder.path}", args, from_flags=False):
            return EXIT_BAD_CONFIG
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
        if args.config is not None and not code_agreed(config, f"--config {args.config}", args):
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
    if args.resume is not None and folder.record.concurrency != runner.concurrency:
        printer.message(
            f"note: the sweep was run {folder.record.concurrency} at a time; resuming "
            f"{runner.concurrency} at a time (--concurrency N to choose)"
        )
    elif runner.concurrency < runner.asked_concurrency:
        printer.message(
            f"note: {runner.concurrency} points at a time (this machine's cores), not {runner.asked_concurrency}"
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
    if is_shape_sweep_folder(path):
        return path.parent if path.is_file() else path
    if "/" not in ref and ref not in ("", ".", ".."):
        named = default_sweep_root() / ref
        if is_sweep_folder(named) or is_shape_sweep_folder(named):
            return named
    return None


def is_sweep_ref(ref: str) -> bool:
    """Whether ``ref`` (as ``show`` takes it) names a sweep rather than a run."""
    return sweep_path(ref) is not None


def show_sweep(ref: str) -> int:
    """``show SWEEP``: the sweep's table (exit 3 when its sweep.json cannot be read); a shape
    sweep's tables per mode."""
    path = sweep_path(ref) or Path(ref)
    if is_shape_sweep_folder(path):
        try:
            shape = load_shape_sweep(path)
        except SweepDamaged as exc:
            sys.stderr.write(f"error: {ref}: {exc}\n")
            return EXIT_FAILED
        print_shape_sweep(shape, sys.stdout)
        return EXIT_OK
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
    paths = [sweep_path(ref) for ref in args.runs]
    if not any(paths):
        return cmd_compare(args)
    if not all(paths):
        sys.stderr.write("error: compare takes runs or sweeps, not both\n")
        return EXIT_BAD_CONFIG
    records = []
    for ref, path in zip(args.runs, paths):
        assert path is not None
        if is_shape_sweep_folder(path):
            sys.stderr.write(f"error: {ref} is a shape sweep: `show` prints its tables\n")
            return EXIT_BAD_CONFIG
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
        sys.stdout.write(compare_table(runs) + "\n")
        return EXIT_FAILED if problems else EXIT_OK
    sys.stdout.write(compare_sweeps([r for _, r in records]) + "\n")
    return EXIT_OK


__all__ = [
    "cmd_compare_any",
    "cmd_shape_sweep",
    "cmd_sweep",
    "compare_sweeps",
    "default_sweep_root",
    "is_sweep_ref",
    "print_shape_sweep",
    "print_sweep",
    "register",
    "show_sweep",
    "sweep_rows",
]


# -- shape sweeps ----------------------------------------------------------------------------

def _shape_launcher(target_name: str | None) -> Any:
    """The launcher of ``--target`` (None: this machine); KeyError/ValueError saying why not."""
    if not target_name:
        return None
    from .remote import launcher_for
    from .targets import load_targets

    targets = load_targets()
    return launcher_for(targets.get(target_name), targets)


def cmd_shape_sweep(args: argparse.Namespace) -> int:
    """``sweep --shape``: the batch sizes in one worker per dynamic mode; a table per mode."""
    from .shape_sweep_run import ShapeSweepRun, new_shape_sweep, parse_batches, shape_request
    from .targets import TargetsFileError

    if args.param is not None:
        _print_problems([ConfigProblem("--param", "a shape sweep varies the batch size: leave --param out")])
        return EXIT_BAD_CONFIG
    if args.concurrency not in (None, 1) or args.retry_failed:
        _print_problems([ConfigProblem("--concurrency, --retry-failed", "a shape sweep runs in one worker")])
        return EXIT_BAD_CONFIG
    try:
        launcher = _shape_launcher(args.target)
    except (TargetsFileError, KeyError, ValueError) as exc:
        sys.stderr.write(f"error: --target: {exc.args[0] if exc.args else exc}\n")
        return EXIT_BAD_CONFIG
    if args.resume is not None:
        given = _config_flags_given(args)
        given += [f for f, v in (("--modes", args.modes), ("--recompile-limit", args.recompile_limit),
                                 ("--repeats", args.repeats)) if v is not None]
        if given:
            _print_problems(
                [ConfigProblem(", ".join(given), "--resume runs the shape sweep as it was made; leave these out")]
            )
            return EXIT_BAD_CONFIG
        try:
            record = load_shape_sweep(args.resume)
        except SweepDamaged as exc:
            sys.stderr.write(f"error: {args.resume}: {exc}\n")
            return EXIT_FAILED
        folder = ShapeSweepFolder(Path(args.resume), record)
        if not code_agreed(record.config, f"the shape sweep {folder.path}", args, from_flags=False):
            return EXIT_BAD_CONFIG
        try:
            shape_request(record.config, record.batches, record.modes, record.recompile_limit, record.repeats)
        except ConfigError as exc:
            _print_problems(exc.problems)
            return EXIT_BAD_CONFIG
    else:
        modes = [m.strip() for m in (args.modes or ",".join(SHAPE_MODES)).split(",") if m.strip()]
        try:
            config = config_from_args(args)
            batches = parse_batches(args.values, args.range_text)
            request = shape_request(
                config, batches, modes,
                recompile_limit=args.recompile_limit if args.recompile_limit is not None else 0,
                repeats=args.repeats if args.repeats is not None else SHAPE_REPEATS,
            )
        except ConfigError as exc:
            _print_problems(exc.problems)
            return EXIT_BAD_CONFIG
        if args.config is not None and not code_agreed(config, f"--config {args.config}", args):
            return EXIT_BAD_CONFIG
        root = args.out or default_sweep_root()
        try:
            folder = new_shape_sweep(request, root)
        except OSError as exc:
            sys.stderr.write(f"error: cannot create a shape-sweep folder in {root}: {exc.strerror or exc}\n")
            return EXIT_FAILED
    quiet = args.quiet
    seen = [0]

    def on_point(record: ShapeSweepRecord) -> None:
        for p in record.points[seen[0]:]:
            if quiet and not p.error:
                continue
            what = "eager" if p.mode == "eager" else f"{p.variant} dynamic={p.mode}"
            text = f"batch {p.batch} · {what}: "
            text += f"failed: {p.error}" if p.error else (
                f"first call {fmt_ms(p.first_call_ms)} ms, {p.recompiles} recompiles"
                + (" · hit the recompile limit" if p.limit_hit else "")
            )
            sys.stderr.write(text + "\n")
        seen[0] = len(record.points)

    run = ShapeSweepRun(folder, launcher=launcher, on_point=on_point)

    def on_signal() -> None:
        sys.stderr.write("interrupted: stopping, keeping the points done…\n")
        run.request_stop("interrupted")

    with interrupts_stop(lambda: run.stop_requested, on_signal):
        outcome = run.run()
    if outcome.refused is not None:
        _print_problems(outcome.refused)
        sys.stderr.write(f"the shape sweep is kept in {outcome.folder}\n")
        return EXIT_BAD_CONFIG
    print_shape_sweep(outcome.record, sys.stdout)
    if outcome.write_error:
        sys.stdout.write(f"not saved in full: {outcome.write_error}\n")
    else:
        sys.stdout.write(f"saved: {outcome.folder}\n")
    if outcome.stop_requested:
        return EXIT_INTERRUPTED
    if outcome.failed or outcome.write_error:
        return EXIT_FAILED
    return EXIT_OK


SHAPE_HEADERS = ["batch", "first call ms", "recompiles", "eager?", "median ms", "eager ms", "speedup", "correct"]


def shape_headers(record: ShapeSweepRecord) -> list[str]:
    """The columns of a series' table; the speedup's says it is rough and from how many calls."""
    return [rough_speedup_header(record.repeats) if h == "speedup" else h for h in SHAPE_HEADERS]


def shape_rows(record: ShapeSweepRecord, variant: str, mode: str) -> list[list[str]]:
    """One series' table: a row per batch size (eager ms: eager timed beside the variant at that batch)."""
    rows = []
    for p in record.points_of(variant, mode):
        if p.error:
            rows.append([str(p.batch), "failed", "–", "–", "–", fmt_ms(p.eager_ms), "–", p.error[:60]])
            continue
        fell = "limit hit" if p.limit_hit else ("yes" if p.fell_back else "no")
        rows.append([
            str(p.batch),
            fmt_ms(p.first_call_ms),
            str(p.recompiles),
            fell,
            fmt_ms(p.median_ms),
            fmt_ms(p.eager_ms),
            rough_speedup_text(p.speedup, p.timed_calls if p.timed_calls is not None else record.repeats),
            "–" if p.correct is None else ("yes" if p.correct else "NO"),
        ])
    return rows


def print_shape_sweep(record: ShapeSweepRecord, out: TextIO) -> None:
    """A shape sweep's title, a table per mode (and variant), and the recompile-limit warnings."""
    out.write(f"Shape sweep: {record.title()}  [{record.status}]\n")
    env = record.environment
    limit = f"recompile limit {record.recompile_limit}" if record.recompile_limit else ""
    parts = [f"torch {env['torch']}" if isinstance(env.get("torch"), str) else "",
             record.config.workload, f"{record.repeats} timed calls per point", limit, f"sweep {record.sweep_id}"]
    out.write(" · ".join(p for p in parts if p) + "\n")
    for variant, mode in record.series():
        points = record.points_of(variant, mode)
        total = sum(p.recompiles for p in points)
        out.write(f"\n{variant} · dynamic={mode} · {total} recompiles over {len(points)} batch sizes\n")
        out.write(text_table(shape_headers(record), shape_rows(record, variant, mode), left=1) + "\n")
    if not record.series():
        out.write("\nno compiled point has run yet\n")
    for warning in record.warnings():
        out.write(f"warning: {warning}\n")
    if record.message:
        out.write(f"note: {record.message}\n")
    for problem in record.load_problems[:10]:
        out.write(f"note: read with a problem: {problem}\n")
