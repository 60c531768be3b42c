"""Compile times from fresh processes, with the interpreter started ahead of the clock.

``compile_timing = "isolated"`` times each variant's first call in a process
that has done nothing else: what a new program pays for that variant.
Starting an interpreter and importing torch for each variant, one after the
other, costs seconds that belong to no measurement, so each compile gets a
**compile host** started ahead:

* the worker starts one host as it starts itself (``python -m
  compile_studio.worker --compile-host``) and, once the config says how many
  variants compile, one more for each further variant; they import side by
  side while the worker builds its model. A host imports torch, the engine,
  Dynamo and Inductor's mode list — what a fresh compile process imports
  before its clock starts, whatever the variant — says ``host ready`` and
  waits on stdin;
* before the first compile, every host is ready: no import runs beside a
  timed compile;
* each host takes **one** request (the variant and the run's config), times
  that variant's first call (build, compile, first run) in itself, prints a
  ``compiled`` (or ``error``) protocol event and exits. Nothing is forked and
  no host is used twice, so each time is a fresh process's, page for page;
* the worker closes any host left before the timed calls begin.

In a cold-cache run each host gets empty caches of its own, chosen before it
imports torch. A host never touches a GPU before its request.
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
from collections.abc import Callable, Sequence
from typing import IO

from ..core import protocol

#: The worker's flag that makes it a compile host.
HOST_FLAG = "--compile-host"
_READY = "host ready"


class CompileHostError(RuntimeError):
    """The host failed or was stopped; the message says how, in words."""


class CompileHost:
    """The worker's end of one compile host: start it, wait for it, ask for one compile time."""

    def __init__(
        self,
        command: Sequence[str],
        env: dict[str, str],
        cwd: str | None,
        stop: threading.Event,
        timeout_s: float = 3600.0,
        on_close: Callable[[], None] | None = None,
    ):
        self.stop = stop
        self.timeout_s = timeout_s
        self._on_close = on_close
        self._buffer = b""
        self.ready = False
        self.proc = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None,
            env=env, cwd=cwd, start_new_session=True,
        )

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_ready(self, what: str) -> None:
        """Until the host has made its imports; raises if it dies or the run stops."""
        deadline = time.monotonic() + self.timeout_s
        while not self.ready:
            if self._line(deadline, what) == _READY:
                self.ready = True

    def compile_s(self, config_json: str, variant: str, fallback_random: bool = False) -> float:
        """Seconds of ``variant``'s first call, timed in this host; the host is closed after.

        ``fallback_random``: compile as the run does for a random model (Inductor's random
        operators fall back to eager's).
        """
        try:
            self.wait_ready(variant)
            deadline = time.monotonic() + self.timeout_s
            assert self.proc.stdin is not None
            try:
                request = json.dumps(
                    {"variant": variant, "config": config_json, "fallback_random": fallback_random}
                )
                self.proc.stdin.write(request.encode() + b"\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                raise CompileHostError(self._gone(variant)) from None
            while True:
                line = self._line(deadline, variant)
                try:
                    event = protocol.decode(line)
                except Exception:  # noqa: BLE001 - a stray line is not a result
                    continue
                if isinstance(event, protocol.CompiledEvent):
                    return event.compile_s
                if isinstance(event, protocol.ErrorEvent):
                    raise CompileHostError(event.message)
        finally:
            self.close()

    def _line(self, deadline: float, what: str) -> str:
        """The host's next line; raises if the run stops, the host dies or time runs out."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            if self.stop.is_set() or time.monotonic() > deadline:
                self.close()
                raise CompileHostError(f"the isolated compile of {what} was stopped")
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise CompileHostError(self._gone(what))
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace").strip()

    def _gone(self, what: str) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self.close()
        return f"the process timing {what}'s compile ended without a result (exit code {code})"

    def close(self) -> None:
        """Kill the host with anything it started (Inductor's compile workers), once."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
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
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close()


def host_main(out: IO[str]) -> int:
    """``--compile-host``: make the pre-clock imports, then time the one variant asked for."""
    from . import runner  # noqa: F401 - torch and the engine, before ready

    _pre_clock_imports()
    out.write(_READY + "\n")
    out.flush()
    line = sys.stdin.readline()
    if not line.strip():
        return 0  # closed unused
    request = json.loads(line)
    return time_first_call(
        out, request["variant"], request["config"], bool(request.get("fallback_random"))
    )


def _pre_clock_imports() -> None:
    """Imports that a fresh compile process makes, for any variant, before its clock starts.

    ``first_call_ms`` lists the Inductor modes (``torch._inductor``, which imports
    ``torch._dynamo``) before ``t0`` whatever the variant. Nothing more: a module
    only some variants import (Inductor's ``compile_fx``) could hold what another
    backend imports inside its first call, and would take that off its clock.
    """
    from .environment import compile_modes

    compile_modes()


def time_first_call(
    out: IO[str], variant: str, config_json: str, fallback_random: bool = False
) -> int:
    """Time ``variant``'s first call under ``config_json``; one ``compiled`` or ``error``
    event on ``out``; the exit code (3: it failed)."""
    from ..core.config import BenchmarkConfig
    from .first_call import first_call_ms

    try:
        config = BenchmarkConfig.from_json(config_json)
        if config.backend_modules:
            from .backends import load_backend_modules

            load_backend_modules(config.backend_modules)
        ms = first_call_ms(config, variant, fallback_random)
    except Exception as exc:  # noqa: BLE001 - reported to the worker
        event: protocol.Event = protocol.ErrorEvent(
            kind=protocol.ErrorKind.COMPILE_FAILED, message=str(exc)[:1000], variant=variant
        )
        code = 3
    else:
        event = protocol.CompiledEvent(
            variant=variant, compile_s=ms / 1000.0, first_call_ms=ms, compile_timing="isolated"
        )
        code = 0
    out.write(protocol.encode(event) + "\n")
    out.flush()
    return code
