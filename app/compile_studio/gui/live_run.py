"""The live run: what the benchmark running now has reported, for the window's views to show.

:class:`LiveRun` runs a :class:`~compile_studio.jobs.run_job.RunJob` on a
:class:`~compile_studio.gui.job_thread.JobThread` (the thread every job kind
runs on), keeps what it reports (samples per variant, failed variants, summary
rows, GPU readings, the phase) and announces each change with a Qt signal; the
plots, the table and the status bar listen. It holds no widget. Progress and
the ETA are the run job's (``run_job.progress``), read when they are shown.
It also keeps a worker started ahead of the next run (:mod:`~compile_studio.gui.standby`),
from shortly after it is made until :meth:`LiveRun.close`.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import numpy as np
from PySide6.QtCore import QObject, Signal

from ..core import protocol
from ..core.config import BenchmarkConfig
from ..core.protocol import CompiledEvent, ErrorKind, Phase, RunStatus, VariantStatus
from ..jobs.progress import Progress
from ..jobs.run_job import RunJob
from ..jobs.workers import WorkerLauncher
from ..results import RunResult, RunStore, SummaryRow
from ..results.records.run_result import gpu_state_rows
from .job_thread import JobThread, has_finished
from .plots.buffers import DISPLAY_POINTS, SampleBuffer
from .run_identity import RunKeys
from .standby import AFTER_RUN_DELAY_MS, OPEN_DELAY_MS, StandbyKeeper

#: How each kind of error is said after the variant's name ("default failed to compile: …").
_ERROR_WORDS = {
    ErrorKind.OOM: "ran out of memory",
    ErrorKind.COMPILE_FAILED: "failed to compile",
    ErrorKind.BAD_CONFIG: "cannot run this configuration",
    ErrorKind.DEVICE_UNAVAILABLE: "device not available",
    ErrorKind.CRASHED: "crashed",
}
_PHASE_WORDS: dict[str, str] = {
    Phase.BUILD: "building",
    Phase.COMPILE: "compiling",
    Phase.WARMUP: "warming up",
    Phase.MEASURE: "measuring",
}
#: The status bar's word for how a run ended.
_END_WORDS = {
    RunStatus.COMPLETE: "done",
    RunStatus.STOPPED: "stopped",
    RunStatus.FAILED: "failed",
    RunStatus.INCOMPLETE: "cut short",
}
#: The phases a sample is drawn in; samples of any other phase are drawn as measured.
_PLOT_PHASES = (Phase.WARMUP, Phase.MEASURE)


class LiveRun(QObject):
    """The state of the running (or last) benchmark, with a signal for each change.

    Only one run at a time: :meth:`start` while :attr:`running` does nothing.
    The last run's id, name, samples and rows stay until the next start.
    """

    #: a run started: its id, name and variants are set, nothing is measured yet
    started = Signal()
    #: samples of one variant: (variant, iterations, wall_ms, "warmup" or "measure")
    samples = Signal(str, object, object, str, int)
    #: GPU readings (a list of dicts, as in ``gpu_state.csv``)
    gpu_state = Signal(object)
    #: a variant failed
    variant_failed = Signal(str)
    #: the summary rows changed
    summary_changed = Signal()
    #: the phase changed or a stop was asked for
    status_changed = Signal()
    #: something went wrong, in words for the user
    problem = Signal(str)
    #: a warning that does not stop the run
    warning = Signal(str)
    #: a line the worker wrote to stderr
    log_line = Signal(str)
    #: a note on the run for the log
    note = Signal(str)
    #: the worker's :class:`~compile_studio.core.protocol.HelloEvent`
    hello = Signal(object)
    #: the run ended (its RunResult)
    finished = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        #: the thread of the run going on now (its job: :attr:`run_job`)
        self.benchmark_thread: JobThread | None = None
        #: every thread started and not yet ended (a stopped one may still be finishing)
        self._threads: list[JobThread] = []
        self.run_id = ""
        #: the names of the runs shown in the window; the live run is named after its folder
        self.keys = RunKeys()
        #: the live run's name in plot and table keys (see :class:`RunKeys`)
        self.run_key = ""
        self.name = ""
        self.variants: list[str] = []
        #: per variant, the samples as drawn, by phase (decimated past DISPLAY_POINTS each)
        self._display: dict[str, dict[str, SampleBuffer]] = {}
        self.failed: set[str] = set()
        self.rows: list[SummaryRow] = []
        self.gpu_rows: list[dict[str, Any]] = []
        self._phase_text = ""
        self._compiling: str | None = None
        #: timed rounds of the run (as the worker splits its timed calls)
        self._rounds = 1
        #: what the latest samples were of: (variant, phase, round index)
        self._measuring: tuple[str, str, int] | None = None
        #: the warm-up or timed phase announced before any samples came
        self._announced = ""
        #: the running worker is on this machine (it shares its cores with the window)
        self._here = False
        #: the worker started ahead of the next run (never while a run is going on or ending)
        self.standby = StandbyKeeper(self, busy=lambda: self.running or bool(self._threads))
        self.standby.changed.connect(self._on_standby_changed)
        self.standby.schedule(OPEN_DELAY_MS)

    @property
    def chunks(self) -> dict[str, list[tuple[np.ndarray, np.ndarray, str]]]:
        """Per variant, its samples as drawn: (iterations, wall_ms, phase) per phase.

        Bounded: each phase keeps at most DISPLAY_POINTS points (min and max
        of each stretch of calls past that); every sample is in the run folder.
        """
        return {
            v: [(b.xs, b.ys, phase) for phase, b in self._display.get(v, {}).items() if b.count]
            for v in dict.fromkeys([*self.variants, *self._display])
        }

    # -- control ----------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.benchmark_thread is not None

    def running_folder(self) -> Path | None:
        """The folder of the running benchmark (None: none runs)."""
        job = self.run_job
        return job.folder if self.running and job is not None else None

    @property
    def runs_here(self) -> bool:
        """Whether the running worker is on this machine (it shares its cores with the window)."""
        return self.running and self._here

    @property
    def stop_requested(self) -> bool:
        return self.benchmark_thread is not None and self.benchmark_thread.stop_requested

    @property
    def run_job(self) -> RunJob | None:
        """The run going on now (None while none is)."""
        thread = self.benchmark_thread
        return cast(RunJob, thread.runner) if thread is not None else None

    def start(
        self, config: BenchmarkConfig, store: RunStore, launcher: WorkerLauncher | None = None
    ) -> JobThread | None:
        """Start a run of ``config`` saved in ``store``; raises OSError when its folder cannot be made."""
        if self.running:
            return None
        thread = JobThread(parent=self, what="the run")
        job = RunJob(
            config, store, launcher=launcher, on_event=thread.relay_event, on_log=thread.log.emit,
            on_summary=thread.relay_changed, on_turn=thread.turn.emit,
        )
        thread.runner = job
        standby, why_not = self.standby.take_for(config, launcher)
        job.session.standby = standby
        self.benchmark_thread = thread
        self._threads.append(thread)
        self.run_id = job.run_id
        self.run_key = self.keys.of_place(job.folder, job.run_id)
        self.name = config.label or datetime.now().strftime("%m-%d %H:%M:%S")
        self.variants = list(config.variants)
        self._display = {}
        self.failed = set()
        self.rows = []
        self.gpu_rows = []
        if standby is None:
            self._phase_text = "starting the worker…"
        elif standby.state == "taken" and standby.hello is None:
            self._phase_text = "starting a worker: importing torch…"
        else:
            self._phase_text = "worker ready: starting the run…"
        self._compiling = None
        self._rounds = max(1, min(int(config.rounds), int(config.iterations)))
        self._measuring = None
        self._announced = ""
        self._here = job.session.launcher.runs_here()
        thread.worker_event.connect(self._on_event)
        thread.log.connect(self.log_line)
        thread.changed.connect(self._on_summary)
        thread.finished_job.connect(self._on_finished_run)
        thread.finished.connect(self._on_thread_ended)
        self.started.emit()
        self.note.emit(f"run {job.run_id or '(not saved)'}: {config.to_json()}")
        if standby is not None:
            self.note.emit(f"using the worker started ahead (pid {standby.pid})")
        elif self.standby.standby is not None or why_not != "no worker was started ahead":
            self.note.emit(f"starting a new worker: {why_not}")
        thread.start()
        return thread

    def stop(self) -> None:
        """Ask the run to stop; returns at once (the stop completes in the background)."""
        thread = self.benchmark_thread
        if thread is None or thread.stop_requested:
            return
        thread.request_stop()
        self._phase_text = "stopping…"
        self.status_changed.emit()

    def close(self, reason: str, wait_ms: int) -> None:
        """End the run because the window goes away (it is kept as cut short, with ``reason``).

        Waits up to ``wait_ms`` for each thread; a worker is killed by then. The
        worker started ahead is ended at once.
        """
        self.standby.close()
        job = self.run_job
        if job is not None:
            job.cut_short(reason)
        for thread in list(self._threads):
            has_finished(thread, wait_ms)

    def rename(self, name: str) -> None:
        """The name the run is shown with (the legends' prefix, the table's run column)."""
        self.name = name

    def key(self, variant: str) -> str:
        """The plot key of ``variant`` of this run."""
        return f"{self.run_key}/{variant}"

    # -- progress -------------------------------------------------------------------------------
    @property
    def progress(self) -> Progress | None:
        """The running session's progress (None while no run is going)."""
        job = self.run_job
        return job.progress if job is not None else None

    def compile_elapsed_s(self) -> float | None:
        """Seconds into the compile going on now; None when no variant is compiling."""
        progress = self.progress
        if self._compiling is None or progress is None:
            return None
        return max(0.0, progress.compile_elapsed_s() or 0.0)

    def eta_s(self) -> float | None:
        """Seconds left in the running benchmark (compile time excluded; None when unknown)."""
        progress = self.progress
        return progress.eta_s() if progress is not None else None

    def fraction(self) -> float:
        """How much of the planned calls are done (0–1)."""
        progress = self.progress
        return progress.fraction() if progress is not None else 0.0

    def status_text(self) -> str:
        """The phase in words: what is running, the compile's elapsed time or the ETA, or how it ended.

        Once a stop was asked for it says so at once, whatever the worker is still busy with.
        Before the first run: what the worker started ahead is doing.
        """
        if self.benchmark_thread is None and not self._phase_text:
            return self.standby.describe()
        if self.stop_requested:
            busy = f" (ending {self._compiling}'s compile)" if self._compiling else ""
            return f"stopping…{busy}"
        compiling = self.compile_elapsed_s()
        if compiling is not None:
            return f"{self._compiling}: compiling… {compiling:.0f} s"
        progress = self.progress
        if progress is not None and progress.after_timing() and self.running:
            return f"every call timed: {self._finishing_words()}… {progress.after_timing_s():.0f} s"
        text = self._phase_text
        eta = self.eta_s()
        if eta is not None:
            more = " + compiles" if progress is not None and progress.compiles_left() else ""
            text += f" · ETA {format_duration(eta)}{more}"
        return text

    def _finishing_words(self) -> str:
        """What a run does after its timed calls, in words."""
        job = self.run_job
        diagnostics = job is not None and bool(getattr(job.config, "diagnostics", False))
        return ("checking outputs, collecting diagnostics (profile, graph breaks) and saving"
                if diagnostics else "checking outputs and saving")

    # -- what the thread reports ---------------------------------------------------------------------
    def _on_event(self, _part: object, event: protocol.Event) -> None:
        """One event of the run's session (in the order the worker sent them)."""
        if isinstance(event, protocol.SamplesEvent):
            self._on_samples(
                event.variant, str(event.phase), event.first_iteration,
                np.asarray(event.wall_ms, dtype=np.float64), -1 if event.round is None else int(event.round),
            )
        elif isinstance(event, protocol.PhaseEvent):
            self._on_phase(event.variant or "", str(event.phase), int(event.iterations or 0))
        elif isinstance(event, protocol.GpuStateEvent):
            self._on_gpu_state(gpu_state_rows(event))
        elif isinstance(event, protocol.HelloEvent):
            self.hello.emit(event)
        elif isinstance(event, protocol.CompiledEvent):
            self._on_compiled(event)
        elif isinstance(event, protocol.WarningEvent):
            self.warning.emit(f"{event.variant}: {event.message}" if event.variant else event.message)
        elif isinstance(event, protocol.ErrorEvent):
            self._on_error(event.variant or "", str(event.kind), event.message)
            if event.traceback:
                self.log_line.emit(event.traceback)

    def _on_phase(self, variant: str, phase: str, planned: int) -> None:
        if not variant:
            return
        self._compiling = variant if phase == Phase.COMPILE else None
        if phase in _PLOT_PHASES:
            if self._measuring is not None or self._announced == phase:
                # the worker announces the warm-up and the timed calls of every variant at
                # once, then takes them in turn: the first one announced starts, and from
                # then on the samples say which one runs (see _samples_status)
                return
            self._announced = phase
        self._phase_text = f"{variant}: {_PHASE_WORDS.get(phase, phase)}"
        self.status_changed.emit()

    def _samples_status(self, variant: str, phase: str, round_index: int) -> None:
        """The status names the variant, phase and round the latest samples were of."""
        now = (variant, phase, round_index)
        if now == self._measuring and self._compiling is None:
            return
        self._measuring = now
        if self._compiling == variant:
            self._compiling = None
        text = f"{variant}: {_PHASE_WORDS.get(phase, phase)}"
        if phase == Phase.MEASURE and round_index >= 0:
            text += f" · round {round_index + 1} of {self._rounds}"
        self._phase_text = text
        self.status_changed.emit()

    def _on_samples(
        self, variant: str, phase: str, first: int, wall_ms: np.ndarray, round_index: int = -1
    ) -> None:
        iterations = np.arange(first, first + len(wall_ms), dtype=np.float64)
        plot_phase = phase if phase in _PLOT_PHASES else str(Phase.MEASURE)
        buffers = self._display.setdefault(variant, {})
        buffer = buffers.get(plot_phase)
        if buffer is None:
            buffer = buffers[plot_phase] = SampleBuffer(max_points=DISPLAY_POINTS)
        buffer.append(iterations, np.asarray(wall_ms, dtype=np.float64))
        if self.benchmark_thread is not None and not self.stop_requested:
            self._samples_status(variant, plot_phase, round_index)
        self.samples.emit(variant, iterations, wall_ms, plot_phase, round_index)

    def _on_gpu_state(self, rows: list[dict[str, Any]]) -> None:
        self.gpu_rows.extend(rows)
        self.gpu_state.emit(rows)

    def _on_compiled(self, event: CompiledEvent) -> None:
        self.note.emit(
            f"{event.variant}: compiled in {float(event.compile_s or 0):.2f} s "
            f"({event.graphs} graph(s), {event.graph_breaks} graph break(s))"
        )
        for reason in event.break_reasons or []:
            self.note.emit(f"  graph break: {reason}")

    def _on_error(self, variant: str, kind: str, message: str) -> None:
        error_kind = ErrorKind.parse(kind, ErrorKind.INTERNAL)
        words = _ERROR_WORDS.get(error_kind, "failed")
        if variant:
            self.failed.add(variant)
            self.variant_failed.emit(variant)
            self.problem.emit(f"{variant} {words}: {message}")
        elif error_kind == ErrorKind.CRASHED:
            self.problem.emit(message)
        else:
            self.problem.emit(f"The run {words}: {message}")

    def _on_summary(self, rows: list[SummaryRow], _part: object = None) -> None:
        self.rows = list(rows)
        self.failed.update(row.name for row in rows if row.status == VariantStatus.FAILED)
        self.summary_changed.emit()

    def _on_finished_run(self, run: RunResult) -> None:
        if self.sender() is not self.benchmark_thread:
            return
        job = self.run_job
        self.benchmark_thread = None
        self._compiling = None
        if run.source is None and job is not None and job.folder is not None:
            run.source = Path(os.path.abspath(job.folder))
        status = RunStatus.parse(run.status, RunStatus.INCOMPLETE)
        self._phase_text = _END_WORDS.get(status, str(run.status))
        self.finished.emit(run)

    def _on_thread_ended(self) -> None:
        thread = self.sender()
        if thread in self._threads:
            self._threads.remove(thread)
            thread.deleteLater()
        if not self._threads and not self.running:
            # the run has fully ended (its worker reaped): the next one may start ahead now
            self.standby.schedule(AFTER_RUN_DELAY_MS)

    def _on_standby_changed(self) -> None:
        if not self.running:
            self.status_changed.emit()


def format_duration(seconds: float) -> str:
    """``"42 s"``, ``"3 min 07 s"`` or ``"2 h 05 min"``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, s = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {s:02d} s"
    hours, m = divmod(minutes, 60)
    return f"{hours} h {m:02d} min"
