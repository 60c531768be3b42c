"""The hello timeout of a worker that may wait in a batch queue first (the clock stops while it waits)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol


class QueuedWorker(Protocol):
    """What the clock asks of a worker's launcher: its wait in a batch queue, in words."""

    def queue_state(self) -> str | None: ...


#: Seconds between two looks at the Slurm queue while a job waits.
QUEUE_POLL_S = 1.0


class QueueClock:
    """The hello timeout of a worker that may wait in a queue first.

    Looks at the queue every second until ``cancel``: while the job waits,
    ``on_queued`` gets its state in words (once per change) and the clock
    does not run; ``timeout_s`` without ``hello`` after that calls ``expire``.
    """

    def __init__(self, launcher: QueuedWorker, timeout_s: float,
                 expire: Callable[[], None], on_queued: Callable[[str], None]):
        self._launcher = launcher
        self._timeout_s = timeout_s
        self._expire = expire
        self._on_queued = on_queued
        self._cancelled = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="compile-studio-queue", daemon=True)
        self._thread.start()

    def cancel(self) -> None:
        self._cancelled.set()

    def _watch(self) -> None:
        deadline = time.monotonic() + self._timeout_s
        shown: str | None = None
        while not self._cancelled.wait(QUEUE_POLL_S):
            state = self._launcher.queue_state()
            if self._cancelled.is_set():
                return
            if state:
                deadline = time.monotonic() + self._timeout_s
                if state != shown:
                    self._on_queued(state)
            shown = state
            if time.monotonic() > deadline:
                self._expire()
                return
