"""A worker started ahead of a run (torch imported, ``hello`` said), waiting for the run that takes it."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable

from ..core import protocol
from .supervisor import WorkerLauncher, WorkerProcess, WorkerStartFailed

#: every standby worker of this process not yet closed (ended at exit: no orphan)
_STANDBYS: weakref.WeakSet[StandbyWorker] = weakref.WeakSet()


class StandbyWorker:
    """A worker started ahead of a run: torch imported, ``hello`` said, waiting for its config.

    The worker itself needs nothing new for this: it always says ``hello``
    and then blocks on stdin for one config line. :meth:`start` starts the
    process and reads its hello on a background thread (never the caller's);
    a run then :meth:`take`\\ s it and sends its config, as it would to a
    worker it had just started. States: ``starting``, ``ready``, ``ended``
    (died or never said hello), ``taken`` and ``closed``. ``on_change`` is
    called (from that thread) whenever the state changes, until :meth:`detach`.
    """

    def __init__(
        self,
        launcher: WorkerLauncher,
        hello_timeout_s: float = 600.0,
        on_change: Callable[[], None] | None = None,
        hosts: int = 1,
    ):
        self.launcher = launcher
        #: compile processes it was asked to have ahead (as it starts, then :meth:`want_hosts`)
        self.hosts = hosts
        #: what the worker process was started with: a run may use it only when it would start the same
        self.argv = launcher.argv()
        self.environment = launcher.environment()
        self.hello_timeout_s = hello_timeout_s
        self.on_change = on_change
        self.state = "starting"
        self.hello: protocol.HelloEvent | None = None
        #: why it ended (in words), once it has
        self.ended_because = ""
        self.worker: WorkerProcess | None = None
        self._log_lines: list[str] = []
        self._lock = threading.Lock()
        #: held while ``on_change`` runs (reentrant: a listener may detach from within it)
        self._notify_lock = threading.RLock()
        self._hello_read = threading.Event()
        self._thread: threading.Thread | None = None
        _STANDBYS.add(self)

    def start(self) -> None:
        """Start the process and read its hello, both on a background thread; returns at once."""
        self._thread = threading.Thread(target=self._run, name="compile-studio-standby", daemon=True)
        self._thread.start()

    def matches(self, launcher: WorkerLauncher) -> bool:
        """Whether ``launcher`` would start this very worker: this machine, same command and environment."""
        if not launcher.runs_here():
            return False
        try:
            return launcher.argv() == self.argv and launcher.environment() == self.environment
        except WorkerStartFailed:
            return False

    @property
    def pid(self) -> int | None:
        worker = self.worker
        return worker.pid if worker is not None else None

    @property
    def usable(self) -> bool:
        """Starting or ready, and its process still running."""
        worker = self.worker
        if self.state not in ("starting", "ready"):
            return False
        return worker is None or worker.proc.poll() is None

    def want_hosts(self, count: int) -> bool:
        """Have ``count`` compile processes started ahead (when more than asked so far and the
        worker is not taken): the ``hosts`` line, which it reads before its config."""
        count = min(count, protocol.MAX_COMPILE_HOSTS_AHEAD)
        with self._lock:
            worker = self.worker
            if count <= self.hosts or worker is None or not self.usable:
                return False
            if not worker.ask_hosts(count):
                return False
            self.hosts = count
            return True

    def take(self) -> WorkerProcess | None:
        """Hand the worker over to a run (None when it ended); the caller then owns the process.

        A worker taken while still starting: :meth:`wait_hello` waits for its hello.
        """
        with self._lock:
            if not self.usable:
                return None
            self.state = "taken"
        # wait for the process itself (a few ms after start at most)
        while self.worker is None and not self._hello_read.is_set():
            self._hello_read.wait(0.01)
        self._notify()
        return self.worker

    def wait_hello(self, on_log: Callable[[str], None] | None = None) -> protocol.HelloEvent | None:
        """After :meth:`take`: the hello (waits while it is still coming; None when none came).

        The lines the worker wrote to stderr so far go to ``on_log``, and from now on every line.
        """
        self._hello_read.wait()
        worker = self.worker
        if worker is not None:
            with self._lock:
                lines, self._log_lines = self._log_lines, []
                worker.on_log = on_log
            for line in lines:
                if on_log is not None:
                    on_log(line)
        return self.hello

    def close(self) -> None:
        """End the worker at once (SIGKILL of its process group; it has done nothing yet) and reap it."""
        with self._lock:
            if self.state in ("taken", "closed"):
                return
            self.state = "closed"
            worker = self.worker
        if worker is not None:
            # helpers it started in sessions of their own (a compile host) go with it
            for pid in _descendants(worker.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            worker.kill()
            try:
                worker.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
            worker.close_pipes()
        self._notify()

    def describe(self) -> str:
        """What it is doing, in words ("" once it is of no use)."""
        if self.state == "starting":
            return "starting a worker: importing torch…"
        if self.state == "ready" and self.usable:
            torch = (self.hello.environment.get("torch") if self.hello else None) or "?"
            return f"worker ready (torch {torch})"
        return ""

    # -- the background thread ---------------------------------------------------------------
    def detach(self) -> None:
        """Call ``on_change`` no more; once this returns, no call is under way either (its
        listener may go: a Qt object being deleted must not be signalled from this thread)."""
        with self._notify_lock:
            self.on_change = None

    def _notify(self) -> None:
        with self._notify_lock:
            if self.on_change is not None:
                try:
                    self.on_change()
                except Exception:  # noqa: BLE001 - a listener must not kill the thread
                    pass

    def _keep_log(self, line: str) -> None:
        with self._lock:
            self._log_lines.append(line)
            del self._log_lines[:-200]

    def _end(self, because: str) -> None:
        with self._lock:
            if self.state in ("starting", "ready"):
                self.state = "ended"
                self.ended_because = because
        self._notify()

    def _run(self) -> None:
        try:
            worker = WorkerProcess(
                on_log=self._keep_log, launcher=self.launcher, args=protocol.compile_hosts_flags(self.hosts)
            )
        except OSError as exc:
            self._hello_read.set()
            self._end(f"cannot start the worker process: {exc}")
            return
        with self._lock:
            self.worker = worker
            closed = self.state == "closed"
        if closed:
            worker.kill()
            worker.proc.wait()
            self._hello_read.set()
            return
        timer = threading.Timer(self.hello_timeout_s, worker.kill)
        timer.daemon = True
        timer.start()
        try:
            for event in worker.events():
                if isinstance(event, protocol.HelloEvent):
                    self.hello = event
                    break
        finally:
            timer.cancel()
            self._hello_read.set()
        if self.hello is None:
            try:
                worker.proc.wait(2)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.proc.wait()
            worker.close_pipes()
            self._end(f"the worker said no hello ({worker.exit_description()})")
            return
        with self._lock:
            if self.state == "starting":
                self.state = "ready"
        self._notify()
        # while it waits: notice a worker that ends (killed, out of memory) and say so
        while self.state == "ready":
            if worker.proc.poll() is not None:
                self._end(f"the worker started ahead ended ({worker.exit_description()})")
                return
            time.sleep(0.25)


def _descendants(pid: int) -> list[int]:
    """The pids of every process below ``pid`` (none where psutil cannot tell)."""
    try:
        import psutil

        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except Exception:  # noqa: BLE001 - psutil missing, or the process is gone
        return []


@atexit.register
def _close_standbys() -> None:
    for standby in list(_STANDBYS):
        standby.close()
