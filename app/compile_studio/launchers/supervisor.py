"""Starts and supervises worker processes (no Qt, no torch).

Every worker — a benchmark run or the environment probe — starts here, one
way: a :class:`WorkerLauncher` says which command line starts it, and
:class:`WorkerProcess` owns the process, its pipes and its end.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..core import protocol
from ..results.records.schema import MAX_NAME
from .event_checks import (
    DIAGNOSTICS_PREFIX,
    MAX_DIAGNOSTICS_LINE,
    MAX_PROTOCOL_LINE,
    Refused,
    check_event,
)

#: Longest log line shown (bytes of one stderr line, or of a stdout line that is no event); the rest is cut.
MAX_LOG_LINE = 4096
#: A worker whose stdout holds more than this many lines that are no event (cut, malformed, refused),
#: or this many bytes of them, sends garbage: it is ended.
MAX_GARBAGE_LINES = 1000
MAX_GARBAGE_BYTES = 64 * 1024 * 1024
_PIECE = 64 * 1024
#: What ends a log line: a newline, or a carriage return (a progress bar redrawing its line).
_LINE_END = re.compile(rb"\r\n|\r|\n")

#: Refused events said as a warning each (the rest are counted in :attr:`WorkerProcess.refused`).
SHOWN_REFUSALS = 5

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
    folder = Path(__file__).resolve().parents[2]  # launchers/ -> compile_studio/ -> its parent
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

    # -- hooks of launchers that reach another machine (compile_studio.launchers.remote) ------------
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

    def hello_timer(
        self, timeout_s: float, expire: Callable[[], None], on_queued: Callable[[str], None]
    ) -> HelloTimer:
        """The clock that calls ``expire`` when a worker has said nothing for ``timeout_s``; started.

        A worker that may wait in a batch queue first gets its time once its job
        runs; while it waits, ``on_queued`` gets the queue's state in words.
        """
        if self.waits_in_queue():
            from .queue_clock import QueueClock

            return QueueClock(self, timeout_s, expire, on_queued)
        timer = threading.Timer(timeout_s, expire)
        timer.daemon = True
        timer.start()
        return timer

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


class HelloTimer(Protocol):
    """A started hello clock (:meth:`WorkerLauncher.hello_timer`): cancelled once the hello came."""

    def cancel(self) -> None: ...


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
        # bytes pipes, buffered (a stand-in Popen may hand over raw ones): lines are read capped
        self._stdin = _buffered(self.proc.stdin, io.BufferedWriter)
        self._stdout = _buffered(self.proc.stdout, io.BufferedReader)
        self._stderr = _buffered(self.proc.stderr, io.BufferedReader)
        self.stderr_tail: list[str] = []
        self.started_at = time.monotonic()
        #: whether the worker's hello came through :meth:`events`
        self.said_hello = False
        #: events the worker sent that were not kept (see :mod:`.event_checks`): how many, and
        #: why for the first few
        self.refused = 0
        self.refused_why: list[str] = []
        #: stdout lines longer than MAX_PROTOCOL_LINE (their bytes dropped), stdout lines that were
        #: no event, and stderr lines cut to MAX_LOG_LINE: counted, not kept
        self.cut_lines = 0
        self.cut_bytes = 0
        self.cut_log_lines = 0
        self.cut_log_bytes = 0
        self.garbage_lines = 0
        self.garbage_bytes = 0
        #: why this app ended a worker that kept sending garbage (None: it did not)
        self.garbage_stop: str | None = None
        #: how this process ended when this app ended it: (signal, seconds after the start, how)
        self._ended_by_app: tuple[int, float, str] | None = None
        self._stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_thread.start()
        self._stop_lock = threading.Lock()
        self._write_lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def _read_stderr(self) -> None:
        """The worker's log, line by line (``\\n``, ``\\r\\n`` or a progress bar's ``\\r`` ends
        one); a line is shown up to MAX_LOG_LINE bytes, the rest read, dropped and counted."""
        stream = self._stderr
        assert stream is not None
        pending = b""  # the start of the line being read (at most MAX_LOG_LINE bytes)
        cut = 0  # bytes of it dropped
        after_cr = False
        while True:
            try:
                chunk = stream.read1(_PIECE)
            except (OSError, ValueError):
                chunk = b""
            if not chunk:
                if pending or cut:
                    self._log_line(pending, cut)
                return
            if after_cr and chunk.startswith(b"\n"):
                chunk = chunk[1:]  # the \n of a \r\n split between two reads
            after_cr = chunk.endswith(b"\r")
            parts = _LINE_END.split(chunk)
            for k, part in enumerate(parts):
                room = MAX_LOG_LINE - len(pending)
                pending += part[:room]
                cut += max(0, len(part) - room)
                if k < len(parts) - 1:  # a line end followed this part
                    self._log_line(pending, cut)
                    pending, cut = b"", 0

    def _log_line(self, head: bytes, cut: int) -> None:
        if cut:
            self.cut_log_lines += 1
            self.cut_log_bytes += cut
        line = _shown(head, cut)
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
        with self._write_lock:  # the session's thread and the window's may both write
            try:
                assert self._stdin is not None
                self._stdin.write((text + "\n").encode("utf-8", "replace"))
                self._stdin.flush()
                return True
            except (BrokenPipeError, OSError, ValueError):
                return False

    def ask_hosts(self, count: int) -> bool:
        """Ask a worker still waiting for its config for ``count`` compile processes ahead."""
        return self._write_line(protocol.hosts_line(count))

    def answer_turn(self, block: int) -> bool:
        """Answer the worker's pause before timed block ``block`` (``drawn <block>``)."""
        return self._write_line(protocol.drawn_line(block))

    def _read_line(self) -> tuple[bytes, int] | None:
        """The next stdout line (at most MAX_PROTOCOL_LINE bytes; a diagnostics event's up to
        MAX_DIAGNOSTICS_LINE) and the bytes cut from it; None at the end of the output.

        An overlong line's rest is read in pieces and dropped, never held; a worker whose
        garbage passes the limits meanwhile is ended (:attr:`garbage_stop`).
        """
        stream = self._stdout
        assert stream is not None
        try:
            head = stream.readline(MAX_PROTOCOL_LINE + 1)
        except (OSError, ValueError):
            return None
        if not head:
            return None
        if head.endswith(b"\n") or len(head) <= MAX_PROTOCOL_LINE:
            return head, 0
        if head.startswith(DIAGNOSTICS_PREFIX):
            whole = bytearray(head)
            while len(whole) <= MAX_DIAGNOSTICS_LINE:
                piece = stream.readline(min(MAX_PROTOCOL_LINE, MAX_DIAGNOSTICS_LINE + 1 - len(whole)))
                whole += piece
                if not piece or piece.endswith(b"\n"):
                    return bytes(whole), 0
            head = bytes(whole)
        cut = len(head) - MAX_LOG_LINE + _drop_rest_of_line(stream, self._over_garbage_limit)
        return head[:MAX_LOG_LINE], cut

    def output_cut(self) -> dict[str, int]:
        """Lines cut from the worker's output so far (empty: none), once its log is read to the end."""
        if self.proc.poll() is not None:
            self._stderr_thread.join(2.0)
        if not (self.cut_lines or self.cut_log_lines):
            return {}
        return {
            "protocol_lines": self.cut_lines, "protocol_bytes": self.cut_bytes,
            "log_lines": self.cut_log_lines, "log_bytes": self.cut_log_bytes,
        }

    def _over_garbage_limit(self, pending: int = 0) -> bool:
        return (
            self.garbage_lines > MAX_GARBAGE_LINES
            or self.garbage_bytes + pending > MAX_GARBAGE_BYTES
        )

    def _garbage(self, size: int) -> protocol.ErrorEvent | None:
        """Count a line that was no event; past the limits, end the worker and say why."""
        self.garbage_lines += 1
        self.garbage_bytes += size
        if self.garbage_stop is not None or not self._over_garbage_limit():
            return None
        self.garbage_stop = (
            f"the worker kept sending output that is not the protocol ({self.garbage_lines:,} lines, "
            f"{self.garbage_bytes:,} bytes), so Compile Studio stopped it"
        )
        self._log(f"[compile studio] {self.garbage_stop}")
        self.kill()
        return protocol.ErrorEvent(kind=protocol.ErrorKind.PROTOCOL, message=self.garbage_stop)

    def events(self) -> Iterator[protocol.Event]:
        """Protocol events until the worker closes stdout; other lines go to the log.

        A line longer than MAX_PROTOCOL_LINE is cut (counted in :attr:`cut_lines` and
        :attr:`cut_bytes`); lines that are no event, malformed or refused events count as
        garbage, and a worker past MAX_GARBAGE_LINES or MAX_GARBAGE_BYTES of it is ended with
        a ``protocol`` error.
        """
        while self.garbage_stop is None:
            read = self._read_line()
            if read is None:
                return
            raw, cut = read
            if cut:
                self.cut_lines += 1
                self.cut_bytes += cut
                self._log(_shown(raw, cut))
                self._log(
                    f"[compile studio] the worker sent a line of {len(raw) + cut:,} bytes on its "
                    f"protocol output (at most {MAX_PROTOCOL_LINE:,}): cut, not read"
                )
                stop = self._garbage(len(raw) + cut)
                if stop is not None:
                    yield stop
                continue
            line = raw.decode("utf-8", "replace")
            event = protocol.decode(line)
            if event is None:
                if line.strip():
                    text = raw.rstrip(b"\r\n")
                    self._log(_shown(text[:MAX_LOG_LINE], max(0, len(text) - MAX_LOG_LINE)))
                    if _claims_to_be_an_event(line):
                        shown = line.strip()[:300]
                        self._log(f"[compile studio] malformed event from the worker: {shown}")
                        yield protocol.ErrorEvent(
                            kind=protocol.ErrorKind.INTERNAL,
                            message=f"the worker sent a malformed event: {shown}",
                        )
                    stop = self._garbage(len(raw))
                    if stop is not None:
                        yield stop
                continue
            try:
                event = check_event(event)
            except Refused as exc:
                warning = self._refuse(event, str(exc))
                if warning is not None:
                    yield warning
                stop = self._garbage(len(raw))
                if stop is not None:
                    yield stop
                continue
            if isinstance(event, protocol.HelloEvent):
                self.said_hello = True
            yield event

    def _refuse(self, event: protocol.Event, why: str) -> protocol.WarningEvent | None:
        """Count a refused event and log why; a warning for the first few (None after)."""
        self.refused += 1
        message = f"Compile Studio refused a '{event.TYPE}' event from the worker: {why}"
        self._log(f"[compile studio] {message}")
        if len(self.refused_why) >= SHOWN_REFUSALS:
            return None
        self.refused_why.append(why)
        variant = getattr(event, "variant", None)
        named = isinstance(variant, str) and 0 < len(variant) <= MAX_NAME
        return protocol.WarningEvent(message=message, variant=variant if named else None)

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
                    self._note_ended_by_app(signal.SIGTERM, "stop")
                    self._signal(signal.SIGTERM)
                    try:
                        self.proc.wait(term_s)
                    except subprocess.TimeoutExpired:
                        self._note_ended_by_app(signal.SIGKILL, "stop", again=True)
                        self._signal(signal.SIGKILL)
                        self.proc.wait()
            self._kill_leftovers()
            # the log read to its end before the pipes close: what a worker wrote just before
            # it ended is what exit_description says (a busy machine may not have run the
            # reader yet)
            self._stderr_thread.join(2.0)
            self.close_pipes()
            return self.proc.returncode

    def kill(self) -> None:
        """End the whole process group at once (no grace); returns without waiting.

        :meth:`exit_description` then says that this app ended it (and, before a hello,
        after how long), not that something else killed it.
        """
        self._note_ended_by_app(signal.SIGKILL, "kill")
        self._signal(signal.SIGKILL)

    def _note_ended_by_app(self, sig: int, how: str, again: bool = False) -> None:
        if self.proc.poll() is None and (self._ended_by_app is None or again):
            self._ended_by_app = (int(sig), time.monotonic() - self.started_at, how)

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
        self.close_pipes()

    def close_pipes(self) -> None:
        """Close the worker's stdin (errors of a pipe already broken are ignored)."""
        try:
            if self._stdin is not None:
                self._stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def exit_description(self) -> str:
        """How the process ended, with the last lines it wrote to stderr.

        A signal this app sent (:meth:`kill`, or :meth:`stop` past its grace) is said as
        such: ``Compile Studio stopped it after 600 s without a hello``.
        """
        text = describe_exit(self.proc.returncode)
        rc = self.proc.returncode
        ended = self._ended_by_app
        if ended is not None and rc is not None and rc < 0 and -rc == ended[0]:
            name = signal.Signals(ended[0]).name
            if ended[2] == "stop":
                text = f"Compile Studio stopped it with {name} when it did not stop on request"
            elif not self.said_hello:
                text = f"Compile Studio stopped it after {ended[1]:.0f} s without a hello"
            else:
                text = f"Compile Studio stopped it ({name})"
        tail = [ln for ln in self.stderr_tail[-3:] if ln.strip()]
        return text + (": " + " | ".join(tail) if tail else "")

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _buffered(stream: Any, kind: type) -> Any:
    """``stream`` as a buffered bytes stream (a raw pipe is wrapped; None stays None)."""
    if stream is None or isinstance(stream, (io.BufferedReader, io.BufferedWriter)):
        return stream
    return kind(stream)


def _drop_rest_of_line(stream: Any, give_up: Callable[[int], bool] | None = None) -> int:
    """Read the rest of an overlong line in pieces, keeping none; returns the bytes dropped.

    ``give_up(dropped)`` True stops early (the worker is then ended).
    """
    dropped = 0
    while True:
        try:
            piece = stream.readline(_PIECE)
        except (OSError, ValueError):
            return dropped
        if not piece:
            return dropped
        if piece.endswith(b"\n"):
            return dropped + len(piece) - 1
        dropped += len(piece)
        if give_up is not None and give_up(dropped):
            return dropped


def _shown(head: bytes, cut: int) -> str:
    """A log line as shown: its first bytes as text, and how many were cut."""
    text = head.rstrip(b"\r\n").decode("utf-8", "replace")
    return f"{text} … [{cut:,} bytes cut]" if cut else text


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
