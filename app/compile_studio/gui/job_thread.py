"""Any job (:class:`~compile_studio.jobs.job.Job`) run off the GUI thread: what it reports, its end and its failure as Qt signals.

One class serves every kind — a run, a sweep, a shape sweep, a trial, a
cold-start job. The job (its sessions, workers and files) lives in this
thread; the window only receives what the job's callbacks hand to
:meth:`JobThread.relay_changed`, :meth:`JobThread.relay_event`, ``log`` and
``turn`` (copies of its record, its workers' protocol events, lines, pauses) and how it
ended. Stop and progress are the job's own (``request_stop``, ``fraction``).
"""

from __future__ import annotations

from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QThread, Signal

from ..jobs.job import Job, TakesTurns


def has_finished(thread: QThread, wait_ms: int = 0) -> bool:
    """Whether ``thread`` is not running, waiting up to ``wait_ms`` for it to end.

    The window deletes a job's thread (``deleteLater``) once it has finished,
    so a thread whose Qt object is already gone counts as finished.
    """
    if not shiboken6.isValid(thread):
        return True
    if wait_ms:
        return thread.wait(wait_ms)
    return not thread.isRunning()


class JobThread(QThread):
    """Runs ``job`` (passed in, or set as :attr:`runner` before :meth:`start`) once.

    Build the thread first, then the job with the thread's relays as its
    callbacks (they may be called from any thread; the signals reach the
    window queued, in the order they were sent).
    """

    log = Signal(str)
    #: a copy of the job's record (or a run's summary rows) after a change, and the part that
    #: changed in the kind's own words (a sweep point's index, a trial run's (round, role)) or None
    changed = Signal(object, object)
    #: the part of the job a worker's event came from (None: the job's one session) and the event
    worker_event = Signal(object, object)
    #: a pause of the job's worker on this machine (:class:`protocol.TurnEvent`): answer it with
    #: :meth:`answer_turn` once drawn; only while :meth:`take_turns` is on
    turn = Signal(object)
    #: how the job ended: what its ``run`` returned
    finished_job = Signal(object)
    #: the job raised: what happened, in words
    failed = Signal(str)

    def __init__(self, job: Job | None = None, parent: QObject | None = None, what: str = "the job"):
        super().__init__(parent)
        if job is not None:
            self.runner: Job = job
        #: how the job is named in a failure ("the sweep stopped: …")
        self.what = what
        #: what the job's ``run`` returned (its kind's outcome); None until it ends
        self.outcome: Any = None

    # -- what the job's callbacks call (from the job's thread) ------------------------------------------
    def relay_changed(self, record: object, *part: object) -> None:
        """The job's record changed (``part``: where, as the kind's callback says it)."""
        self.changed.emit(record, part[0] if len(part) == 1 else (tuple(part) or None))

    def relay_event(self, *part_and_event: object) -> None:
        """A worker's protocol event: ``(event)`` from a job of one session, ``(part, event)``
        from a job of several (a sweep's point index first)."""
        *part, event = part_and_event
        self.worker_event.emit(part[0] if part else None, event)

    # -- stop and progress: the job's ------------------------------------------------------------------
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

    # -- a worker's pauses (jobs that take turns: a run) ---------------------------------------------
    def take_turns(self, on: bool = True) -> None:
        """Whether the job's worker pauses go out through :attr:`turn` (a window draws in them
        and answers) or are answered at once; nothing for a kind that takes no turns."""
        if isinstance(self.runner, TakesTurns):
            self.runner.take_turns(on)

    def answer_turn(self, block: int, paints: list[tuple[int, int]]) -> None:
        """The window has drawn in the worker's pause before ``block``; ``paints``: its repaints."""
        if isinstance(self.runner, TakesTurns):
            self.runner.answer_turn(block, paints)

    def run(self) -> None:  # noqa: D401 - QThread entry point
        try:
            self.outcome = self.runner.run()
        except Exception as exc:  # noqa: BLE001 - never let the thread die silently
            self.failed.emit(f"{self.what} stopped: {type(exc).__name__}: {exc}")
            return
        self.finished_job.emit(self.outcome)
