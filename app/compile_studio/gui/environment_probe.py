"""The start-up environment probe: a worker process asked about the machine, off the GUI thread.

The probe is :func:`~compile_studio.jobs.workers.probe_environment`; its answer
reaches the GUI thread as a Qt signal (a queued call). torch never enters the
GUI process.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, QThread, Signal

from ..core import protocol
from ..jobs.workers import ProbeFailed, WorkerLauncher, WorkerProcess, probe_environment


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
