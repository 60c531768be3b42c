"""What every kind of job — a run, a sweep, a shape sweep, a trial, a cold-start job — offers its front ends: run, stop, progress.

A job kind is a class with this shape (:class:`Job`); the window runs any of
them on one thread class (``gui/job_thread.py``) and the CLI waits on any of
them the same way. :class:`StopSwitch` is the stop every kind shares: asked
once, from any thread, with the words the job ends with. No Qt, no torch here.
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

from .session import STOPPED_BY_USER

__all__ = ["Job", "StopSwitch", "STOPPED_BY_USER", "TakesTurns"]


@runtime_checkable
class Job(Protocol):
    """A unit of work run by a worker (or several) through the session: blocking ``run``,
    a ``request_stop`` that returns at once from any thread, and its progress (0–1)."""

    @property
    def stop_requested(self) -> bool: ...

    def request_stop(self, message: str = STOPPED_BY_USER) -> None: ...

    def fraction(self) -> float: ...

    def run(self) -> object: ...


@runtime_checkable
class TakesTurns(Protocol):
    """A job whose worker pauses between blocks of timed calls for a window to draw in
    (a run, ``jobs/run_job.py``): the pauses go out while ``take_turns`` is on, and each is
    answered with ``answer_turn`` once drawn."""

    def take_turns(self, on: bool = True) -> None: ...

    def answer_turn(self, block: int, paints: list[tuple[int, int]] | None) -> None: ...


class StopSwitch:
    """A job's stop: the first request wins and names how the job ends; later ones are no-ops.

    ``lock`` is the job's own lock when the job registers what it stops (its
    sessions, its worker) under one: a part registered after :meth:`trip` sees
    :attr:`requested` already set, so no part escapes the stop.
    """

    def __init__(self, lock: threading.Lock | None = None):
        self.lock = lock or threading.Lock()
        self._event = threading.Event()
        self._message = STOPPED_BY_USER

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    @property
    def message(self) -> str:
        """The words the job ends with (the first request's)."""
        return self._message

    def trip(self, message: str = STOPPED_BY_USER) -> bool:
        """Ask the job to stop; True for the request that did, False when one came first."""
        with self.lock:
            if self._event.is_set():
                return False
            self._message = message
            self._event.set()
            return True

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a stop is asked (True) or ``timeout`` passes (False)."""
        return self._event.wait(timeout)
