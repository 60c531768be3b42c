"""Background threads of the GUI: one benchmark run, and the start-up environment probe.

Both only relay: the run is a :class:`~compile_studio.jobs.session.RunSession`,
the probe :func:`~compile_studio.jobs.workers.probe_environment`; their results
reach the GUI thread as Qt signals (queued calls). torch never enters the
GUI process.
"""

from __future__ import annotations

import threading

import numpy as np
import shiboken6
from PySide6.QtCore import QObject, QThread, Signal

from ..core import protocol
from ..core.config import BenchmarkConfig
from ..jobs.progress import Progress
from ..jobs.session import RunSession
from ..jobs.workers import (
    ProbeFailed,
    StandbyWorker,
    WorkerLauncher,
    WorkerProcess,
    probe_environment,
)
from ..results import RunResult, RunStore, summarize
from ..results.records.run_result import gpu_state_rows


def has_finished(thread: QThread, wait_ms: int = 0) -> bool:
    """Whether ``thread`` is not running, waiting up to ``wait_ms`` for it to end.

    The window deletes a benchmark thread (``deleteLater``) once it has
    finished, so a thread whose Qt object is already gone counts as finished.
    """
    if not shiboken6.isValid(thread):
        return True
    if wait_ms:
        return thread.wait(wait_ms)
    return not thread.isRunning()


class BenchmarkThread(QThread):
    """Runs one :class:`RunSession` off the GUI thread and relays its events as signals.

    The session writes the run folder (from this thread, never the GUI
    thread). :meth:`request_stop` returns at once; the stop (``stop`` line,
    then SIGTERM, then SIGKILL of the worker's process group) proceeds in the
    background and the worker is always reaped.
    """

    #: the worker's :class:`protocol.HelloEvent`
    hello = Signal(object)
    phase = Signal(str, str, int)
    samples = Signal(str, str, int, object, int)
    #: a :class:`protocol.CompiledEvent`
    compiled = Signal(object)
    #: a :class:`protocol.VariantDoneEvent`
    variant_done = Signal(object)
    warning = Signal(str)
    error = Signal(str, str, str)
    log = Signal(str)
    #: the summary rows (list[SummaryRow]), computed here after each finished variant
    summary = Signal(object)
    finished_run = Signal(object)
    #: the GPU readings (list of dicts, see results.records.run_result.GPU_STATE_COLUMNS) of one event
    gpu_state = Signal(object)
    #: a :class:`protocol.TurnEvent` of a worker on this machine: a pause (answer it with
    #: :meth:`answer_turn` once drawn) or the end of the timed calls
    turn = Signal(object)

    def __init__(
        self,
        config: BenchmarkConfig,
        store: RunStore | None,
        parent: QObject | None = None,
        launcher: WorkerLauncher | None = None,
        standby: StandbyWorker | None = None,
    ):
        super().__init__(parent)
        self.config = config
        self.session = RunSession(
            config, store, launcher=launcher, on_event=self._relay, on_log=self.log.emit,
            standby=standby, turn_taker=self._on_turn,
        )
        self.folder = self.session.folder
        self.run_id = self.session.run_id
        self.result: RunResult | None = None

    @property
    def progress(self) -> Progress:
        return self.session.progress

    @property
    def worker_pid(self) -> int | None:
        return self.session.worker_pid

    @property
    def stop_requested(self) -> bool:
        return self.session.stop_requested

    @property
    def worker_prestarted(self) -> bool:
        """Whether the run uses a worker started ahead (known once its worker is chosen)."""
        return self.session.worker_prestarted

    def request_stop(self) -> None:
        """Ask the worker to stop; escalates to SIGTERM/SIGKILL off the calling thread."""
        self.session.request_stop()

    def take_turns(self, on: bool = True) -> None:
        """Whether the worker's pauses go out through :attr:`turn` (a window draws in them and
        answers) or are answered here at once (nobody draws)."""
        self._turns_taken = on

    def _on_turn(self, event: protocol.TurnEvent) -> None:
        if getattr(self, "_turns_taken", False):
            self.turn.emit(event)
        elif event.state == "pause":
            self.session.answer_turn(event.block, None)

    def answer_turn(self, block: int, paints: list[tuple[int, int]]) -> None:
        """The window has drawn in the worker's pause before ``block``; ``paints``: its repaints."""
        self.session.answer_turn(block, paints)

    def cut_short(self, message: str) -> None:
        """End the run because the window goes away: the run is left ``incomplete``."""
        self.session.cut_short(message)

    def run(self) -> None:  # noqa: D401 - QThread entry point
        try:
            outcome = self.session.run()
            run = outcome.run
        except Exception as exc:  # noqa: BLE001 - never let the thread die silently
            self.error.emit("", str(protocol.ErrorKind.INTERNAL), f"{type(exc).__name__}: {exc}")
            recorder = self.session.recorder
            if recorder is None:
                return
            recorder.fail(f"{type(exc).__name__}: {exc}")
            run = recorder.run
        self.result = run
        try:
            self.summary.emit(summarize(run))
        except Exception as exc:  # noqa: BLE001
            self.log.emit(f"summary failed: {exc}")
        self.finished_run.emit(run)

    def _summarize(self) -> None:
        recorder = self.session.recorder
        if recorder is not None:
            self.summary.emit(summarize(recorder.run))

    def _relay(self, event: protocol.Event) -> None:
        """One session event as the matching signal (runs in this thread)."""
        if isinstance(event, protocol.SamplesEvent):
            self.samples.emit(
                event.variant,
                str(event.phase),
                event.first_iteration,
                np.asarray(event.wall_ms, dtype=np.float64),
                -1 if event.round is None else int(event.round),
            )
        elif isinstance(event, protocol.PhaseEvent):
            self.phase.emit(event.variant or "", str(event.phase), int(event.iterations or 0))
        elif isinstance(event, protocol.GpuStateEvent):
            self.gpu_state.emit(gpu_state_rows(event))
        elif isinstance(event, protocol.HelloEvent):
            self.hello.emit(event)
        elif isinstance(event, protocol.CompiledEvent):
            self.compiled.emit(event)
        elif isinstance(event, protocol.VariantDoneEvent):
            self.variant_done.emit(event)
            self._summarize()
        elif isinstance(event, protocol.WarningEvent):
            self.warning.emit(f"{event.variant}: {event.message}" if event.variant else event.message)
        elif isinstance(event, protocol.ErrorEvent):
            self.error.emit(event.variant or "", str(event.kind), event.message)
            if event.traceback:
                self.log.emit(event.traceback)
            if event.variant:
                self._summarize()


class EnvironmentProbe(QThread):
    """Asks a worker process about the machine (``worker --hello``) in the background.

    :meth:`cancel` ends the probe's process group at once (window closing).
    """

    #: the worker's :class:`protocol.HelloEvent`
    probed = Signal(object)
    failed = Signal(str)

    def __init__(
        self,
        parent: QObject | None = None,
        timeout_s: float = 120.0,
        launcher: WorkerLauncher | None = None,
    ):
        super().__init__(parent)
        self._timeout_s = timeout_s
        self._launcher = launcher
        self._worker: WorkerProcess | None = None
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()
        worker = self._worker
        if worker is not None:
            worker.kill()

    def _started(self, worker: WorkerProcess) -> None:
        self._worker = worker
        if self._cancelled.is_set():
            worker.kill()

    def run(self) -> None:  # noqa: D401 - QThread entry point
        if self._cancelled.is_set():
            return
        try:
            hello = probe_environment(self._launcher, self._timeout_s, on_start=self._started)
        except (ProbeFailed, protocol.ProtocolMismatch) as exc:
            if not self._cancelled.is_set():
                self.failed.emit(str(exc))
            return
        if not self._cancelled.is_set():
            self.probed.emit(hello)
