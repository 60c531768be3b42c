"""The timed loops the stages share: the app's loop, the outside references, a busy-stream pair.

Each references a figure by another method than the app's: ``Timer.blocked_autorange``,
Triton's ``do_bench`` (median, L2 cleared before each call) and
``do_bench_cudagraph``, the profiler's kernel durations, and a busy-stream
event pair written here, apart from the app's own timer.
"""

from __future__ import annotations

import gc
import inspect
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from compile_studio.engine.cache_flush import CacheFlush
from compile_studio.engine.timing import CallTimer

#: ``_sleep`` cycles of one calibration run, and runs.
CALIBRATION_CYCLES = 1_000_000
CALIBRATION_RUNS = 7
#: The stream sleeps this many times the host launch time of the calls it covers,
BUSY_FACTOR = 3.0
#: and at least this long (ms).
BUSY_MIN_MS = 0.2


def call_supported(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with the keyword arguments ``fn`` does not take left out."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
    return fn(*args, **kwargs)


@dataclass
class LoopFigures:
    """Medians and minima of one app loop (host ms; device ms where the timer gives them)."""

    host_median: float
    host_min: float
    device_median: float | None
    device_min: float | None


def app_loop(
    timer: CallTimer, fn: Callable[[], Any], calls: int, flush: CacheFlush | None = None
) -> LoopFigures:
    """The app's timed loop: CallTimer around each call, the cache flushed before it if asked."""
    host: list[float] = []
    device: list[float] = []
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    # as the run does in cold-L2 mode: the timer flushes again before its device-timed call
    between = timer.between_calls if hasattr(timer, "between_calls") else None
    timer.between_calls = flush.evict if flush is not None else None
    try:
        for _ in range(max(1, calls)):
            if flush is not None:
                flush.evict()
                timer.sync()
            h, d = timer.time(fn)
            host.append(h)
            if d is not None:
                device.append(d)
    finally:
        timer.between_calls = between
        if enabled:
            gc.enable()
    return LoopFigures(
        statistics.median(host), min(host),
        statistics.median(device) if device else None, min(device) if device else None,
    )


def warm_up(fn: Callable[[], Any], timer: CallTimer, seconds: float, calls: int = 3) -> None:
    """``calls`` calls, then more until ``seconds`` have passed; ends synchronised."""
    end = time.monotonic() + seconds
    for _ in range(calls):
        fn()
    while time.monotonic() < end:
        fn()
    timer.sync()


def timer_ms(fn: Callable[[], Any], min_run_time: float, threads: int) -> float:
    """``torch.utils.benchmark.Timer.blocked_autorange`` median, ms."""
    from torch.utils import benchmark

    m = benchmark.Timer(
        stmt="fn()", globals={"fn": fn}, num_threads=threads
    ).blocked_autorange(min_run_time=min_run_time)
    return float(m.median) * 1e3


def do_bench_ms(fn: Callable[[], Any], rep_ms: int) -> float:
    """Triton's ``do_bench`` median, ms (the L2 cleared before each call)."""
    from triton.testing import do_bench

    return float(call_supported(do_bench, fn, warmup=25, rep=rep_ms, return_mode="median"))


def do_bench_cudagraph_ms(fn: Callable[[], Any], rep_ms: int) -> float:
    """Triton's ``do_bench_cudagraph`` median, ms: ``fn`` captured into a CUDA graph of its own.

    Never for a callable that replays a CUDA graph itself: that capture would be nested.
    """
    from triton.testing import do_bench_cudagraph

    with torch.cuda.stream(torch.cuda.Stream()):
        value = call_supported(do_bench_cudagraph, fn, rep=rep_ms, return_mode="median")
    torch.cuda.synchronize()
    return float(value)


def sleep_cycles_per_ms(runs: int = CALIBRATION_RUNS) -> float:
    """``torch.cuda._sleep`` cycles per ms: the median of ``runs`` event-timed sleeps."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    rates: list[float] = []
    for _ in range(runs):
        torch.cuda._sleep(CALIBRATION_CYCLES // 10)  # the stream is busy while the pair is enqueued
        start.record()
        torch.cuda._sleep(CALIBRATION_CYCLES)
        end.record()
        end.synchronize()
        elapsed = float(start.elapsed_time(end))
        if elapsed > 0:
            rates.append(CALIBRATION_CYCLES / elapsed)
    if not rates:
        raise RuntimeError("no usable _sleep calibration run")
    return statistics.median(rates)


@dataclass
class BusyPair:
    """Kernel ms per call from event pairs around ``calls`` calls on a busy stream."""

    per_call_ms: float
    repeats: list[float]
    #: how many repeats the sleep outlasted the host launch of (the others include launch gaps)
    covered: int
    sleep_ms: float
    launch_ms: float


def busy_pair_ms(
    fn: Callable[[], Any], calls: int, repeats: int, cycles_per_ms: float
) -> BusyPair:
    """Events around ``calls`` back-to-back calls, enqueued behind a ``_sleep`` kernel.

    The sleep lasts :data:`BUSY_FACTOR` × the host launch time of the calls, so
    the start event, the kernels and the end event are all queued before the GPU
    reaches them: the pair brackets the kernels, not the CPU launching them.
    """
    calls = max(1, calls)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    launch_ms = (time.perf_counter() - t0) * 1e3
    torch.cuda.synchronize()
    sleep_ms = max(BUSY_MIN_MS, BUSY_FACTOR * launch_ms)
    cycles = max(1, int(round(sleep_ms * cycles_per_ms)))
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    values: list[float] = []
    covered = 0
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        torch.cuda._sleep(cycles)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        launched_ms = (time.perf_counter() - t0) * 1e3
        end.synchronize()
        covered += launched_ms < sleep_ms
        values.append(float(start.elapsed_time(end)) / calls)
    return BusyPair(statistics.median(values), values, covered, sleep_ms, launch_ms)


def warm_profiler() -> None:
    """One short CUDA profile, so that CUPTI is set up before any CUDA graph is recorded
    (kernels of graphs recorded earlier may not be traced)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]):
        torch.ones(8, device="cuda").add_(1)
        torch.cuda.synchronize()


@dataclass
class KernelTime:
    """The profiler's GPU activity per call: kernel (and memcpy/memset) time and count."""

    per_call_ms: float
    kernels_per_call: float
    names: list[str]


def profiler_kernel_ms(fn: Callable[[], Any], calls: int) -> KernelTime:
    """Sum of the durations of the GPU activities the profiler records over ``calls`` calls, per call.

    User annotations on the GPU timeline (ranges, not work) are left out.
    """
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    calls = max(1, calls)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total_us = 0.0
    count = 0
    names: dict[str, int] = {}
    for e in prof.events():
        if e.device_type != DeviceType.CUDA or getattr(e, "is_user_annotation", False):
            continue
        total_us += float(e.time_range.elapsed_us())
        count += 1
        names[e.name] = names.get(e.name, 0) + 1
    top = sorted(names, key=lambda n: -names[n])[:8]
    return KernelTime(total_us / 1e3 / calls, count / calls, [n[:80] for n in top])
