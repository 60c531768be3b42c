"""``compile-studio-cli``: run benchmarks headless, show and compare saved runs.

``run`` drives the same worker process as the window and writes the same run
folder. Exit codes: 0 done, 2 bad configuration (every problem listed),
3 runtime failure, 130 interrupted (the partial run is saved).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from . import __version__, protocol
from .config import (
    ACTIVATIONS,
    CACHE_MODES,
    DTYPES,
    TIMERS,
    WORKLOADS,
    BenchmarkConfig,
    ConfigError,
    ConfigProblem,
)
from .results import RunDamaged, RunResult, RunStore, load_run, summarize
from .results.formatting import SUMMARY_HEADERS, summary_cells, text_table
from .results.locations import default_run_store
from .results.recorder import RunRecorder
from .supervisor import WorkerProcess, probe_environment

EXIT_OK = 0
EXIT_BAD_CONFIG = 2
EXIT_FAILED = 3
EXIT_INTERRUPTED = 130

_CHOICES = {
    "activation": ACTIVATIONS,
    "dtype": DTYPES,
    "workload": WORKLOADS,
    "timer": TIMERS,
    "compile_cache": CACHE_MODES,
}
_HELP = {
    "layers": "layer widths: input width, then each Linear layer's output (default 1024,1024,512,10)",
    "variants": "comma-separated: eager plus compile modes/backends (see `compile-studio-cli env`)",
    "batch_size": "rows per call",
    "iterations": "timed iterations per variant",
    "warmup": "warm-up iterations per variant (recorded, not in the stats)",
    "interleave": "measure variants in alternating blocks so drift hits all alike",
    "compile_cache": "warm: the usual Inductor cache; cold: a fresh cache for this run",
    "cold_l2": "flush the cache between iterations",
    "device": "auto, cpu, cuda, cuda:N or mps",
    "label": "a name for this run",
}


def _add_config_flags(p: argparse.ArgumentParser) -> None:
    defaults = BenchmarkConfig()
    for f in dataclasses.fields(BenchmarkConfig):
        flag = "--" + f.name.replace("_", "-")
        default = getattr(defaults, f.name)
        help_text = _HELP.get(f.name, "")
        if isinstance(default, bool):
            p.add_argument(
                flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=help_text
            )
        elif isinstance(default, int):
            p.add_argument(flag, dest=f.name, type=int, default=None, metavar="N", help=help_text)
        elif isinstance(default, list):
            p.add_argument(flag, dest=f.name, default=None, metavar="A,B", help=help_text)
        else:
            p.add_argument(
                flag, dest=f.name, default=None, choices=_CHOICES.get(f.name), help=help_text
            )


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
    _add_config_flags(run)
    show = sub.add_parser("show", help="print a saved run's summary table")
    show.add_argument("run", type=Path, help="run folder, run.json or samples.csv")
    compare = sub.add_parser("compare", help="print saved runs side by side")
    compare.add_argument("runs", type=Path, nargs="+", help="run folders, run.json or samples.csv files")
    sub.add_parser("env", help="print what this machine and torch offer")
    sub.add_parser("list", help="list the saved runs of the run store").add_argument(
        "--out", type=Path, metavar="DIR", help="run store folder (default: the app's)"
    )
    return parser


def config_from_args(args: argparse.Namespace) -> BenchmarkConfig:
    """The config: ``--config`` file (if any) overridden by each flag given."""
    data: dict[str, Any] = {}
    if args.config is not None:
        try:
            text = args.config.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                [ConfigProblem("--config", f"cannot read {args.config}: {exc.strerror}")]
            ) from None
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                [
                    ConfigProblem(
                        "--config",
                        f"{args.config} is not valid JSON (line {exc.lineno}: {exc.msg})",
                    )
                ]
            ) from None
        if isinstance(loaded, dict) and isinstance(loaded.get("config"), dict):
            loaded = loaded["config"]  # a run.json: reuse its config
        if not isinstance(loaded, dict):
            raise ConfigError([ConfigProblem("--config", f"{args.config} must hold a JSON object")])
        data.update(loaded)
    for f in dataclasses.fields(BenchmarkConfig):
        value = getattr(args, f.name, None)
        if value is None:
            continue
        if f.name == "variants":
            value = [v.strip() for v in value.split(",") if v.strip()]
        data[f.name] = value
    return BenchmarkConfig.from_dict(data)


class ProgressBar:
    """One line on stderr: variant, phase, progress, ETA; compile shows elapsed seconds."""

    def __init__(self, config: BenchmarkConfig, stream: TextIO, enabled: bool = True):
        self.stream = stream
        self.quiet = not enabled
        #: redraw one line in place on a terminal; elsewhere, one line per phase
        self.enabled = enabled and stream.isatty()
        self.total = len(config.variants) * (config.iterations + config.warmup)
        self.done = 0
        self.variant = ""
        self.phase = "starting"
        self.phase_started = time.monotonic()
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._last_len = 0
        if self.enabled:
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self.draw()

    def update(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        with self._lock:
            if kind == protocol.PHASE and event.get("variant"):
                self.variant = event["variant"]
                self.phase = event["phase"]
                self.phase_started = time.monotonic()
                if not self.enabled and not self.quiet:
                    planned = event.get("iterations")
                    count = f" ({planned} iterations)" if self.phase in ("warmup", "measure") else ""
                    self.stream.write(f"{self.variant}: {self.phase}{count}\n")
                    self.stream.flush()
            elif kind == protocol.SAMPLES:
                self.done += len(event["wall_ms"])
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
        with self._lock:
            frac = self.done / self.total if self.total else 0.0
            width = 28
            bar = "#" * int(frac * width) + "." * (width - int(frac * width))
            extra = ""
            if self.phase == "compile":
                extra = f"compiling {time.monotonic() - self.phase_started:.0f}s"
            elif self.done and frac < 1:
                elapsed = time.monotonic() - self.started
                extra = f"ETA {elapsed / frac * (1 - frac):.0f}s"
            text = f"[{bar}] {frac * 100:5.1f}% {self.variant} {self.phase} {extra}".rstrip()
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
        out.write(
            f"torch {run.environment.get('torch')} · "
            f"{run.config.get('workload', '')} · {len(run.variants)} variants · run {run.run_id}\n"
        )
    rows = summarize(run)
    out.write(text_table(SUMMARY_HEADERS, [summary_cells(r) for r in rows]) + "\n")
    for r in rows:
        if r.error:
            out.write(f"! {r.name} failed: {r.error}\n")
        elif r.name != "eager" and r.speedup is not None:
            be = (
                "never pays off (not faster)"
                if r.break_even_calls is None
                else f"pays off after {r.break_even_calls:,.0f} calls"
            )
            out.write(
                f"= {r.name}: {r.speedup:.2f}× eager, compile {r.compile_s or 0:.2f} s, {be}\n"
            )
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
    try:
        recorder = RunRecorder.in_store(store, config.to_dict(), config.slug())
    except OSError as exc:
        sys.stderr.write(f"error: cannot create a run folder in {store.root}: {exc.strerror}\n")
        return EXIT_FAILED
    progress = ProgressBar(config, sys.stderr, enabled=not args.quiet)
    bad_config: list[dict[str, str]] | None = None
    interrupted = threading.Event()
    worker = WorkerProcess(on_log=None)

    def on_sigint(*_: object) -> None:
        if interrupted.is_set():
            return
        interrupted.set()
        progress.message("interrupted: stopping the worker, keeping what was measured…")
        threading.Thread(target=worker.stop, daemon=True).start()

    old = signal.signal(signal.SIGINT, on_sigint)
    got_done = False
    try:
        worker.send_config(config.to_dict())
        for event in worker.events():
            recorder.handle(event)
            progress.update(event)
            kind = event["type"]
            if kind == protocol.ERROR:
                if event.get("kind") in ("bad_config", "device_unavailable") and not event.get(
                    "variant"
                ):
                    bad_config = event.get("problems") or [
                        {"field": "config", "message": event.get("message", "")}
                    ]
                else:
                    who = event.get("variant") or "run"
                    progress.message(f"error ({event.get('kind')}) in {who}: {event.get('message')}")
            elif kind == protocol.WARNING:
                progress.message(f"warning: {event.get('message')}")
            elif kind == protocol.DONE:
                got_done = True
        worker.wait(timeout=10)
    finally:
        worker.stop()
        progress.close()
        signal.signal(signal.SIGINT, old)
    if not got_done:
        if interrupted.is_set():
            recorder.stop("interrupted")
        else:
            recorder.fail(f"the worker process died ({worker.exit_description()})")
            tail = "\n".join(worker.stderr_tail[-10:])
            if tail:
                sys.stderr.write(tail + "\n")
    run = recorder.run
    if bad_config is not None:
        _print_problems([ConfigProblem(p["field"], p["message"]) for p in bad_config])
        return EXIT_BAD_CONFIG
    print_run(run, sys.stdout)
    sys.stdout.write(f"saved: {recorder.folder}\n")
    if interrupted.is_set() or run.status == "stopped":
        return EXIT_INTERRUPTED
    if run.status == "failed" or any(v.status == "failed" for v in run.variants.values()):
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
        name = run.config.get("label") or f"#{k} {run.run_id}"
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
    except Exception as exc:  # noqa: BLE001
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_FAILED
    sys.stdout.write(json.dumps(hello["environment"], indent=2) + "\n")
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
