"""Sweeps off the GUI thread: a :class:`~compile_studio.jobs.sweep.SweepRunner` or a shape sweep, as Qt signals.

Each is a :class:`~compile_studio.gui.job_thread.JobThread` (stop, progress,
end, failure) plus the signals of its own progress: the runner (its sessions,
the workers, the sweep folder's files) lives in the thread; the window only
receives copies of the sweep's record.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from ..core import protocol
from ..core.config import BenchmarkConfig
from ..jobs.shape_sweep_run import ShapeSweepRun
from ..jobs.sweep import SessionFactory, SweepRunner
from ..results.storage.sweep_store import ShapeSweepFolder, SweepFolder
from .job_thread import JobThread


class SweepThread(JobThread):
    """Runs the missing points of ``sweep`` and reports each change of a point."""

    what = "the sweep"

    #: a copy of the sweep's record (SweepRecord) and the index of the point that changed
    point_changed = Signal(object, int)
    #: the phase of a running point: index, variant, phase
    phase = Signal(int, str, str)

    def __init__(
        self,
        sweep: SweepFolder,
        concurrency: int = 1,
        parent: QObject | None = None,
        session_factory: SessionFactory | None = None,
        retry_failed: bool = False,
    ):
        super().__init__(parent=parent)
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

    def _relay(self, index: int, event: protocol.Event) -> None:
        if isinstance(event, protocol.PhaseEvent) and event.variant:
            self.phase.emit(index, event.variant, str(event.phase))
        elif isinstance(event, protocol.ErrorEvent):
            self.log.emit(f"[point {index + 1}] error ({event.kind}) in {event.variant or 'run'}: {event.message}")
        elif isinstance(event, protocol.WarningEvent):
            self.log.emit(f"[point {index + 1}] warning: {event.message}")


class ShapeSweepThread(JobThread):
    """Runs a shape sweep (:class:`~compile_studio.jobs.sweep.ShapeSweepRun`: one worker) off the GUI thread."""

    what = "the shape sweep"

    #: a copy of the shape sweep's record (ShapeSweepRecord) after each point
    point_changed = Signal(object)

    def __init__(
        self, folder: ShapeSweepFolder, parent: QObject | None = None,
        pin: Callable[[BenchmarkConfig], BenchmarkConfig] | None = None,
    ):
        super().__init__(parent=parent)
        self.folder = folder
        self.runner = ShapeSweepRun(folder, on_point=self.point_changed.emit, on_log=self.log.emit, pin=pin)
