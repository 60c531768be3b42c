"""``compile-studio-cli``: run benchmarks headless, show and compare saved runs.

``run`` drives the same worker process as the window and writes the same run
folder. ``show`` and ``compare`` take a run id as ``list`` prints it, a
unique prefix, ``latest``/``latest~N``, a row number of ``list`` or a path.
Exit codes: 0 done, 2 bad configuration or a run that cannot be found (every
problem listed), 3 runtime failure, 130 interrupted (the partial run is saved).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from .. import __version__
from ..core import protocol
from ..core.config import ConfigError
from ..core.protocol import RunStatus, VariantStatus
from ..jobs.kinds import job_kinds
from ..jobs.progress import Progress
from ..jobs.session import RunSession
from ..jobs.workers import ProbeFailed, probe_environment
from ..results import RunDamaged, RunResult, RunStore, summarize
from ..results.analysis.summary import flop_rate_line
from ..results.report.formatting import (
    SUMMARY_HEADERS,
    plural,
    summary_cells,
    text_table,
    unpinned_line,
    verdict_lines,
    worker_notes,
)
from ..results.report.terminal import escape_controls, guarded
from ..results.report.turns_text import turns_line
from ..results.storage.locations import default_run_store
from ..results.storage.summary_cache import summary_of
from .common import (  # noqa: F401 - shared with the other command modules, re-exported
    EXIT_BAD_CONFIG,
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    RUN_REF_HELP,
    RunNotFound,
    add_trust_flag,
    cmd_compare,
    code_agreed,
    compare_table,
    interrupts_stop,
    load_or_report,
    print_problems,
    resolve_all,
    resolve_run,
    store_folders,
)
from .config_flags import add_config_flags, config_from_args


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="compile-studio-cli",
        description="Does torch.compile make this model faster on this machine? "
        "Measure eager vs compiled, headless.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a benchmark and save it")
    run.add_argument("--config", type=Path, metavar="FILE.json", help="start from this config file")
    run.add_argument("--out", type=Path, metavar="DIR", help="run store folder (default: the app's)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--target", metavar="NAME",
        help="where the worker runs: a target of `compile-studio-cli targets` (default: this machine)",
    )
    add_trust_flag(run)
    add_config_flags(run)
    show = sub.add_parser(
        "show", help="print a saved run's summary table", epilog=RUN_REF_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    show.add_argument("run", metavar="RUN", help="run id, unique prefix, latest, latest~N, list index or path")
    show.add_argument("--out", type=Path, metavar="DIR", help="run store folder (default: the app's)")
    compare = sub.add_parser(
        "compare", help="print saved runs side by side", epilog=RUN_REF_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    compare.add_argument("runs", metavar="RUN", nargs="+", help="runs, as for show; the first is the reference")
    compare.add_argument("--out", type=Path, metavar="DIR", help="run store folder (default: the app's)")
    sub.add_parser("env", help="print what this machine and torch offer")
    sub.add_parser("list", help="list the saved runs of the run store, newest first").add_argument(
        "--out", type=Path, metavar="DIR", help="run store folder (default: the app's)"
    )
    for register in _more_commands():
        register(sub)
    return parser


def _more_commands() -> list:
    """Subcommands kept in their own modules, in their order: each registered job kind's
    (``jobs/kinds.py``) and the others'. Each ``register(sub)`` adds a parser whose defaults
    carry ``handler`` (a function of the parsed arguments)."""
    from . import targets as cli_targets
    from . import why as cli_why

    others = [(20, cli_targets.register), (25, cli_why.register)]
    kinds = [(kind.order, kind.add_command) for kind in job_kinds() if kind.cli is not None]
    return [register for _, register in sorted(kinds + others, key=lambda pair: pair[0])]


#: Lines of the worker's own output the CLI shows: what the factory and the model print on
#: their build and first calls, torch's warnings; a model printing on every call is cut short
WORKER_LINES_SHOWN = 40


class WorkerLog:
    """The worker's stderr (where what the model prints goes) on the CLI's stderr, capped."""

    def __init__(self) -> None:
        self.write: Callable[[str], None] = self._to_stderr
        self.shown = 0
        self.left_out = 0

    @staticmethod
    def _to_stderr(text: str) -> None:
        sys.stderr.write(text + "\n")

    def line(self, text: str) -> None:
        if self.shown < WORKER_LINES_SHOWN:
            self.shown += 1
            self.write(escape_controls(text.rstrip("\n")))
        else:
            self.left_out += 1

    def close(self) -> None:
        if self.left_out:
            self.write(f"(the worker wrote {self.left_out} more lines, not shown)")


class ProgressBar:
    """One line on stderr: variant, phase, progress, ETA; compile shows elapsed seconds.

    Draws what a session's :class:`Progress` says; on a terminal the line is
    redrawn in place, elsewhere one line is written per phase.
    """

    def __init__(self, progress: Progress, stream: TextIO, enabled: bool = True):
        self.progress = progress
        self.stream = stream
        self.quiet = not enabled
        self.enabled = enabled and stream.isatty()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._last_len = 0
        #: the error messages already on stderr (not repeated at the end of the run)
        self.said: set[str] = set()
        if self.enabled:
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self.draw()

    def update(self, event: protocol.Event) -> None:
        """Called after the session's progress took ``event`` in."""
        if isinstance(event, protocol.PhaseEvent) and event.phase == protocol.Phase.QUEUED:
            if not self.quiet:
                self.message(event.detail or "queued")
        elif isinstance(event, protocol.PhaseEvent) and event.variant:
            if not self.enabled and not self.quiet:
                counted = event.phase in (protocol.Phase.WARMUP, protocol.Phase.MEASURE)
                count = f" ({event.iterations} iterations)" if counted else ""
                with self._lock:
                    self.stream.write(f"{event.variant}: {event.phase}{count}\n")
                    self.stream.flush()
        elif isinstance(event, protocol.ErrorEvent) and not event.is_config_error:
            self.message(error_text(event))
            self.said.add(event.message)
        elif isinstance(event, protocol.WarningEvent):
            self.message(f"warning: {event.message}")
        self.draw()

    def message(self, text: str) -> None:
        with self._lock:
            if self.enabled:
                self._carriage_return()
                self.stream.write(" " * self._last_len)
                self._carriage_return()
            self.stream.write(text + "\n")
            self.stream.flush()

    def draw(self) -> None:
        if not self.enabled:
            return
        p = self.progress
        with self._lock:
            frac = p.fraction()
            width = 28
            bar = "#" * int(frac * width) + "." * (width - int(frac * width))
            extra = ""
            compiling = p.compile_elapsed_s()
            eta = p.eta_s()
            what = f"{p.variant} {p.phase}"
            if compiling is not None:
                extra = f"compiling {compiling:.0f}s"
            elif p.after_timing():
                what, extra = "every call timed:", f"checks, diagnostics, saving {p.after_timing_s():.0f}s"
            elif eta is not None:
                extra = f"ETA {eta:.0f}s" + (" + compiles" if p.compiles_left() else "")
            text = f"[{bar}] {frac * 100:5.1f}% {what} {extra}".rstrip()
            pad = max(0, self._last_len - len(text))
            self._carriage_return()
            self.stream.write(text + " " * pad)
            self.stream.flush()
            self._last_len = len(text)

    def _carriage_return(self) -> None:
        write = getattr(self.stream, "write_control", self.stream.write)
        write("\r")

    def close(self) -> None:
        self._stop.set()
        if self.enabled:
            self.draw()
            self.stream.write("\n")
            self.stream.flush()


def error_text(event: protocol.ErrorEvent) -> str:
    """One line for an error of a run: ``error (oom) in default: …``; a failure of the run
    itself (the worker could not start, a lost connection) names neither a kind nor a variant."""
    kind = "" if event.kind == protocol.ErrorKind.INTERNAL else f" ({event.kind})"
    where = f" in {event.variant}" if event.variant else ""
    return f"error{kind}{where}: {event.message}"


def variant_count(run: RunResult) -> str:
    """``3 variants``, saying how many of them did not run (``3 variants, 1 not run``)."""
    text = plural(len(run.variants), "variant")
    not_run = sum(1 for v in run.variants.values() if v.status == VariantStatus.NOT_RUN)
    return text + (f", {not_run} not run" if not_run else "")


def print_run(run: RunResult, out: TextIO) -> None:
    """The summary table of one run, with a one-line verdict per compiled variant."""
    out.write(f"{run.title()}  [{run.status}]\n")
    torch = run.environment.get("torch")
    parts = [
        run_where(run),
        f"torch {torch}" if torch else "",
        run.config.workload if run.config is not None else "",
        variant_count(run),
        f"run {run.run_id}",
    ]
    out.write(" · ".join(p for p in parts if p) + "\n")
    for note in run.model_notes():
        out.write(f"model: {note}\n")
    rows = summarize(run)
    out.write(text_table(SUMMARY_HEADERS, [summary_cells(r) for r in rows]) + "\n")
    for r in rows:
        if r.error:
            out.write(f"! {r.name} {r.status}: {r.error}\n")
    for line in verdict_lines(run, [r for r in rows if not r.error]):
        out.write(f"= {line}\n")
    rate = flop_rate_line(run, rows)
    if rate:
        out.write(f"{rate}\n")
    turns = turns_line(run)
    if turns:
        out.write(f"{turns}\n")
    unpinned = unpinned_line(run)
    if unpinned:
        out.write(f"{unpinned}\n")
    if run.message:
        out.write(f"note: {run.message}\n")
    for note in worker_notes(run):
        out.write(f"note: {note}\n")


def run_where(run: RunResult) -> str:
    """Where a run ran, when not on this machine: ``on HOST (target NAME), GPU …``."""
    env = run.environment
    target = env.get("target")
    if not target:
        return ""
    text = f"on {env.get('host') or '?'} (target {target})"
    names = env.get("device_names")
    device = env.get("device")
    if isinstance(names, dict) and isinstance(device, str) and device.startswith("cuda"):
        text += f", {names.get(device, device)}"
    if env.get("cuda"):
        text += f", CUDA {env.get('cuda')}"
    return text


def cmd_run(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
        config.validate()
    except ConfigError as exc:
        print_problems(exc.problems)
        return EXIT_BAD_CONFIG
    if args.config is not None:
        agreement = code_agreed(config, f"--config {args.config}", args)
        if agreement is None:
            return EXIT_BAD_CONFIG
        config = agreement.apply(config)  # the agreed copies run
    store = RunStore(args.out or default_run_store())
    progress: ProgressBar | None = None

    def on_event(event: protocol.Event) -> None:
        if progress is not None:
            progress.update(event)

    launcher = None
    if getattr(args, "target", None):
        from ..jobs.workers import launcher_for
        from ..launchers.targets import TargetsFileError

        try:
            launcher = launcher_for(args.target)
        except (TargetsFileError, KeyError, ValueError) as exc:
            sys.stderr.write(f"error: --target: {exc.args[0] if exc.args else exc}\n")
            return EXIT_BAD_CONFIG
    worker_log = WorkerLog()
    try:
        session = RunSession(
            config, store, launcher=launcher, on_event=on_event, on_log=worker_log.line
        )
    except OSError as exc:
        sys.stderr.write(f"error: cannot create a run folder in {store.root}: {exc.strerror}\n")
        return EXIT_FAILED
    progress = ProgressBar(session.progress, sys.stderr, enabled=not args.quiet)
    bar = progress
    worker_log.write = progress.message

    def on_sigint() -> None:
        bar.message("interrupted: stopping the worker, keeping what was measured…")
        session.request_stop("interrupted")

    try:
        with interrupts_stop(lambda: session.stop_requested, on_sigint):
            outcome = session.run()
    finally:
        progress.close()
        worker_log.close()
    if outcome.config_problems is not None:
        print_problems(outcome.config_problems)
        return EXIT_BAD_CONFIG
    if (
        outcome.status == RunStatus.FAILED and outcome.stderr_tail and not outcome.stop_requested
        and worker_log.left_out
    ):
        sys.stderr.write("\n".join(outcome.stderr_tail) + "\n")
    if outcome.folder is None:
        if outcome.run.message not in progress.said:
            sys.stderr.write(f"error: {outcome.run.message}\n")
        return EXIT_FAILED
    print_run(outcome.run, sys.stdout)
    if outcome.write_error:
        sys.stdout.write(
            f"not saved in full: {outcome.write_error} (the table above is from memory)\n"
        )
    else:
        sys.stdout.write(f"saved: {outcome.folder}\n")
    if outcome.stop_requested or outcome.status == RunStatus.STOPPED:
        return EXIT_INTERRUPTED
    if outcome.any_failed:
        return EXIT_FAILED
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from . import coldstart as cli_coldstart
    from . import sweep_show as cli_sweep_show

    if cli_coldstart.is_coldstart_ref(args.run):
        return cli_coldstart.show_coldstart(args.run)
    if cli_sweep_show.is_sweep_ref(args.run):
        return cli_sweep_show.show_sweep(args.run)
    paths = resolve_all([args.run], args.out)
    if paths is None:
        return EXIT_BAD_CONFIG
    run = load_or_report(paths[0], samples=False)
    if run is None:
        return EXIT_FAILED
    print_run(run, sys.stdout)
    return EXIT_OK


def cmd_env(_: argparse.Namespace) -> int:
    try:
        hello = probe_environment()
    except (ProbeFailed, protocol.ProtocolMismatch) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_FAILED
    sys.stdout.write(json.dumps(hello.environment, indent=2) + "\n")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    store = RunStore(args.out or default_run_store())
    rows = []
    for k, listing in enumerate(store.list_runs(samples=False), 1):
        if listing.run is None:
            rows.append([str(k), listing.folder.name, "damaged", "", listing.problem or ""])
            continue
        try:
            summary_of(listing.run)
        except RunDamaged as exc:
            rows.append([str(k), listing.folder.name, "damaged", "", str(exc)])
            continue
        best = listing.run.best_speedup()
        rows.append(
            [
                str(k),
                listing.folder.name,
                listing.run.status,
                "–" if best is None else f"{best:.2f}×",
                listing.run.title(),
            ]
        )
        if run_where(listing.run):
            rows[-1].append(run_where(listing.run))
    headers = ["#", "run", "status", "best", "model"]
    if any(len(r) > len(headers) for r in rows):
        headers.append("where")
        rows = [r + [""] * (len(headers) - len(r)) for r in rows]
    sys.stdout.write(f"{store.root}\n" + text_table(headers, rows, left=2) + "\n")
    sweeps = store.sweep_folders()
    if sweeps:
        names = ", ".join(f.name for f in sweeps[:3]) + (", …" if len(sweeps) > 3 else "")
        sys.stdout.write(
            f"{plural(len(sweeps), 'sweep folder')} here too ({names}): "
            "`compile-studio-cli show FOLDER` prints one\n"
        )
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {"run": cmd_run, "show": cmd_show, "compare": cmd_compare, "env": cmd_env, "list": cmd_list}
    handler = getattr(args, "handler", None) or handlers[args.command]
    try:
        with terminal_output():
            return handler(args)
    except BrokenPipeError:
        # the reader went away (``show … | head``): no traceback, the shell's SIGPIPE status
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


@contextmanager
def terminal_output() -> Iterator[None]:
    """stdout and stderr escape every control character while a command runs.

    Strings from run folders, sweeps and targets files are someone else's; none
    reaches the terminal raw (see :mod:`compile_studio.results.report.terminal`).
    """
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = guarded(sys.stdout), guarded(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


if __name__ == "__main__":
    sys.exit(main())
