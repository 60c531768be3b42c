"""Starts and supervises one worker process (no Qt): used by the CLI and the GUI thread."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from . import protocol
from .worker import describe_exit

#: A command put in front of the worker (e.g. ``ssh gpu-node``), split on spaces.
WORKER_PREFIX_ENV = "COMPILE_STUDIO_WORKER_PREFIX"


def worker_command(*args: str) -> list[str]:
    """The command line that starts a worker (a frozen app re-runs itself)."""
    if getattr(sys, "frozen", False):
        cmd = [sys.executable, "--worker", *args]
    else:
        cmd = [sys.executable, "-m", "compile_studio.worker", *args]
    prefix = os.environ.get(WORKER_PREFIX_ENV, "").split()
    return [*prefix, *cmd]


class WorkerProcess:
    """One worker process: send a config, iterate its events, stop it.

    ``on_log`` receives each line the worker writes to stderr (from a reader
    thread). Stopping sends ``stop``, then SIGTERM, then SIGKILL to the
    worker's whole process group, and always reaps it.
    """

    def __init__(
        self,
        on_log: Callable[[str], None] | None = None,
        env: dict[str, str] | None = None,
        args: tuple[str, ...] = (),
    ):
        child_env = dict(os.environ if env is None else env)
        child_env.setdefault("PYTHONUNBUFFERED", "1")
        self.proc = subprocess.Popen(
            worker_command(*args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            env=child_env,
            start_new_session=True,
        )
        self.on_log = on_log
        self.stderr_tail: list[str] = []
        self._stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_thread.start()
        self._stop_lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            self.stderr_tail.append(line)
            del self.stderr_tail[:-200]
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

    def events(self) -> Iterator[dict[str, Any]]:
        """Protocol events until the worker closes stdout; other lines go to the log."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = protocol.decode(line)
            if event is None:
                if line.strip() and self.on_log is not None:
                    self.on_log(line.rstrip("\n"))
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

    def _close_pipes(self) -> None:
        for pipe in (self.proc.stdin,):
            try:
                if pipe is not None:
                    pipe.close()
            except (BrokenPipeError, OSError):
                pass

    def exit_description(self) -> str:
        return describe_exit(self.proc.returncode)

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def hello_from_output(stdout: str, stderr: str, returncode: int | None) -> dict[str, Any]:
    """The hello event in a ``worker --hello`` process's output.

    Raises RuntimeError saying how the worker ended, with the end of its stderr.
    """
    for line in stdout.splitlines():
        event = protocol.decode(line)
        if event and event["type"] == protocol.HELLO:
            return event
    tail = " | ".join(stderr.strip().splitlines()[-5:])
    raise RuntimeError(
        f"the worker did not say hello ({describe_exit(returncode)})" + (f": {tail}" if tail else "")
    )


def probe_environment(timeout_s: float = 120.0) -> dict[str, Any]:
    """Start a worker with ``--hello`` and return its hello event."""
    proc = subprocess.run(
        worker_command("--hello"),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        start_new_session=True,
    )
    return hello_from_output(proc.stdout, proc.stderr, proc.returncode)
