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
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ..core.config import ConfigError, ConfigProblem, config_fields
from ..core.protocol import SHAPE_MODES
from ..jobs.shape_sweep_run import SHAPE_REPEATS
from ..jobs.sweep import SweepRunner, local_session, new_sweep, planned_configs, sweep_configs
from ..jobs.sweep_spec import DERIVED_PARAMS, SweepSpec, value_text
from ..jobs.trust import Agreement
from ..results.records.shape_record import ShapeSweepRecord
from ..results.records.sweep_load import is_shape_sweep_folder, load_shape_sweep
from ..results.records.sweep_record import FAILED, SWEEP_JSON, SweepDamaged, SweepRecord
from ..results.report.formatting import (
    fmt_ms,
    plural,
)
from ..results.report.terminal import escape_controls
from ..results.storage.sweep_store import ShapeSweepFolder, SweepFolder
from .common import (
    EXIT_BAD_CONFIG,
    EXIT_FAILED,
    add_trust_flag,
    code_agreed,
    print_problems,
)
from .config_flags import add_config_flags, config_from_args
from .job_end import report_end, run_to_end
from .sweep_show import (
    cmd_compare_any,
    default_sweep_root,
    latest_sweep,
    print_shape_sweep,
    print_sweep,
    resume_hint,
    speedup_text,
    sweep_path,
)

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
    p.add_argument(
        "--resume", type=Path, metavar="SWEEP",
        help="run the missing points of this sweep: its folder, its name, or latest (latest~1, …)",
    )
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
        "--axis", default=None, metavar="NAME:DIM",
        help="with --shape: the sizes are of axis DIM of input NAME (a keyword input such as "
        "input_ids:1, the sequence; or a positional input's index, 0:1), not the batch",
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
            text += "".join(f" · {v.variant} {speedup_text(v)}" for v in point.variants if v.variant != "eager")
        self.message(text)


class _Leave(Exception):
    """Leave the command with exit code ``code`` (why is said already)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def _refuse(problems: list[ConfigProblem]) -> _Leave:
    """The problems printed; raise the result to leave with the bad-configuration code."""
    _print_problems(problems)
    return _Leave(EXIT_BAD_CONFIG)


def _shape_flags_given(args: argparse.Namespace) -> list[str]:
    """The flags given that only a shape sweep takes."""
    return [f for f, v in (("--modes", args.modes), ("--recompile-limit", args.recompile_limit),
                           ("--repeats", args.repeats), ("--axis", args.axis)) if v is not None]


def cmd_sweep(args: argparse.Namespace) -> int:
    """``sweep``: a new sweep, or the missing points of one (``--resume``); ``--shape``: a shape sweep."""
    shape_only = _shape_flags_given(args)
    resumes_shape = args.resume is not None and is_shape_sweep_folder(args.resume)
    if args.shape or resumes_shape:
        return cmd_shape_sweep(args)
    try:
        if shape_only:
            raise _refuse([ConfigProblem(", ".join(shape_only), "go with --shape")])
        factory, concurrency = _sweep_workers(args)
        folder, agreement = _resumed_sweep(args) if args.resume is not None else _new_sweep(args)
    except _Leave as leave:
        return leave.code
    printer = PointPrinter(sys.stderr, args.quiet)
    runner = SweepRunner(
        folder, concurrency=concurrency, on_point=printer.on_point, retry_failed=args.retry_failed,
        session_factory=agreement.sessions(factory or local_session),  # the agreed copies run
    )
    _say_how_it_runs(args, folder, runner, printer)
    outcome = run_to_end(runner, "the points done")
    code = report_end(outcome, "sweep", print_sweep)
    hint = resume_hint(outcome.record, outcome.folder)
    if hint and getattr(outcome, "refused", None) is None:
        sys.stdout.write(escape_controls(hint) + "\n")
    return code


def _sweep_workers(args: argparse.Namespace) -> tuple[Any, int]:
    """Where the points run (``--target``'s session factory; None: this machine) and how many
    at once (``--concurrency``, by default the target's workers)."""
    factory: Any = None
    target_workers = 1
    if args.target:
        from ..jobs.target_sessions import session_factory
        from ..launchers.targets import TargetsFileError, load_targets

        try:
            target = load_targets().get(args.target)
            factory = session_factory(target)
        except (TargetsFileError, KeyError, ValueError) as exc:
            sys.stderr.write(f"error: --target: {exc.args[0] if exc.args else exc}\n")
            raise _Leave(EXIT_BAD_CONFIG) from None
        target_workers = target.concurrency()
    concurrency = args.concurrency if args.concurrency is not None else target_workers
    if not 1 <= concurrency <= 64:
        raise _refuse([ConfigProblem("--concurrency", "must be 1–64")])
    return factory, concurrency


def _resumed_sweep(args: argparse.Namespace) -> tuple[SweepFolder, Agreement]:
    """The sweep ``--resume`` names, opened, and the code its configs agreed to run."""
    given = _config_flags_given(args)
    if given:
        raise _refuse(
            [ConfigProblem(", ".join(given), "--resume runs the sweep as it was made; leave these out")]
        )
    latest = latest_sweep(str(args.resume))
    if isinstance(latest, str):
        sys.stderr.write(f"error: --resume {latest}\n")
        raise _Leave(EXIT_BAD_CONFIG)
    resume = latest or sweep_path(str(args.resume))
    if resume is None:
        sys.stderr.write(
            f"error: {args.resume}: not a sweep folder (it has no {SWEEP_JSON}); "
            "give a sweep folder, its name, or latest (latest~1, …)\n"
        )
        raise _Leave(EXIT_BAD_CONFIG)
    try:
        folder = SweepFolder.open(resume)
    except SweepDamaged as exc:
        sys.stderr.write(f"error: {args.resume}: {exc}\n")
        raise _Leave(EXIT_FAILED) from None
    for problem in folder.record.load_problems[:10]:
        sys.stderr.write(f"note: {problem}\n")
    agreement = code_agreed(sweep_configs(folder.record), f"the sweep {folder.path}", args, from_flags=False)
    if agreement is None:
        raise _Leave(EXIT_BAD_CONFIG)
    return folder, agreement


def _new_sweep(args: argparse.Namespace) -> tuple[SweepFolder, Agreement]:
    """A new sweep folder for the flags' parameter, values and configuration, and the code agreed
    for ``--config``."""
    if args.retry_failed:
        raise _refuse([ConfigProblem("--retry-failed", "goes with --resume")])
    if args.param is None:
        raise _refuse([ConfigProblem("--param", "name the parameter to sweep (or --resume a sweep)")])
    try:
        config = config_from_args(args)
        spec = SweepSpec.parse(args.param, args.values, args.range_text)
        spec.validate(config)
    except ConfigError as exc:
        raise _refuse(exc.problems) from None
    agreement = Agreement()
    if args.config is not None:
        agreed = code_agreed(planned_configs(spec, config), f"--config {args.config}", args)
        if agreed is None:
            raise _Leave(EXIT_BAD_CONFIG)
        agreement = agreed
    root = args.out or default_sweep_root()
    try:
        folder = new_sweep(spec, config, root)
    except ConfigError as exc:
        raise _refuse(exc.problems) from None
    except OSError as exc:
        sys.stderr.write(f"error: cannot create a sweep folder in {root}: {exc.strerror or exc}\n")
        raise _Leave(EXIT_FAILED) from None
    return folder, agreement


def _say_how_it_runs(
    args: argparse.Namespace, folder: SweepFolder, runner: SweepRunner, printer: PointPrinter
) -> None:
    """Notes ahead of the points: a concurrency that differs from the one asked or the sweep's
    own, and what a resume has left to run."""
    if args.resume is not None and folder.record.concurrency != runner.concurrency:
        printer.message(
            f"note: the sweep was run {folder.record.concurrency} at a time; resuming "
            f"{runner.concurrency} at a time (--concurrency N to choose)"
        )
    elif runner.concurrency < runner.asked_concurrency:
        printer.message(
            f"note: {plural(runner.concurrency, 'point')} at a time (this machine's cores), not {runner.asked_concurrency}"
        )
    if args.resume is not None:
        todo = runner.to_run()
        if not todo:
            printer.message("nothing to resume: every point has run")
        else:
            printer.message(f"resuming: {len(todo)} of {plural(len(folder.record.points), 'point')} to run")


# -- shape sweeps ----------------------------------------------------------------------------

def _shape_launcher(target_name: str | None) -> Any:
    """The launcher of ``--target`` (None: this machine); KeyError/ValueError saying why not."""
    if not target_name:
        return None
    from ..jobs.workers import launcher_for
    from ..launchers.targets import load_targets

    targets = load_targets()
    return launcher_for(targets.get(target_name), targets)


def cmd_shape_sweep(args: argparse.Namespace) -> int:
    """``sweep --shape``: the batch sizes in one worker per dynamic mode; a table per mode."""
    from ..jobs.shape_sweep_run import ShapeSweepRun
    from ..launchers.targets import TargetsFileError

    try:
        if args.param is not None:
            raise _refuse([ConfigProblem("--param", "a shape sweep varies the batch size: leave --param out")])
        if args.concurrency not in (None, 1) or args.retry_failed:
            raise _refuse([ConfigProblem("--concurrency, --retry-failed", "a shape sweep runs in one worker")])
        try:
            launcher = _shape_launcher(args.target)
        except (TargetsFileError, KeyError, ValueError) as exc:
            sys.stderr.write(f"error: --target: {exc.args[0] if exc.args else exc}\n")
            return EXIT_BAD_CONFIG
        folder, agreement = _resumed_shape_sweep(args) if args.resume is not None else _new_shape_sweep(args)
    except _Leave as leave:
        return leave.code
    run = ShapeSweepRun(folder, launcher=launcher, on_point=_shape_point_printer(args.quiet), pin=agreement.apply)
    return report_end(run_to_end(run, "the points done"), "shape sweep", print_shape_sweep)


def _resumed_shape_sweep(args: argparse.Namespace) -> tuple[ShapeSweepFolder, Agreement]:
    """The shape sweep ``--resume`` names, checked as it was made, and the code agreed to run."""
    from ..jobs.shape_sweep_run import shape_request

    given = _config_flags_given(args) + _shape_flags_given(args)
    if given:
        raise _refuse(
            [ConfigProblem(", ".join(given), "--resume runs the shape sweep as it was made; leave these out")]
        )
    try:
        record = load_shape_sweep(args.resume)
    except SweepDamaged as exc:
        sys.stderr.write(f"error: {args.resume}: {exc}\n")
        raise _Leave(EXIT_FAILED) from None
    folder = ShapeSweepFolder(Path(args.resume), record)
    agreement = code_agreed(record.config, f"the shape sweep {folder.path}", args, from_flags=False)
    if agreement is None:
        raise _Leave(EXIT_BAD_CONFIG)
    try:
        shape_request(
            record.config, record.batches, record.modes, record.recompile_limit, record.repeats,
            record.axis,
        )
    except ConfigError as exc:
        raise _refuse(exc.problems) from None
    return folder, agreement


def _new_shape_sweep(args: argparse.Namespace) -> tuple[ShapeSweepFolder, Agreement]:
    """A new shape-sweep folder for the flags' batch sizes, modes and configuration, and the
    code agreed for ``--config``."""
    from ..jobs.shape_sweep_run import new_shape_sweep, parse_batches, shape_request

    modes = [m.strip() for m in (args.modes or ",".join(SHAPE_MODES)).split(",") if m.strip()]
    try:
        config = config_from_args(args)
        batches = parse_batches(args.values, args.range_text)
        request = shape_request(
            config, batches, modes,
            recompile_limit=args.recompile_limit if args.recompile_limit is not None else 0,
            repeats=args.repeats if args.repeats is not None else SHAPE_REPEATS,
            axis=args.axis or "",
        )
    except ConfigError as exc:
        raise _refuse(exc.problems) from None
    agreement = Agreement()
    if args.config is not None:
        agreed = code_agreed(config, f"--config {args.config}", args)
        if agreed is None:
            raise _Leave(EXIT_BAD_CONFIG)
        agreement = agreed
    root = args.out or default_sweep_root()
    try:
        folder = new_shape_sweep(request, root)
    except OSError as exc:
        sys.stderr.write(f"error: cannot create a shape-sweep folder in {root}: {exc.strerror or exc}\n")
        raise _Leave(EXIT_FAILED) from None
    return folder, agreement


def _shape_point_printer(quiet: bool) -> Callable[[ShapeSweepRecord], None]:
    """Prints each new point of a shape sweep on stderr as it comes (quiet: failures only)."""
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

    return on_point


__all__ = ["cmd_shape_sweep", "cmd_sweep", "register"]
