"""The one internal deadline: a thread that calls back once the time is up."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Deadline:
    """Calls ``on_expire`` from a thread of its own once ``seconds`` have passed."""

    def __init__(self, seconds: float, on_expire: Callable[[], None]):
        self._cancel = threading.Event()
        self._seconds = seconds
        self._on_expire = on_expire
        self._thread = threading.Thread(target=self._wait, name="deadline", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def _wait(self) -> None:
        if not self._cancel.wait(self._seconds):
            self._on_expire()
