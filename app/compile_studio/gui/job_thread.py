"""Any job (:class:`~compile_studio.jobs.job.Job`) run off the GUI thread: its end and its failure as Qt signals.

The job — its sessions, workers and files — lives in this thread; the window
only receives what the job's callbacks emit (copies of its record) and how it
ended. A job kind's thread is this class plus the signals of its own progress:
:class:`~compile_studio.gui.sweep_thread.SweepThread` and
:class:`~compile_studio.gui.sweep_thread.ShapeSweepThread` are two.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QThread, Signal

from ..jobs.job import Job


class JobThread(QThread):
    """Runs ``job`` (set by the subclass or passed in) once; stop and progress are the job's."""

    log = Signal(str)
    #: how the job ended: what its ``run`` returned
    finished_job = Signal(object)
    #: the job raised: what happened, in words
    failed = Signal(str)

    #: how the job is named in a failure ("the sweep stopped: …")
    what = "the job"

    def __init__(self, job: Job | None = None, parent: QObject | None = None):
        super().__init__(parent)
        if job is not None:
            self.runner: Job = job
        #: what the job's ``run`` returned (its kind's outcome); None until it ends
        self.outcome: Any = None

    @property
    def stop_requested(self) -> bool:
        return self.runner.stop_requested

    def request_stop(self, message: str | None = None) -> None:
        """Stop the job (what it measured is kept); returns at once."""
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
            self.failed.emit(f"{self.what} stopped: {type(exc).__name__}: {exc}")
            return
        self.finished_job.emit(self.outcome)
