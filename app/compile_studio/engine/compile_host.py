"""Compile times from fresh processes, without paying for a fresh interpreter each time.

``compile_timing = "isolated"`` times each variant's first call in a process
that has done nothing else: what a new program pays for that variant. Starting
a Python interpreter and importing torch for every variant costs seconds that
belong to no measurement, so a **compile host** does that part once:

* the worker starts the host (``python -m compile_studio.worker --compile-host``)
  when the run begins; the host imports torch, the engine, Dynamo and
  Inductor — exactly what a fresh compile process imported before its clock
  started — says ``host ready`` and waits on stdin;
* for each variant the worker sends one line (the variant and the run's
  config); the host **forks** a child, which starts a session of its own,
  times the variant's first call (build, compile, first run) and prints a
  ``compiled`` (or ``error``) protocol event; the host then reports
  ``host done``. Nothing the child compiled survives it: the next variant's
  child forks from the same clean host;
* the worker closes the host before the timed calls begin.

A cold-cache run needs empty caches chosen before torch is imported, so it
starts a host of its own for each variant (one compile each). The host never
touches a GPU: CUDA is initialised in the child, after the fork.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO

from .. import protocol

#: The worker's flag that makes it a compile host.
HOST_FLAG = "--compile-host"
_READY = "host ready"
_CHILD = "host child "
_DONE = "host done "


class CompileHostError(RuntimeError):
    """The host or its child failed; the message says how, in words."""


class CompileHost:
    """The worker's end of a compile host: start it, ask for compile times, close it."""

    def __init__(
        self,
        command: Sequence[str],
        env: dict[str, str],
        cwd: str | None,
        stop: threading.Event,
        timeout_s: float = 3600.0,
    ):
        self.stop = stop
        self.timeout_s = timeout_s
        self._buffer = b""
        self._child: int | None = None
        self.proc = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None,
            env=env, cwd=cwd, start_new_session=True,
        )
        self._ready = False

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def compile_s(self, config_json: str, variant: str) -> float:
        """Seconds of ``variant``'s first call in a child forked from the host."""
        deadline = time.monotonic() + self.timeout_s
        assert self.proc.stdin is not None
        while not self._ready:
            if self._line(deadline, variant) == _READY:
                self._ready = True
        try:
            request = json.dumps({"variant": variant, "config": config_json})
            self.proc.stdin.write(request.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise CompileHostError(self._gone(variant)) from None
        result: protocol.Event | None = None
        while True:
            line = self._line(deadline, variant)
            if line.startswith(_CHILD):
                self._child = int(line[len(_CHILD):])
            elif line.startswith(_DONE):
                self._child = None
                break
            elif line != _READY:
                try:
                    result = protocol.decode(line)
                except Exception:  # noqa: BLE001 - a stray line is not a result
                    continue
        if isinstance(result, protocol.CompiledEvent):
            return result.compile_s
        if isinstance(result, protocol.ErrorEvent):
            raise CompileHostError(result.message)
        raise CompileHostError(f"the isolated compile of {variant} reported nothing")

    def _line(self, deadline: float, variant: str) -> str:
        """The host's next line; raises if the run stops, the host dies or time runs out."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            if self.stop.is_set() or time.monotonic() > deadline:
                self.close()
                raise CompileHostError(f"the isolated compile of {variant} was stopped")
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise CompileHostError(self._gone(variant))
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace").strip()

    def _gone(self, variant: str) -> str:
        code = self.proc.poll()
        if code is None:
            self.close()
            code = self.proc.returncode
        return f"the process timing {variant}'s compile ended early (exit code {code})"

    def close(self) -> None:
        """Kill any child still compiling, then the host (both with their own children)."""
        for pgid in (self._child, self.proc.pid):
            if pgid is None:
                continue
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._child = None
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass


def host_main(out: IO[str]) -> int:
    """``--compile-host``: import torch and the engine once, then fork a child per request."""
    from .runner import first_call_ms

    _import_what_a_child_imports_before_its_clock()

    def send(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    send(_READY)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: time one first call, report it, leave
            code = 3
            try:
                os.setsid()
                code = _time_one(out, request["variant"], request["config"], first_call_ms)
            finally:
                try:
                    out.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        send(f"{_CHILD}{pid}")
        _, status = os.waitpid(pid, 0)
        send(f"{_DONE}{os.waitstatus_to_exitcode(status)}")
    return 0


def _import_what_a_child_imports_before_its_clock() -> None:
    """Imports that every fresh compile process made before its first call's clock started.

    ``first_call_ms`` lists the Inductor modes (``torch._inductor``, which imports
    ``torch._dynamo``) and calls ``torch.compile(...)``, which for an Inductor mode
    imports ``compile_fx`` (other backends never import it) — all before ``t0``.
    Nothing here starts a thread or a process, so forking after it is safe.
    """
    from .environment import compile_modes

    compile_modes()
    try:
        import torch._inductor.compile_fx  # noqa: F401
    except Exception:  # noqa: BLE001 - a torch without it imports nothing here
        pass


def _time_one(out: IO[str], variant: str, config_json: str, first_call_ms) -> int:  # noqa: ANN001
    from ..config import BenchmarkConfig

    try:
        config = BenchmarkConfig.from_json(config_json)
        if config.backend_modules:
            from .backends import load_backend_modules

            load_backend_modules(config.backend_modules)
        ms = first_call_ms(config, variant)
    except Exception as exc:  # noqa: BLE001 - reported to the worker
        out.write(protocol.encode(protocol.ErrorEvent(
            kind=protocol.ErrorKind.COMPILE_FAILED, message=str(exc)[:1000], variant=variant
        )) + "\n")
        return 3
    out.write(protocol.encode(protocol.CompiledEvent(
        variant=variant, compile_s=ms / 1000.0, first_call_ms=ms, compile_timing="isolated"
    )) + "\n")
    return 0
