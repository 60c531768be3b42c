"""How far a run is, and how long it has left, from the events its worker sends (no Qt).

The estimate is built from what the run has shown of itself, not from the
share of calls done (a time-based warm-up runs many more calls than planned,
and the first calls are the slowest):

* timed calls left × the time one of that variant's timed calls takes (its
  latest calls' mean wall time, scaled by how much longer the worker spends
  per timed call than the call itself: sample bookkeeping, the pauses in
  which a window draws); a variant not yet timed is guessed from the warm-up
  calls seen last, or from the others';
* for a variant still warming up: what its warm-up has left (a number of
  calls, and at least ``warmup_min_ms``);
* compiles still to come are not guessed: the estimate says ``+ compiles``.

Once every timed call is in, nothing is left to count: the run checks the
outputs, collects its diagnostics and saves (:meth:`Progress.after_timing`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core import protocol
from ..core.config import BenchmarkConfig
from ..core.variants import compiled_variants

#: The longest gap between two batches of timed calls still counted as time spent timing them.
TIMED_GAP_S = 2.0


@dataclass
class _Variant:
    warm_calls: int = 0
    warm_ms: float = 0.0
    timed: int = 0
    timed_ms: float = 0.0
    #: the mean wall time (ms) of the latest batch of its calls (timed, else warm-up)
    recent_ms: float | None = None
    timed_recent: bool = False
    compiled: bool = False


class Progress:
    """How far a run is: calls done, the phase, an ETA and a fraction for a progress bar.

    Updated from the session's thread, read from any (plain attributes).
    Compile time is excluded from the estimate: a compile is shown as elapsed
    seconds instead.
    """

    def __init__(self, config: BenchmarkConfig, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self.config = config
        self.iterations = int(config.iterations)
        self.warmup = int(config.warmup)
        self.warmup_min_s = max(0, int(config.warmup_min_ms)) / 1000.0
        self.variants: dict[str, _Variant] = {v: _Variant() for v in config.variants}
        #: the variants that compile (eager and the A/A control do not)
        self._compiles = set(compiled_variants(config.variants))
        self.total = len(config.variants) * (config.iterations + config.warmup)
        self.done = 0
        self.variant = ""
        self.phase = "starting"
        self.started = clock()
        self.phase_started = self.started
        self.compile_spent_s = 0.0
        self.compiling_since: float | None = None
        #: when the last timed calls came in (None once something else came)
        self._timed_at: float | None = None
        #: seconds the worker spent per second of timed calls (bookkeeping, pauses)
        self._timed_wall_s = 0.0
        self._timed_clock_s = 0.0
        #: when every timed call was in (the checks, diagnostics and saving follow)
        self.timing_ended_at: float | None = None

    # -- events ------------------------------------------------------------------------------
    def update(self, event: protocol.Event) -> None:
        now = self._clock()
        if isinstance(event, protocol.PhaseEvent) and event.variant:
            if self.compiling_since is not None:
                self.compile_spent_s += now - self.compiling_since
                self.compiling_since = None
            self.variant = event.variant
            self.phase = str(event.phase)
            self.phase_started = now
            if event.phase == protocol.Phase.COMPILE:
                self.compiling_since = now
                self._timed_at = None
                v = self.variants.get(event.variant)
                if v is not None:
                    v.compiled = True
        elif isinstance(event, protocol.SamplesEvent):
            self._samples(event, now)
        elif isinstance(event, protocol.TurnEvent) and event.state == "end" and self._all_timed():
            self.timing_ended_at = self.timing_ended_at or now

    def _samples(self, event: protocol.SamplesEvent, now: float) -> None:
        n = len(event.wall_ms)
        self.done += n
        v = self.variants.get(event.variant)
        if v is None or not n:
            return
        walls = [float(w) for w in event.wall_ms if isinstance(w, (int, float)) and w == w and w >= 0]
        mean = sum(walls) / len(walls) if walls else None
        if event.phase == protocol.Phase.WARMUP:
            v.warm_calls += n
            v.warm_ms += sum(walls)
            if not v.timed_recent:
                v.recent_ms = mean
            self._timed_at = None
            return
        v.timed += n
        v.timed_ms += sum(walls)
        v.recent_ms, v.timed_recent = mean if mean is not None else v.recent_ms, True
        if self._timed_at is not None and now - self._timed_at <= TIMED_GAP_S:
            self._timed_clock_s += now - self._timed_at
            self._timed_wall_s += sum(walls) / 1000.0
        self._timed_at = now
        if self._all_timed() and self.timing_ended_at is None:
            self.timing_ended_at = now

    def _all_timed(self) -> bool:
        return bool(self.variants) and all(v.timed >= self.iterations for v in self.variants.values())

    # -- what it says --------------------------------------------------------------------------
    def compile_elapsed_s(self) -> float | None:
        """Seconds into the compile going on now; None when not compiling."""
        since = self.compiling_since
        return None if since is None else self._clock() - since

    def after_timing(self) -> bool:
        """Whether every timed call is in (the run checks, collects diagnostics and saves)."""
        return self.timing_ended_at is not None

    def after_timing_s(self) -> float:
        """Seconds since every timed call came in (0 before)."""
        return 0.0 if self.timing_ended_at is None else self._clock() - self.timing_ended_at

    def overhead(self) -> float:
        """How many seconds the worker spends per second of timed calls (1–3; 1.1 until seen)."""
        if self._timed_wall_s <= 0.05:
            return 1.1
        return min(3.0, max(1.0, self._timed_clock_s / self._timed_wall_s))

    def compiles_left(self) -> bool:
        """Whether a variant still has its compile ahead."""
        return any(not self.variants[v].compiled and self.variants[v].timed == 0
                   for v in self._compiles if v in self.variants)

    def eta_s(self) -> float | None:
        """Seconds of calls left (compiles excluded); None until a call's time is known."""
        if self.after_timing():
            return 0.0
        known = [v.recent_ms for v in self.variants.values() if v.recent_ms is not None]
        if not known:
            return None
        guess = sorted(known)[len(known) // 2]
        scale = self.overhead()
        left = 0.0
        for v in self.variants.values():
            per_call_s = (v.recent_ms if v.recent_ms is not None else guess) / 1000.0
            if v.timed == 0:
                warm_left_calls = max(0, self.warmup - v.warm_calls) * per_call_s
                warm_left_time = max(0.0, self.warmup_min_s - v.warm_ms / 1000.0)
                left += max(warm_left_calls, warm_left_time)
            left += max(0, self.iterations - v.timed) * per_call_s * scale
        return left

    def fraction(self) -> float:
        """How far the run is (0–1): time spent on calls over that plus the estimate left."""
        if self.after_timing():
            return 1.0
        eta = self.eta_s()
        if eta is None:
            return 0.0
        spent = sum(v.warm_ms for v in self.variants.values()) / 1000.0 + self._timed_seconds()
        return spent / (spent + eta) if spent + eta > 0 else 0.0

    def _timed_seconds(self) -> float:
        """Seconds the timed calls so far took, with the worker's own time per call."""
        return sum(v.timed_ms for v in self.variants.values()) / 1000.0 * self.overhead()
