"""The clock around one call: nothing but the call and the synchronisation that ends it.

:class:`CallTimer` reads the host clock (``perf_counter_ns``) before and after
a call. On CUDA with events it takes two figures from two calls:

- *wall time*: the host clock around a plain call, ended by synchronising on
  an event recorded after it (the same event pair also gives the *GPU span*:
  start to end of the call as the idle GPU saw it, launch gaps included);
- *device time*: kernel time, from a **busy-stream event pair**. A
  ``torch.cuda._sleep`` kernel sized to outlast the call's host launch keeps
  the stream busy while the start event, the call's kernels and the end event
  are enqueued, so the events bracket the kernels running back to back, not
  the CPU launching them.

Whether the sleep did outlast the launch is read from the start event itself
(queried once the call has returned: still pending means the stream was still
asleep), per sample; a sample it did not cover counts in ``uncovered`` and
holds launch gaps (a host synchronisation inside the model, such as
``.item()``, makes every sample so). The sleep's cycles per ms are calibrated
again once the clocks are warm (:meth:`CallTimer.recalibrate`, after the
warm-up): calibrated at an idle clock, a boosted GPU sleeps shorter.

The sleep would inflate the wall time of the call it precedes, hence the two
calls. In cold-L2 mode the cache is flushed before each of them
(``between_calls``: the runner flushes before the first, the timer again
before the second), so the device figure is as cold as the wall figure. The harness floor — the same timer around a callable that does nothing
— is what the timer itself costs; every wall sample includes it once.
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from .turns import SETTLE_S

#: Calls of the empty callable that give the harness floor.
FLOOR_CALLS = 200

#: The sleep before a device-timed call lasts this many times the call's host launch time,
SLEEP_FACTOR = 2.0
#: and at least this long (ms) — enqueueing the start event takes a few µs,
SLEEP_MIN_MS = 0.05
#: and at most this long (ms): a launch longer than half of it is not covered (see ``uncovered``).
SLEEP_MAX_MS = 50.0

#: ``_sleep`` cycles per calibration run, and runs (the two fastest and two slowest dropped).
CALIBRATION_CYCLES = 1_000_000
CALIBRATION_RUNS = 10
#: A short sleep that keeps the stream busy while a calibration run is enqueued.
CALIBRATION_LEAD_CYCLES = 100_000


def _noop() -> None:
    return None


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Python's garbage collector off during a timed block (as ``timeit`` does)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def cycles_per_ms(cycles: int, elapsed_ms: Sequence[float], trim: int = 2) -> float:
    """``_sleep`` cycles per ms from the elapsed times of sleeps of ``cycles`` each.

    As torch's own tests calibrate it: the mean of the per-run rates with the
    ``trim`` highest and lowest dropped (where enough runs remain). Raises
    ValueError without one positive, finite elapsed time.
    """
    rates = sorted(cycles / e for e in elapsed_ms if math.isfinite(e) and e > 0)
    if not rates:
        raise ValueError("no usable _sleep calibration run")
    if len(rates) > 2 * trim:
        rates = rates[trim : len(rates) - trim]
    return statistics.fmean(rates)


def sleep_ms_for(
    launch_ms: float | None,
    factor: float = SLEEP_FACTOR,
    min_ms: float = SLEEP_MIN_MS,
    max_ms: float = SLEEP_MAX_MS,
) -> float:
    """How long the stream sleeps before a device-timed call whose host launch takes ``launch_ms``."""
    if launch_ms is None or not math.isfinite(launch_ms) or launch_ms < 0:
        launch_ms = 0.0
    return min(max_ms, max(min_ms, factor * launch_ms))


def sleep_cycles(
    launch_us: float | None,
    per_ms: float,
    factor: float = SLEEP_FACTOR,
    min_ms: float = SLEEP_MIN_MS,
    max_ms: float = SLEEP_MAX_MS,
) -> int:
    """``_sleep`` cycles that keep the stream busy for ≈ ``factor`` × the host launch time.

    ``launch_us``: host launch time of the call in µs (None: unknown, the
    minimum); ``per_ms``: the calibrated cycles per ms. The sleep lasts at
    least ``min_ms`` and at most ``max_ms``.
    """
    if not (math.isfinite(per_ms) and per_ms > 0):
        raise ValueError(f"cycles per ms must be positive, not {per_ms!r}")
    ms = sleep_ms_for(None if launch_us is None else launch_us / 1000.0, factor, min_ms, max_ms)
    return max(1, int(round(ms * per_ms)))


def event_sample_ms(elapsed_ms: float) -> float | None:
    """The device sample from an event pair's elapsed time: None where it is no time."""
    value = float(elapsed_ms)
    return value if math.isfinite(value) and value >= 0 else None


def launch_covered(launch_ms: float, sleep_ms: float) -> bool:
    """Whether the sleep outlasted the launch (host ms from the sleep's launch to the call's return)."""
    return launch_ms < sleep_ms


def settle(call: Callable[[], Any], sync: Callable[[], Any]) -> None:
    """Untimed calls before timed ones: one, then more until :data:`.turns.SETTLE_S` has
    passed since the first began (a model of tens of µs takes tens of calls to run at its
    steady speed again after a pause or a switch of variant)."""
    end = time.perf_counter_ns() + int(SETTLE_S * 1e9)
    while True:
        call()
        sync()
        if time.perf_counter_ns() >= end:
            return


class CallTimer:
    """Times single calls on one device (``use_events``: CUDA events as well).

    On CUDA with events, :meth:`time` runs the callable twice (a wall-timed
    call, then a busy-stream device-timed call); after it, ``last_span_ms``
    holds the GPU span of the wall-timed call and ``last_launch_ms`` its host
    launch time; ``uncovered`` counts device samples whose launch outlasted
    the sleep (those include launch gaps).
    """

    def __init__(self, device: torch.device, use_events: bool = False):
        self.device = device
        self.is_cuda = device.type == "cuda"
        self.use_events = use_events and self.is_cuda
        #: what the device figure is ("" without one)
        self.device_clock = "busy_stream_events" if self.use_events else ""
        self.last_span_ms: float | None = None
        self.last_launch_ms: float | None = None
        self.device_samples = 0
        self.uncovered = 0
        #: the longest sleep before a device-timed call, ms
        self.sleep_max_ms = SLEEP_MAX_MS
        #: run between the wall-timed and the device-timed call, untimed (cold L2: a flush)
        self.between_calls: Callable[[], Any] | None = None
        self._cycles_per_ms: float | None = None
        if self.use_events:
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)
            self._span_start = torch.cuda.Event(enable_timing=True)
            self._span_end = torch.cuda.Event(enable_timing=True)

    def sync(self) -> None:
        """Wait for the device: host timings then cover the work, not its launch."""
        if self.is_cuda:
            torch.cuda.synchronize(self.device)
        elif self.device.type == "mps":
            torch.mps.synchronize()

    def calibrate(self) -> float:
        """``torch.cuda._sleep`` cycles per ms on this device, measured once and kept."""
        if self._cycles_per_ms is None:
            if not (self.use_events and torch.cuda.is_available()):
                raise RuntimeError("calibrating _sleep needs CUDA events")
            start, end = self._start, self._end
            elapsed: list[float] = []
            for _ in range(CALIBRATION_RUNS):
                torch.cuda._sleep(CALIBRATION_LEAD_CYCLES)  # noqa: SLF001 - torch has no public GPU spin
                start.record()
                torch.cuda._sleep(CALIBRATION_CYCLES)  # noqa: SLF001 - torch has no public GPU spin
                end.record()
                end.synchronize()
                elapsed.append(float(start.elapsed_time(end)))
            self._cycles_per_ms = cycles_per_ms(CALIBRATION_CYCLES, elapsed)
        return self._cycles_per_ms

    def recalibrate(self) -> None:
        """Calibrate the sleep again (call once the clocks are warm: after the warm-up)."""
        if self.use_events:
            before, self._cycles_per_ms = self._cycles_per_ms, None
            try:
                self.calibrate()
            except (RuntimeError, ValueError):  # no usable run: the earlier calibration stays
                self._cycles_per_ms = before

    def counts(self) -> tuple[int, int]:
        """(device samples, of which uncovered) so far."""
        return self.device_samples, self.uncovered

    @property
    def host_only(self) -> bool:
        """Whether a call is timed by the host clock alone, with nothing to wait for (the CPU):
        then the timed loops read the clock around the call themselves (see
        :meth:`.BenchmarkRunner._calls`)."""
        return not self.use_events and not self.is_cuda and self.device.type != "mps"

    def time(self, fn: Callable[[], Any]) -> tuple[float, float | None]:
        """(host ms, device ms or None) of ``fn``: one call, or on CUDA with events two."""
        if self.use_events:
            wall = self._wall_call(fn)
            if self.between_calls is not None:
                self.between_calls()
                self.sync()
            return wall, self._device_call(fn)
        if self.is_cuda or self.device.type == "mps":
            sync = self.sync
            t0 = time.perf_counter_ns()
            fn()
            sync()
            t1 = time.perf_counter_ns()
            return (t1 - t0) / 1e6, None
        t0 = time.perf_counter_ns()
        fn()
        t1 = time.perf_counter_ns()
        return (t1 - t0) / 1e6, None

    def span(self, fn: Callable[[], Any]) -> tuple[float, float | None]:
        """(host ms, GPU span ms) of one plain call: events around it, the stream idle before."""
        if not self.use_events:
            return self.time(fn)[0], None
        wall = self._wall_call(fn)
        return wall, self.last_span_ms

    def _wall_call(self, fn: Callable[[], Any]) -> float:
        """Host ms of one plain call, ended on an event recorded after it."""
        start, end = self._span_start, self._span_end
        t0 = time.perf_counter_ns()
        start.record()
        fn()
        launched = time.perf_counter_ns()
        end.record()
        end.synchronize()
        t1 = time.perf_counter_ns()
        self.last_launch_ms = (launched - t0) / 1e6
        self.last_span_ms = event_sample_ms(start.elapsed_time(end))
        return (t1 - t0) / 1e6

    def _device_call(self, fn: Callable[[], Any]) -> float | None:
        """Kernel ms of one call, from a busy-stream event pair."""
        per_ms = self.calibrate()
        launch_ms = self.last_launch_ms
        launch_us = None if launch_ms is None else launch_ms * 1000.0
        cycles = sleep_cycles(launch_us, per_ms, max_ms=self.sleep_max_ms)
        start, end = self._start, self._end
        torch.cuda._sleep(cycles)  # noqa: SLF001 - torch has no public GPU spin
        start.record()
        fn()
        # the start event already passed: the stream woke before the launch ended (the
        # calibration is no proof: a warmer clock sleeps shorter, a host sync waits it out)
        covered = not start.query()
        end.record()
        end.synchronize()
        self.device_samples += 1
        if not covered:
            self.uncovered += 1
        return event_sample_ms(start.elapsed_time(end))

    def floor(self, calls: int = FLOOR_CALLS) -> tuple[float, float | None]:
        """Median (host ms, device ms) of the timer around an empty callable.

        The host floor is what every wall sample carries once: the clock reads,
        the call itself and (on CUDA) the event records and the wait on the end
        event. Subtract it only where a sample is well above it (see
        ``results.analysis.stats.floor_subtracted_speedup``).
        """
        host: list[float] = []
        device: list[float] = []
        counts = self.device_samples, self.uncovered
        between, self.between_calls = self.between_calls, None
        try:
            for _ in range(calls):
                h, d = self.time(_noop)
                host.append(h)
                if d is not None:
                    device.append(d)
        finally:
            self.between_calls = between
        self.device_samples, self.uncovered = counts
        return statistics.median(host), (statistics.median(device) if device else None)

    def pipelined(self, fn: Callable[[], Any], calls: int) -> float:
        """Mean ms per call of ``calls`` back-to-back calls with one synchronisation."""
        self.sync()
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        self.sync()
        return (time.perf_counter_ns() - t0) / 1e6 / max(1, calls)
