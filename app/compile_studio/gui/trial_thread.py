"""A "try it" comparison (:class:`~compile_studio.jobs.trial.TrialRunner`) run off the GUI thread.

A :class:`~compile_studio.gui.job_thread.JobThread` like the sweeps': the runner
(its sessions, the workers, the trial folder's files) lives in this thread;
the window only receives copies of the trial's record.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from ..jobs.sweep import SessionFactory
from ..jobs.trial import TrialRunner
from ..results.records.trial_record import TrialFolder
from .job_thread import JobThread


class TrialThread(JobThread):
    """Runs a comparison of a run against its suggestions; ``run_changed`` after each of its runs."""

    what = "the comparison"

    #: a copy of the trial's record (TrialRecord), the round and the role of the run that changed
    run_changed = Signal(object, int, str)

    def __init__(
        self, trial: TrialFolder, session_factory: SessionFactory | None = None, parent: QObject | None = None
    ):
        super().__init__(parent=parent)
        self.trial = trial
        self.runner = TrialRunner(trial, session_factory=session_factory, on_run=self.run_changed.emit)
