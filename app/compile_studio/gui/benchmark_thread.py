"""Background threads of the GUI: one benchmark run, and the start-up environment probe.

Both supervise a worker process (torch never enters the GUI process) and
report through Qt signals, which reach the GUI thread as queued calls.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import shiboken6
from PySide6.QtCore import QObject, QThread, Signal

from .. import protocol
from ..config import BenchmarkConfig
from ..results import RunResult, RunStore, summarize
from ..results.recorder import RunRecorder
from ..results.run_result import gpu_state_rows
from ..supervisor import WorkerProcess, hello_from_output, worker_command
from ..worker import describe_exit

_live_threads: weakref.WeakSet[QThread] = weakref.WeakSet()


def has_finished(thread: QThread, wait_ms: int = 0) -> bool:
    """Whether ``thread`` is not running, waiting up to ``wait_ms`` for it to end.

    The window deletes a benchmark thread (``deleteLater``) once it has
    finished, so a thread whose Qt object is already gone counts as finished.
    """
    if not shiboken6.isValid(thread):
        return True
    if wait_ms:
        return thread.wait(wait_ms)
    return not thread.isRunning()


def running_threads() -> list[QThread]:
    """Benchmark and probe threads of this process that are still running."""
    return [t for t in list(_live_threads) if not has_finished(t)]


class BenchmarkThread(QThread):
    """Runs one benchmark in a worker process and turns its events into signals.

    Every event also goes to a :class:`RunRecorder` writing the run folder
    (from this thread, never the GUI thread). :meth:`request_stop` returns at
    once; the stop (``stop`` line, then SIGTERM, then SIGKILL of the worker's
    process group) proceeds in the background and the worker is always reaped.
    """

    hello = Signal(dict)
    phase = Signal(str, str, int)
    samples = Signal(str, str, int, object)
    compiled = Signal(dict)
    variant_done = Signal(dict)
    warning = Signal(str)
    error = Signal(str, str, str)
    log = Signal(str)
    #: the summary rows (list[SummaryRow]), computed here after each finished variant
    summary = Signal(object)
    finished_run = Signal(object)
    #: the GPU readings (list of dicts, see results.run_result.GPU_STATE_COLUMNS) of one gpu_state event
    gpu_state = Signal(object)

    def __init__(
        self,
        config: BenchmarkConfig,
        store: RunStore | None,
        parent: QObject | None = None,
        env: dict[str, str] | None = None,
    ):
        super().__init__(parent)
        self.config = config
        self._config_dict = config.to_dict()
        #: the run folder (created now, so its name is the run id from the start)
        self.folder: Path | None = (
            store.new_run_folder(config.slug()) if store is not None else None
        )
        self.run_id = self.folder.name if self.folder is not None else ""
        self._env = env
        self._worker: WorkerProcess | None = None
        self._worker_ready = threading.Event()
        self._stop_requested = threading.Event()
        #: set when the run is cut short by the window going away (not a user's Stop)
        self._cut_short_message: str | None = None
        self._stopper: threading.Thread | None = None
        self.recorder: RunRecorder | None = None
        self.result: RunResult | None = None
        self.worker_pid: int | None = None
        _live_threads.add(self)

    # -- control (any thread) ---------------------------------------------------
    @property
    def stop_requested(self) -> bool:
        return self._stop_requested.is_set()

    def request_stop(self) -> None:
        """Ask the worker to stop; escalates to SIGTERM/SIGKILL off the calling thread."""
        if self._stop_requested.is_set():
            return
        self._stop_requested.set()
        if self._worker_ready.is_set() and self._worker is not None:
            self._start_stopper(self._worker)

    def cut_short(self, message: str) -> None:
        """End the run because the window goes away: the run is left ``incomplete``.

        Unlike :meth:`request_stop` (a user's Stop, recorded as ``stopped``),
        the run folder says the run did not end on its own or by choice;
        ``message`` says why.
        """
        self._cut_short_message = message
        self.request_stop()

    @property
    def was_cut_short(self) -> bool:
        return self._cut_short_message is not None

    def _start_stopper(self, worker: WorkerProcess) -> None:
        self._stopper = threading.Thread(
            target=worker.stop, name="compile-studio-stop", daemon=True
        )
        self._stopper.start()

    # -- the thread ------------------------------------------------------------------
    def run(self) -> None:  # noqa: D401 - QThread entry point
        try:
            self.recorder = RunRecorder(self._config_dict, self.folder)
        except OSError as exc:
            self.recorder = RunRecorder(self._config_dict, None)
            self.error.emit("", "internal", f"cannot write the run folder: {exc}")
        recorder = self.recorder
        if self.run_id:
            recorder.run.run_id = self.run_id
        worker: WorkerProcess | None = None
        saw_done = False
        try:
            worker = WorkerProcess(on_log=self.log.emit, env=self._env)
            self.worker_pid = worker.pid
            self._worker = worker
            self._worker_ready.set()
            if self._stop_requested.is_set():
                self._start_stopper(worker)
            else:
                worker.send_config(self._config_dict)
            for event in worker.events():
                if event.get("type") == protocol.DONE:
                    saw_done = True
                self._handle(recorder, event)
        except OSError as exc:
            message = f"cannot start the worker process: {exc}"
            self.error.emit("", "internal", message)
            recorder.fail(message)
        except Exception as exc:  # noqa: BLE001 - report, never let the thread die silently
            self.error.emit("", "internal", f"{type(exc).__name__}: {exc}")
            if worker is not None:
                worker.stop()
        finally:
            if worker is not None:
                if self._stopper is not None:
                    self._stopper.join()
                worker.stop(grace_s=2.0, term_s=2.0)
                if not saw_done:
                    if self._stop_requested.is_set():
                        recorder.stop(self._cut_short_message or "stopped by the user")
                    else:
                        message = f"the worker process died ({describe_exit(worker.proc.returncode)})"
                        tail = [ln for ln in worker.stderr_tail[-3:] if ln.strip()]
                        if tail:
                            message += ": " + " | ".join(tail)
                        self.error.emit("", "crashed", message)
                        recorder.fail(message)
            recorder.finish()
            if self._cut_short_message is not None:
                self._mark_incomplete(recorder, self._cut_short_message)
            self.result = recorder.run
            try:
                self.summary.emit(summarize(recorder.run))
            except Exception as exc:  # noqa: BLE001
                self.log.emit(f"summary failed: {exc}")
            self.finished_run.emit(recorder.run)

    def _mark_incomplete(self, recorder: RunRecorder, message: str) -> None:
        """A run cut short (stopped or not yet ended) is recorded as ``incomplete``."""
        run = recorder.run
        if run.status not in ("stopped", "incomplete"):
            return  # it completed or failed on its own before the window went away
        run.status = "incomplete"
        run.message = message
        if recorder.writer is not None:
            try:
                recorder.writer.write_run_json()
            except OSError as exc:
                self.log.emit(f"cannot update run.json: {exc}")

    def _handle(self, recorder: RunRecorder, event: dict[str, Any]) -> None:
        kind = event.get("type")
        recorder.handle(event)
        if kind == protocol.SAMPLES:
            self.samples.emit(
                str(event["variant"]),
                str(event["phase"]),
                int(event["first_iteration"]),
                np.asarray(event["wall_ms"], dtype=np.float64),
            )
        elif kind == protocol.PHASE:
            self.phase.emit(
                str(event.get("variant") or ""),
                str(event.get("phase", "")),
                int(event.get("iterations") or 0),
            )
        elif kind == protocol.GPU_STATE:
            self.gpu_state.emit(gpu_state_rows(event))
        elif kind == protocol.HELLO:
            self.hello.emit(event)
        elif kind == protocol.COMPILED:
            self.compiled.emit(event)
        elif kind == protocol.VARIANT_DONE:
            self.variant_done.emit(event)
            self.summary.emit(summarize(recorder.run))
        elif kind == protocol.WARNING:
            variant = event.get("variant")
            message = str(event.get("message", ""))
            self.warning.emit(f"{variant}: {message}" if variant else message)
        elif kind == protocol.ERROR:
            self.error.emit(
                str(event.get("variant") or ""),
                str(event.get("kind") or "internal"),
                str(event.get("message", "")),
            )
            if event.get("traceback"):
                self.log.emit(str(event["traceback"]))
            if event.get("variant"):
                self.summary.emit(summarize(recorder.run))


class EnvironmentProbe(QThread):
    """Asks a worker process about the machine (``worker --hello``) in the background.

    :meth:`cancel` ends the probe's process group at once (window closing).
    """

    probed = Signal(dict)
    failed = Signal(str)

    def __init__(self, parent: QObject | None = None, timeout_s: float = 120.0):
        super().__init__(parent)
        self._timeout_s = timeout_s
        self._proc: subprocess.Popen[str] | None = None
        self._cancelled = threading.Event()
        _live_threads.add(self)

    def cancel(self) -> None:
        self._cancelled.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def run(self) -> None:  # noqa: D401 - QThread entry point
        if self._cancelled.is_set():
            return
        try:
            self._proc = subprocess.Popen(
                worker_command("--hello"),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                start_new_session=True,
            )
            if self._cancelled.is_set():
                self.cancel()
            try:
                out, err = self._proc.communicate(timeout=self._timeout_s)
            except subprocess.TimeoutExpired:
                self.cancel()
                out, err = self._proc.communicate()
                self.failed.emit(
                    f"the worker did not answer within {self._timeout_s:.0f} s"
                )
                return
        except OSError as exc:
            self.failed.emit(f"cannot start the worker process: {exc}")
            return
        if self._cancelled.is_set():
            return
        try:
            hello = hello_from_output(out, err, self._proc.returncode)
        except RuntimeError as exc:
            self.failed.emit(str(exc))
            return
        self.probed.emit(hello)
