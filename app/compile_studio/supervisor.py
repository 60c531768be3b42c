"""Starts and supervises worker processes (no Qt, no torch).

Every worker — a benchmark run or the environment probe — starts here, one
way: a :class:`WorkerLauncher` says which command line starts it, and
:class:`WorkerProcess` owns the process, its pipes and its end.
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import protocol

#: A command put in front of the worker (e.g. ``ssh gpu-node``), split as a shell would (shlex).
WORKER_PREFIX_ENV = "COMPILE_STUDIO_WORKER_PREFIX"
WORKER_CWD_ENV = protocol.WORKER_CWD_ENV


class WorkerStartFailed(OSError):
    """The worker command cannot be started; the message says why, in words."""


def safe_start_folder() -> str:
    """Where the worker process starts: the folder that holds the installed package.

    ``python -m`` puts the folder it starts in first on ``sys.path``, and
    Python 3.10 has no ``-P``; starting in the package's own parent means only
    what is already importable is importable.
    """
    folder = Path(__file__).resolve().parent.parent
    return str(folder) if folder.is_dir() else tempfile.gettempdir()


@dataclass(frozen=True)
class WorkerLauncher:
    """How a worker process is started: on this machine, with this Python.

    ``command`` replaces the whole command line (a custom worker); ``prefix``
    goes in front of it (e.g. ``ssh gpu-node``); ``env`` replaces the
    environment the worker inherits.
    """

    python: str = field(default_factory=lambda: sys.executable)
    prefix: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    #: why the prefix could not be read (the launch then fails saying so)
    prefix_problem: str | None = None

    @classmethod
    def local(cls, env: dict[str, str] | None = None) -> WorkerLauncher:
        """This machine's worker, with the prefix from ``COMPILE_STUDIO_WORKER_PREFIX``.

        The prefix is split as a shell would split it (quotes keep spaces).
        """
        text = (env or os.environ).get(WORKER_PREFIX_ENV, "")
        try:
            prefix = tuple(shlex.split(text))
        except ValueError as exc:
            return cls(env=env, prefix_problem=f"{WORKER_PREFIX_ENV}={text!r} cannot be read: {exc}")
        return cls(prefix=prefix, env=env)

    def argv(self, *args: str) -> list[str]:
        """The command line that starts a worker (a frozen app re-runs itself)."""
        if self.prefix_problem:
            raise WorkerStartFailed(self.prefix_problem)
        if self.command:
            cmd = [*self.command, *args]
        elif getattr(sys, "frozen", False):
            cmd = [sys.executable, "--worker", *args]
        else:
            cmd = [self.python, "-m", "compile_studio.worker", *args]
        return [*self.prefix, *cmd]

    # -- hooks of launchers that reach another machine (compile_studio.remote) ------------
    def worker_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """The config as the worker gets it (a remote launcher ships a factory file and
        names its copy there)."""
        return config

    def runs_here(self) -> bool:
        """Whether this is the plain local worker (its timing thread may get a core of its own)."""
        return type(self) is WorkerLauncher and not self.prefix and not self.command

    def describe(self) -> str:
        """Where the worker runs, in words."""
        return "this machine"

    def prepare(self, on_status: Callable[[str], None] | None = None) -> None:
        """Make the worker startable (copy it, check Python and torch); WorkerStartFailed if not."""

    def waits_in_queue(self) -> bool:
        """Whether the worker may wait in a batch queue before it starts."""
        return False

    def queue_state(self) -> str | None:
        """The queue wait in words (``queued on partition …``); None when not waiting."""
        return None

    def stop_worker(self, worker: WorkerProcess, hello: protocol.HelloEvent | None) -> None:
        """Stop a running worker for sure (``stop``, SIGTERM, SIGKILL; remote: a second command)."""
        worker.stop()

    def cleanup(self, hello: protocol.HelloEvent | None) -> None:
        """After the worker ended: leave nothing of it running where it ran."""

    def lost_connection(self, worker: WorkerProcess) -> str | None:
        """Words for a worker lost with its connection (not crashed); None otherwise."""
        return None

    def explain(self, event: protocol.Event) -> protocol.Event:
        """An event as the supervising side records it (remote: host and target added)."""
        return event

    def environment(self) -> dict[str, str]:
        child_env = dict(os.environ if self.env is None else self.env)
        child_env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            child_env.setdefault(WORKER_CWD_ENV, os.getcwd())
        except OSError:
            pass
        return child_env


def worker_command(*args: str) -> list[str]:
    """The command line of this machine's worker."""
    return WorkerLauncher.local().argv(*args)


def describe_exit(returncode: int | None) -> str:
    """Words for how a worker process ended (``-9`` → killed by SIGKILL)."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hint = " (out of memory killer?)" if -returncode == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exited with code {returncode}"


class WorkerProcess:
    """One worker process: send a config, iterate its events, stop it.

    ``on_log`` receives each line the worker writes to stderr (from a reader
    thread) and each stdout line that is not a protocol event. Stopping sends
    ``stop``, then SIGTERM, then SIGKILL to the worker's whole process group,
    and always reaps it. Raises OSError when the process cannot start.
    """

    def __init__(
        self,
        on_log: Callable[[str], None] | None = None,
        launcher: WorkerLauncher | None = None,
        args: tuple[str, ...] = (),
    ):
        launcher = launcher or WorkerLauncher.local()
        argv = launcher.argv(*args)
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
                env=launcher.environment(),
                cwd=safe_start_folder(),
                start_new_session=True,
            )
        except FileNotFoundError:
            raise WorkerStartFailed(
                f"the worker command {argv[0]!r} was not found (command line: {shlex.join(argv)})"
            ) from None
        except PermissionError:
            raise WorkerStartFailed(
                f"the worker command {argv[0]!r} cannot be run (permission denied)"
            ) from None
        except OSError as exc:
            raise WorkerStartFailed(
                f"the worker command {argv[0]!r} cannot be started: {exc.strerror or exc}"
            ) from None
        self.on_log = on_log
        self.stderr_tail: list[str] = []
        self._stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_thread.start()
        self._stop_lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            self.stderr_tail.append(line)
            del self.stderr_tail[:-200]
            self._log(line)

    def _log(self, line: str) -> None:
        if self.on_log is not None:
            try:
                self.on_log(line)
            except Exception:  # noqa: BLE001 - a log consumer must not kill the reader
                pass

    def send_config(self, config: dict[str, Any] | str) -> None:
        text = config if isinstance(config, str) else json.dumps(config)
        self._write_line(text)

    def _write_line(self, text: str) -> bool:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(text + "\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def events(self) -> Iterator[protocol.Event]:
        """Protocol events until the worker closes stdout; other lines go to the log."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = protocol.decode(line)
            if event is None:
                if line.strip():
                    self._log(line.rstrip("\n"))
                    if _claims_to_be_an_event(line):
                        shown = line.strip()[:300]
                        self._log(f"[compile studio] malformed event from the worker: {shown}")
                        yield protocol.ErrorEvent(
                            kind=protocol.ErrorKind.INTERNAL,
                            message=f"the worker sent a malformed event: {shown}",
                        )
                continue
            yield event

    def request_stop(self) -> None:
        """Ask politely (the ``stop`` line); returns at once."""
        self._write_line(protocol.STOP_LINE)

    def stop(self, grace_s: float = 2.0, term_s: float = 2.0) -> int:
        """Stop the worker for sure: ``stop``, then SIGTERM, then SIGKILL; reaps it."""
        with self._stop_lock:
            if self.proc.poll() is None:
                self.request_stop()
                try:
                    self.proc.wait(grace_s)
                except subprocess.TimeoutExpired:
                    self._signal(signal.SIGTERM)
                    try:
                        self.proc.wait(term_s)
                    except subprocess.TimeoutExpired:
                        self._signal(signal.SIGKILL)
                        self.proc.wait()
            self._kill_leftovers()
            self._close_pipes()
            return self.proc.returncode

    def kill(self) -> None:
        """End the whole process group at once (no grace); returns without waiting."""
        self._signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        rc = self.proc.wait(timeout)
        self._kill_leftovers()
        return rc

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass

    def _kill_leftovers(self) -> None:
        """Compile helpers the worker started share its process group: end them too."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close_stdin(self) -> None:
        """Close the worker's stdin (a remote worker reads end of input as stop)."""
        self._close_pipes()

    def _close_pipes(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def exit_description(self) -> str:
        """How the process ended, with the last lines it wrote to stderr."""
        text = describe_exit(self.proc.returncode)
        tail = [ln for ln in self.stderr_tail[-3:] if ln.strip()]
        return text + (": " + " | ".join(tail) if tail else "")

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _claims_to_be_an_event(line: str) -> bool:
    """Whether a line that did not decode is a JSON object naming an event type."""
    text = line.strip()
    if not text.startswith("{"):
        return False
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("type") in protocol.EVENT_CLASSES


class ProbeFailed(RuntimeError):
    """The environment probe got no usable ``hello``; the message says why."""


def probe_environment(
    launcher: WorkerLauncher | None = None,
    timeout_s: float = 120.0,
    on_start: Callable[[WorkerProcess], None] | None = None,
) -> protocol.HelloEvent:
    """Start a worker with ``--hello`` and return its version-checked hello.

    ``on_start`` receives the process as soon as it runs (so another thread
    can :meth:`WorkerProcess.kill` it). Raises :class:`ProbeFailed` (or
    :class:`protocol.ProtocolMismatch`) saying what went wrong.
    """
    try:
        if launcher is not None:
            launcher.prepare()
        worker = WorkerProcess(launcher=launcher, args=("--hello",))
    except OSError as exc:
        if launcher is not None:
            launcher.cleanup(None)
        raise ProbeFailed(f"cannot start the worker process: {exc}") from None
    if on_start is not None:
        on_start(worker)
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        worker.kill()

    timer = threading.Timer(timeout_s, expire)
    timer.daemon = True
    timer.start()
    try:
        for event in worker.events():
            if isinstance(event, protocol.HelloEvent):
                where = "the worker" if launcher is None else f"the worker on {launcher.describe()}"
                explained = launcher.explain(event) if launcher is not None else event
                assert isinstance(explained, protocol.HelloEvent)
                return protocol.check_hello(explained, where)
    finally:
        timer.cancel()
        worker.stop(grace_s=1.0, term_s=1.0)
        if launcher is not None:
            launcher.cleanup(None)
    if timed_out.is_set():
        raise ProbeFailed(f"the worker did not answer within {timeout_s:.0f} s")
    raise ProbeFailed(f"the worker did not say hello ({worker.exit_description()})")


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
    called (from that thread) whenever the state changes.
    """

    def __init__(
        self,
        launcher: WorkerLauncher,
        hello_timeout_s: float = 600.0,
        on_change: Callable[[], None] | None = None,
    ):
        self.launcher = launcher
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
            worker._close_pipes()
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
    def _notify(self) -> None:
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
            worker = WorkerProcess(on_log=self._keep_log, launcher=self.launcher)
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
            worker._close_pipes()
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
