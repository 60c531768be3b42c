"""``compile-studio-cli``: run benchmarks headless, show and compare saved runs.

``run`` drives the same worker process as the window and writes the same run
folder. Exit codes: 0 done, 2 bad configuration (every problem listed),
3 runtime failure, 130 interrupted (the partial run is saved).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import TextIO

from . import __version__, protocol
from .config import ConfigError, ConfigProblem
from .config_cli import add_config_flags, config_from_args
from .protocol import RunStatus
from .results import RunDamaged, RunResult, RunStore, load_run, summarize
from .results.formatting import SUMMARY_HEADERS, summary_cells, text_table
from .results.locations import default_run_store
from .session import Progress, RunSession
from .supervisor import ProbeFailed, probe_environment

EXIT_OK = 0
EXIT_BAD_CONFIG = 2
EXIT_FAILED = 3
EXIT_INTERRUPTED = 130

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
    add_config_flags(run)
    show = sub.add_parser("show", help="print a saved run's summary table")
    show.add_argument("run", type=Path, help="run folder, run.json or samples.csv")
    compare = sub.add_parser("compare", help="print saved runs side by side")
    compare.add_argument("runs", type=Path, nargs="+", help="run folders, run.json or samples.csv files")
    sub.add_parser("env", help="print what this machine and torch offer")
    sub.add_parser("list", help="list the saved runs of the run store").add_argument(
        "--out", type=Path, metavar="DIR", help="run store folder (default: the app's)"
    )
    return parser


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
        if self.enabled:
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self.draw()

    def update(self, event: protocol.Event) -> None:
        """Called after the session's progress took ``event`` in."""
        if isinstance(event, protocol.PhaseEvent) and event.variant:
            if not self.enabled and not self.quiet:
                counted = event.phase in (protocol.Phase.WARMUP, protocol.Phase.MEASURE)
                count = f" ({event.iterations} iterations)" if counted else ""
                with self._lock:
                    self.stream.write(f"{event.variant}: {event.phase}{count}\n")
                    self.stream.flush()
        elif isinstance(event, protocol.ErrorEvent) and not event.is_config_error:
            self.message(f"error ({event.kind}) in {event.variant or 'run'}: {event.message}")
        elif isinstance(event, protocol.WarningEvent):
            self.message(f"warning: {event.message}")
        self.draw()

    def message(self, text: str) -> None:
        with self._lock:
            if self.enabled:
                self.stream.write("\r" + " " * self._last_len + "\r")
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
            if compiling is not None:
                extra = f"compiling {compiling:.0f}s"
            elif eta is not None and frac < 1:
                extra = f"ETA {eta:.0f}s"
            text = f"[{bar}] {frac * 100:5.1f}% {p.variant} {p.phase} {extra}".rstrip()
            pad = max(0, self._last_len - len(text))
            self.stream.write("\r" + text + " " * pad)
            self.stream.flush()
            self._last_len = len(text)

    def close(self) -> None:
        self._stop.set()
        if self.enabled:
            self.draw()
            self.stream.write("\n")
            self.stream.flush()


def print_run(run: RunResult, out: TextIO) -> None:
    """The summary table of one run, with a one-line verdict per compiled variant."""
    out.write(f"{run.title()}  [{run.status}]\n")
    if run.environment.get("torch"):
        workload = run.config.workload if run.config is not None else ""
        out.write(
            f"torch {run.environment.get('torch')} · "
            f"{workload} · {len(run.variants)} variants · run {run.run_id}\n"
        )
    rows = summarize(run)
    out.write(text_table(SUMMARY_HEADERS, [summary_cells(r) for r in rows]) + "\n")
    for r in rows:
        if r.error:
            out.write(f"! {r.name} failed: {r.error}\n")
        elif r.name != "eager" and r.verdict:
            line = f"= {r.name}: {r.verdict_text}"
            if r.compile_s is not None and r.verdict in ("faster", "slower"):
                from .results.formatting import fmt_break_even

                be = (
                    f"pays off after {fmt_break_even(r)} calls"
                    if r.break_even_calls is not None
                    else "never pays off"
                )
                line += f"; compile {r.compile_s:.2f} s, {be}"
            out.write(line + "\n")
    if run.message:
        out.write(f"note: {run.message}\n")


def cmd_run(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
        config.validate()
    except ConfigError as exc:
        _print_problems(exc.problems)
        return EXIT_BAD_CONFIG
    store = RunStore(args.out or default_run_store())
    progress: ProgressBar | None = None

    def on_event(event: protocol.Event) -> None:
        if progress is not None:
            progress.update(event)

    try:
        session = RunSession(config, store, on_event=on_event)
    except OSError as exc:
        sys.stderr.write(f"error: cannot create a run folder in {store.root}: {exc.strerror}\n")
        return EXIT_FAILED
    progress = ProgressBar(session.progress, sys.stderr, enabled=not args.quiet)
    bar = progress

    def on_sigint(*_: object) -> None:
        if session.stop_requested:
            return
        bar.message("interrupted: stopping the worker, keeping what was measured…")
        session.request_stop("interrupted")

    old = signal.signal(signal.SIGINT, on_sigint)
    try:
        outcome = session.run()
    finally:
        progress.close()
        signal.signal(signal.SIGINT, old)
    if outcome.config_problems is not None:
        _print_problems(outcome.config_problems)
        return EXIT_BAD_CONFIG
    if outcome.status == RunStatus.FAILED and outcome.stderr_tail and not outcome.stop_requested:
        sys.stderr.write("\n".join(outcome.stderr_tail) + "\n")
    print_run(outcome.run, sys.stdout)
    sys.stdout.write(f"saved: {outcome.folder}\n")
    if outcome.stop_requested or outcome.status == RunStatus.STOPPED:
        return EXIT_INTERRUPTED
    if outcome.any_failed:
        return EXIT_FAILED
    return EXIT_OK


def _print_problems(problems: list[ConfigProblem]) -> None:
    sys.stderr.write("The configuration cannot run:\n")
    for p in problems:
        sys.stderr.write(f"  - {p.field}: {p.message}\n")


def _load(path: Path) -> RunResult | None:
    try:
        return load_run(path)
    except RunDamaged as exc:
        sys.stderr.write(f"error: {path}: {exc}\n")
        return None


def cmd_show(args: argparse.Namespace) -> int:
    run = _load(args.run)
    if run is None:
        return EXIT_FAILED
    print_run(run, sys.stdout)
    return EXIT_OK


def compare_table(runs: list[RunResult]) -> str:
    """Runs side by side: one row per (run, variant)."""
    headers = ["run", *SUMMARY_HEADERS]
    rows = []
    for k, run in enumerate(runs, 1):
        name = run.label or f"#{k} {run.run_id}"
        for r in summarize(run):
            rows.append([name[:40], *summary_cells(r)])
    legend = "\n".join(f"#{k} {run.run_id}: {run.title()} [{run.status}]" for k, run in enumerate(runs, 1))
    return legend + "\n\n" + text_table(headers, rows)


def cmd_compare(args: argparse.Namespace) -> int:
    runs = [_load(p) for p in args.runs]
    ok = [r for r in runs if r is not None]
    if not ok:
        return EXIT_FAILED
    sys.stdout.write(compare_table(ok) + "\n")
    return EXIT_OK if len(ok) == len(runs) else EXIT_FAILED


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
    for listing in store.list_runs():
        if listing.run is None:
            rows.append([listing.folder.name, "damaged", "", listing.problem or ""])
            continue
        best = listing.run.best_speedup()
        rows.append(
            [
                listing.folder.name,
                listing.run.status,
                "–" if best is None else f"{best:.2f}×",
                listing.run.title(),
            ]
        )
    sys.stdout.write(f"{store.root}\n" + text_table(["run", "status", "best", "model"], rows) + "\n")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = {"run": cmd_run, "show": cmd_show, "compare": cmd_compare, "env": cmd_env, "list": cmd_list}
    return handler[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
