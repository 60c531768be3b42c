"""A "Try it" comparison run: one suggestion of a run tried against the run's configuration, off the GUI thread.

The Why tab (:class:`~compile_studio.gui.why_view.WhyView`) shows; a
:class:`TrialController` runs the trial: it asks about code the user has not agreed
to run, makes the trial folder beside the run and runs its rounds (a
:class:`~compile_studio.jobs.trial.TrialRunner`) on a :class:`~compile_studio.gui.job_thread.JobThread`.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from ..core.config import ConfigError
from ..jobs.sweep import SessionFactory, local_session
from ..jobs.trial import TrialOutcome, TrialRunner, new_trial, tried_configs
from ..jobs.trust import code_of_configs
from ..results import RunResult
from ..results.records.trial_record import MIN_TRIAL_ROUNDS, RUNNING, TrialRecord
from ..results.suggestions.advice import Suggestion
from ..results.suggestions.what_to_try import verdict_summary
from .job_thread import JobThread
from .trust_dialog import CodeConsent


class TrialController(QObject):
    """Runs one trial at a time; says what it does (:attr:`note`, :attr:`status`) and when it ended."""

    #: what the trial is doing, why it did not start, or how it ended (the Why tab's note)
    note = Signal(str)
    #: what a running trial is doing, for the status bar; "" once it ended
    status = Signal(str)
    #: the trial ended (done, stopped or failed): its folder changed; :attr:`note` says how next
    ended = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        #: the comparison running (None when none)
        self.trial_thread: JobThread | None = None
        #: how each run of a comparison is started (None: a worker on this machine); tests replace it
        self.session_factory: SessionFactory | None = None
        #: the code of a run the user agreed to run (asked once per piece of code)
        self.consent = CodeConsent(parent)

    def start(self, run: RunResult, folder: Path, k: int, s: Suggestion) -> bool:
        """Start the comparison of suggestion ``s`` (number ``k``) of ``run``; whether it started."""
        if self.trial_thread is not None:
            return False
        try:
            configs = tried_configs(run, folder, [(k, s)])
        except ConfigError as exc:
            self.note.emit("Cannot try it: " + "; ".join(str(p) for p in exc.problems))
            return False
        agreement = self.consent.agreed(code_of_configs(configs), f"the run {folder.name}")
        if agreement is None:
            self.note.emit(self.consent.problem or "Not tried: the code the run names was not agreed to.")
            return False
        try:
            trial = new_trial(run, folder, [(k, s)], rounds=MIN_TRIAL_ROUNDS)
        except ConfigError as exc:
            self.note.emit("Cannot try it: " + "; ".join(str(p) for p in exc.problems))
            return False
        except OSError as exc:
            self.note.emit(f"Cannot create the trial folder beside the run: {exc}")
            return False
        factory = agreement.sessions(self.session_factory or local_session)  # the agreed copies run
        thread = JobThread(parent=self, what="the comparison")
        thread.runner = TrialRunner(trial, session_factory=factory, on_run=thread.relay_changed)
        thread.changed.connect(self._progress)
        thread.finished_job.connect(self._done)
        thread.failed.connect(self._failed)
        self.trial_thread = thread
        self._say(f"Trying {k}. {s.rule} ({s.delta_text()}): starting…")
        thread.start()
        return True

    def _say(self, text: str) -> None:
        self.note.emit(text)
        self.status.emit(text)

    def _progress(self, record: TrialRecord, run: tuple[int, str]) -> None:
        """A run of the trial started or ended: ``run`` is its round and role."""
        r, role = run
        entry = next((x for x in record.runs if x.round == r and x.role == role), None)
        s = record.suggestions[0] if record.suggestions else None
        if entry is None or s is None:
            return
        what = {"A": "A (the run's configuration)", "A2": "A again (the A/A control)"}.get(
            role, f"B ({s.delta_text()})"
        )
        state = "running…" if entry.status == RUNNING else entry.status
        self._say(f"Trying {s.index}. {s.rule}: round {r}/{record.rounds} · {what} {state}")

    def _end(self) -> None:
        self.status.emit("")
        thread, self.trial_thread = self.trial_thread, None
        if thread is not None:
            thread.wait()
            thread.deleteLater()
        self.ended.emit()

    def _done(self, outcome: TrialOutcome) -> None:
        self._end()
        said = [f"{s.index}. {s.rule}: {verdict_summary(s)}" for s in outcome.record.suggestions]
        status = outcome.record.status + (f" ({outcome.record.message})" if outcome.record.message else "")
        self.note.emit(f"Tried ({status}): " + "; ".join(said) + f" — kept in {outcome.folder}")

    def _failed(self, message: str) -> None:
        self._end()
        self.note.emit(message)

    def stop(self, wait_ms: int | None = None, message: str | None = None) -> None:
        """Stop the comparison and wait for it (up to ``wait_ms``; the rounds measured are kept).
        ``message``: why, in trial.json (default: stopped by the user)."""
        thread = self.trial_thread
        if thread is not None:
            thread.request_stop(message)
            if wait_ms is None:
                thread.wait()
            else:
                thread.wait(wait_ms)
