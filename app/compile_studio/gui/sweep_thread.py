"""A sweep run off the GUI thread: a :class:`~compile_studio.jobs.sweep.SweepRunner` relayed as Qt signals.

As :class:`~compile_studio.gui.benchmark_thread.BenchmarkThread` does for one
run: the runner (its sessions, the workers, the sweep folder's files) lives
in this thread; the window only receives copies of the sweep's record.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QThread, Signal

from ..core import protocol
from ..jobs.shape_sweep_run import ShapeSweepOutcome, ShapeSweepRun
from ..jobs.sweep import SessionFactory, SweepOutcome, SweepRunner
from ..results.sweep_store import ShapeSweepFolder, SweepFolder


class SweepThread(QThread):
    """Runs the missing points of ``sweep`` and reports each change of a point."""

    #: a copy of the sweep's record (SweepRecord) and the index of the point that changed
    point_changed = Signal(object, int)
    #: the phase of a running point: index, variant, phase
    phase = Signal(int, str, str)
    log = Signal(str)
    #: the :class:`SweepOutcome`
    finished_sweep = Signal(object)
    failed = Signal(str)

    def __init__(
        self,
        sweep: SweepFolder,
        concurrency: int = 1,
        parent: QObject | None = None,
        session_factory: SessionFactory | None = None,
        retry_failed: bool = False,
    ):
        super().__init__(parent)
        self.sweep = sweep
        self.runner = SweepRunner(
            sweep,
            concurrency=concurrency,
            session_factory=session_factory,
            on_point=self.point_changed.emit,
            on_event=self._relay,
            on_log=lambda index, line: self.log.emit(f"[point {index + 1}] {line}"),
            retry_failed=retry_failed,
        )
        self.outcome: SweepOutcome | None = None

    @property
    def stop_requested(self) -> bool:
        return self.runner.stop_requested

    def request_stop(self, message: str | None = None) -> None:
        """Stop the sweep (the points done are kept); returns at once."""
        if message is None:
            self.runner.request_stop()
        else:
            self.runner.request_stop(message)

    def fraction(self) -> float:
        return self.runner.fraction()

    def _relay(self, index: int, event: protocol.Event) -> None:
        if isinstance(event, protocol.PhaseEvent) and event.variant:
            self.phase.emit(index, event.variant, str(event.phase))
        elif isinstance(event, protocol.ErrorEvent):
            self.log.emit(f"[point {index + 1}] error ({event.kind}) in {event.variant or 'run'}: {event.message}")
        elif isinstance(event, protocol.WarningEvent):
            self.log.emit(f"[point {index + 1}] warning: {event.message}")

    def run(self) -> None:  # noqa: D401 - QThread entry point
        try:
            self.outcome = self.runner.run()
        except Exception as exc:  # noqa: BLE001 - never let the thread die silently
            self.failed.emit(f"the sweep stopped: {type(exc).__name__}: {exc}")
            return
        self.finished_sweep.emit(self.outcome)


class ShapeSweepThread(QThread):
    """Runs a shape sweep (:class:`~compile_studio.jobs.sweep.ShapeSweepRun`: one worker) off the GUI thread."""

    #: a copy of the shape sweep's record (ShapeSweepRecord) after each point
    point_changed = Signal(object)
    log = Signal(str)
    #: the :class:`ShapeSweepOutcome`
    finished_sweep = Signal(object)
    failed = Signal(str)

    def __init__(self, folder: ShapeSweepFolder, parent: QObject | None = None):
        super().__init__(parent)
        self.folder = folder
        self.runner = ShapeSweepRun(folder, on_point=self.point_changed.emit, on_log=self.log.emit)
        self.outcome: ShapeSweepOutcome | None = None

    @property
    def stop_requested(self) -> bool:
        return self.runner.stop_requested

    def request_stop(self, message: str | None = None) -> None:
        """Stop the worker (the points so far are kept); returns at once."""
        if message is None:
            self.runner.request_stop()
        else:
            self.runner.request_stop(message)

    def fraction(self) -> float:
        return self.runner.fraction()

    def run(self) -> None:  # noqa: D401 - QThread entry point
        try:
            self.outcome = self.runner.run()
        except Exception as exc:  # noqa: BLE001 - never let the thread die silently
            self.failed.emit(f"the shape sweep stopped: {type(exc).__name__}: {exc}")
            return
        self.finished_sweep.emit(self.outcome)
