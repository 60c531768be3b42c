"""Noticing a frozen worker: its heartbeat stops, or its samples stop while it beats.

After ``hello`` a worker sends a ``heartbeat`` event every
:data:`protocol.HEARTBEAT_S` seconds from a thread of its own, apart from the
timing thread. :class:`WorkerWatch` reads every event the session receives and,
from a thread of its own, looks twice a second:

* **silence** — nothing at all for ``silence_warn_s`` (a stopped process,
  SIGSTOP, a host that went away, a call holding the interpreter): a warning
  at once; after ``silence_stop_s`` the run is stopped and kept *incomplete*.
* **no progress** — heartbeats come but, in a timed phase, no sample for
  ``sample_grace_s`` past the next expected one (the slowest recent call plus
  the sample batching interval): a warning; after ``stall_stop_s`` stopped the
  same way. A compile has its own budget (``compile_warn_s``,
  ``compile_stop_s``); what sends no samples (building, and the checks and
  diagnostics once a variant's planned calls are all measured) relies on the
  heartbeat alone.

Either warning is withdrawn with a line once the worker speaks again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core import protocol

#: Phases in which samples are expected as the calls go on.
_TIMED = (protocol.Phase.WARMUP, protocol.Phase.MEASURE)


@dataclass(frozen=True)
class WatchLimits:
    """Seconds before a warning and before the run is stopped, per kind of stall."""

    silence_warn_s: float = 5.0 * protocol.HEARTBEAT_S
    silence_stop_s: float = 120.0
    sample_grace_s: float = 5.0
    stall_stop_s: float = 300.0
    compile_warn_s: float = 900.0
    compile_stop_s: float = 3600.0


class WorkerWatch:
    """Watches one worker's events for silence and lost progress (see the module's text).

    ``warn(message)`` is called once per stall and ``recovered(message)`` when
    the worker speaks again; ``stop(message)`` once, when a limit is passed.
    All three are called from the watch's own thread.
    """

    def __init__(
        self,
        warn: Callable[[str], None],
        stop: Callable[[str], None],
        recovered: Callable[[str], None] | None = None,
        limits: WatchLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
        iterations: int | None = None,
    ):
        self.limits = limits or WatchLimits()
        self._warn = warn
        self._stop_cb = stop
        self._recovered = recovered
        self._clock = clock
        self._lock = threading.Lock()
        now = clock()
        self.last_event_at = now
        self.last_sample_at = now
        self.phase: str | None = None
        self.phase_started = now
        #: the slowest call of the latest samples batch (seconds)
        self.call_s = 0.0
        #: measured calls planned per variant (None: unknown, samples expected all through a phase)
        self.iterations = iterations
        self.variant: str | None = None
        self.measured: dict[str, int] = {}
        #: what the current warning is about (None: no warning out)
        self.warned: str | None = None
        self._warned_at = now
        self.stopped = False
        self._beating = False
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    # -- events (the session's thread) ------------------------------------------------------
    def saw(self, event: protocol.Event) -> None:
        """Take in one event from the worker."""
        now = self._clock()
        with self._lock:
            self.last_event_at = now
            if isinstance(event, protocol.HeartbeatEvent):
                self._beating = True
            elif isinstance(event, protocol.PhaseEvent) and event.variant:
                self.phase = str(event.phase)
                self.variant = event.variant
                self.phase_started = now
                self.last_sample_at = now
            elif isinstance(event, protocol.SamplesEvent):
                self.last_sample_at = now
                self.variant = event.variant
                if event.phase == protocol.Phase.MEASURE:
                    self.measured[event.variant] = self.measured.get(event.variant, 0) + len(event.wall_ms)
                if event.wall_ms:
                    finite = [w for w in event.wall_ms[-32:] if w == w]
                    self.call_s = max(finite) / 1000.0 if finite else self.call_s
            elif isinstance(event, (protocol.VariantDoneEvent, protocol.CompiledEvent)):
                self.last_sample_at = now
            warned = self.warned
            progress = not isinstance(event, protocol.HeartbeatEvent)
            if warned is not None and (warned == "silence" or progress):
                self.warned = None
            else:
                warned = None
            since = now - self._warned_at
        if warned is not None and self._recovered is not None:
            self._recovered(f"the worker responds again ({warned}, {since:.0f} s after the warning)")

    # -- the watch ----------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="compile-studio-worker-watch", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._done.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)

    def _loop(self) -> None:
        while not self._done.wait(0.5):
            self.check()
            if self.stopped:
                return

    def expected_gap_s(self) -> float:
        """The time from one samples event to the next, at the current call time."""
        return self.call_s + protocol.SAMPLE_BATCH_S

    def check(self) -> None:
        """Look once: warn or stop as the limits say (called by the watch's thread, or a test)."""
        now = self._clock()
        lim = self.limits
        with self._lock:
            if self.stopped:
                return
            silent = now - self.last_event_at
            since_sample = now - self.last_sample_at
            phase = self.phase
            if phase == protocol.Phase.MEASURE and self.iterations is not None and self.variant is not None \
                    and self.measured.get(self.variant, 0) >= self.iterations:
                phase = None  # its calls are all measured: checks and diagnostics send no samples
            in_phase = now - self.phase_started
            beating = self._beating
            warned = self.warned
        action: tuple[str, str, str] | None = None
        if beating and silent >= lim.silence_stop_s:
            action = ("stop", "silence", f"the worker sent nothing for {silent:.0f} s (stopped or hung): "
                              "the run was stopped and keeps what it measured")
        elif beating and silent >= lim.silence_warn_s:
            action = ("warn", "silence", f"the worker has sent nothing for {silent:.0f} s: it may be stopped "
                              f"(SIGSTOP), hung or cut off; the run stops after {lim.silence_stop_s:.0f} s "
                              "of silence")
        elif phase == protocol.Phase.COMPILE:
            if in_phase >= lim.compile_stop_s:
                action = ("stop", "long compile", f"the compile has run {in_phase:.0f} s: the run was stopped "
                                  "and keeps what it measured")
            elif in_phase >= lim.compile_warn_s:
                action = ("warn", "long compile", f"the compile has run {in_phase:.0f} s; the run stops after "
                                  f"{lim.compile_stop_s:.0f} s")
        elif phase in _TIMED:
            overdue = since_sample - self.expected_gap_s()
            if overdue >= lim.stall_stop_s:
                action = ("stop", "no samples", f"no sample for {since_sample:.0f} s though the worker is alive "
                                  "(a hung call?): the run was stopped and keeps what it measured")
            elif overdue >= lim.sample_grace_s:
                action = ("warn", "no samples", f"no sample for {since_sample:.0f} s though the worker is alive "
                                  f"(calls take {self.call_s * 1000:.3g} ms): a call may be hung; "
                                  f"the run stops after {lim.stall_stop_s:.0f} s")
        if action is None:
            return
        kind, what, message = action
        if kind == "stop":
            with self._lock:
                self.stopped = True
            self._stop_cb(message)
            return
        if warned is None:
            with self._lock:
                self.warned = what
                self._warned_at = now
            self._warn(message)
