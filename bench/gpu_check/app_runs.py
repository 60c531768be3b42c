"""Stages 6–8, the app through real workers: in rounds, one variant after another, training.

Each run goes through a :class:`RunSession` as the CLI's does, writes its
folder into the run store and is read back from it; :mod:`.app_checks` judges
what the folder says. The results and session layers need numpy: they are
imported inside the functions, so the stages that need neither run without it.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig

from .app_checks import check_app_run, judge_clocks
from .environment import compile_threads
from .nvml import ClockSampler, Nvml
from .plan import Plan
from .processes import ProcessWatch
from .report import Report

APP_DIR = Path(__file__).resolve().parents[2] / "app"


def worker_environment() -> dict[str, str]:
    """This process's environment, with the app on ``PYTHONPATH`` and output unbuffered."""
    env = dict(os.environ)
    paths = [str(APP_DIR)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def open_store(root: Path) -> Any:
    """The run store the app runs write into."""
    from compile_studio.results import RunStore

    return RunStore(root)


def app_config(plan: Plan, device: str, **changes: Any) -> BenchmarkConfig:
    """The app-run configuration of the plan, with ``changes``."""
    base: dict[str, Any] = dict(
        layers=plan.app_layers, batch_size=plan.app_batch, dtype=plan.app_dtype, device=device,
        workload="inference", variants=list(plan.app_variants), iterations=plan.app_iterations,
        warmup=plan.app_warmup, warmup_min_ms=plan.app_warmup_min_ms, rounds=1,
        compile_cache="cold", compile_timing="in_run", label="gpu_check",
    )
    base.update(changes)
    return BenchmarkConfig(**base)


@dataclass
class AppRun:
    """One app run: its result, the processes it started, when its timed calls began."""

    run: Any
    processes: dict[str, Any]
    #: monotonic time of the first ``measure`` phase (in rounds: the start of round 1)
    measure_t: float | None
    #: the run was asked to stop by ``stop_after_s``
    stopped_by_us: bool


def run_app(
    report: Report, store: Any, tag: str, config: BenchmarkConfig,
    stop_after_s: float | None = None,
) -> AppRun:
    """Run ``config`` through a worker, as the CLI does; the run as read back from its folder.

    ``stop_after_s``: the run is asked to stop after that many seconds.
    """
    from compile_studio.jobs.session import RunSession
    from compile_studio.launchers.supervisor import WorkerLauncher
    from compile_studio.results import load_run

    config.validate()
    measure_t: list[float] = []

    def on_event(event: protocol.Event) -> None:
        if isinstance(event, protocol.WarningEvent):
            report.say(f"   warning: {event.message}")
        elif isinstance(event, protocol.ErrorEvent):
            report.say(f"   error ({event.kind}) in {event.variant or 'the run'}: {event.message}")
        elif isinstance(event, protocol.CompiledEvent):
            report.say(f"   {event.variant}: compile {event.compile_s:.2f} s ({event.compile_timing})")
        elif isinstance(event, protocol.PhaseEvent) and event.variant:
            if str(event.phase) == str(protocol.Phase.MEASURE) and not measure_t:
                measure_t.append(time.monotonic())
            report.say(f"   {event.variant}: {event.phase}  (t = {report.elapsed():.0f} s)")

    session = RunSession(
        config, store, launcher=WorkerLauncher(env=worker_environment()), on_event=on_event,
        on_log=lambda line: report.worker_line(tag, line),
    )
    watch = ProcessWatch(lambda: session.worker_pid).start()
    stopped: list[bool] = []
    timer: threading.Timer | None = None
    if stop_after_s is not None:

        def stop() -> None:
            stopped.append(True)
            session.request_stop(f"{tag}: its share of the gpu_check deadline is spent")

        timer = threading.Timer(max(0.0, stop_after_s), stop)
        timer.daemon = True
        timer.start()
    report.session_idle.clear()
    report.active_session = session
    try:
        outcome = session.run()
    finally:
        report.active_session = None
        report.session_idle.set()
        if timer is not None:
            timer.cancel()
        watch.stop()
    report.pack_runs()
    run = outcome.run if outcome.folder is None else load_run(outcome.folder)
    return AppRun(run, watch.figures(), measure_t[0] if measure_t else None, bool(stopped))


def stage_app(
    report: Report, store: Any, tag: str, config: BenchmarkConfig, cuda: bool,
    nvml: Nvml | None, figures: dict[str, Any],
) -> AppRun:
    """One app run and every check of it; the figures of the processes it started."""
    figures["config"] = config.to_dict()
    report.say(f"   {config.workload}, {config.dtype}, MLP {config.layers}, batch {config.batch_size}, "
               f"{'+'.join(config.variants)}, rounds {config.rounds}, cache {config.compile_cache}, "
               f"compile timing {config.compile_timing}")
    sampler = ClockSampler(nvml).start() if cuda and nvml is not None and config.rounds > 1 else None
    try:
        app_run = run_app(report, store, tag, config)
    finally:
        if sampler is not None:
            sampler.stop()
    record_processes(report, figures, app_run)
    check_app_run(report, tag, app_run.run, cuda, nvml, figures, config.compile_timing)
    if config.rounds > 1:
        judge_clocks(report, tag, app_run.run, cuda, app_run.measure_t, sampler)
    return app_run


def record_processes(report: Report, figures: dict[str, Any], app_run: AppRun) -> None:
    """Inductor's compile threads (here and in the worker) and the worker's processes' cores."""
    procs = app_run.processes
    figures["compile_threads"] = {"gpu_check": compile_threads(),
                                  "worker": procs.get("worker_compile_threads")}
    figures["processes"] = procs
    worker = procs.get("worker") or {}
    below = procs.get("worker_children") or []
    report.say(
        f"   worker pid {worker.get('pid', '–')} on CPUs {worker.get('cpus', '–')}; "
        f"{len(below)} process(es) below it on CPUs {', '.join(procs.get('children_cpus') or []) or '–'}; "
        f"compile threads: worker {procs.get('worker_compile_threads') or '–'}, "
        f"here {figures['compile_threads']['gpu_check']}"
    )
