"""The GPU figures' pure parts, and their CUDA glue against stand-ins: busy-stream device time,
floor-subtracted speedup, CUDA-graph pool memory, CUDA-graph skip reasons, no GPU clock without NVML."""

from __future__ import annotations

import logging
import math
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from compile_studio.engine import clocks, cudagraphs, memory, timing
from compile_studio.engine.clocks import NO_GPU_CLOCK, NO_GPU_CLOCK_HANDLE, ClockProbe, ClockReading
from compile_studio.engine.cudagraphs import CudagraphSkipLog, metrics_reasons, skip_reason
from compile_studio.engine.memory import PeakMeter, private_pool_bytes, private_pool_growth
from compile_studio.engine.timing import (
    CallTimer,
    cycles_per_ms,
    event_sample_ms,
    launch_covered,
    sleep_cycles,
    sleep_ms_for,
)
from compile_studio.results.analysis.stats import floor_subtracted_speedup

# -- busy-stream device time: pure parts --------------------------------------------------


def test_cycles_per_ms_is_the_trimmed_mean_rate():
    assert cycles_per_ms(1_000_000, [0.5] * 10) == pytest.approx(2e6)
    # the two fastest and two slowest runs are dropped (first-call set-up, interruptions)
    assert cycles_per_ms(1_000_000, [0.5] * 6 + [0.01, 0.02, 9.0, 7.0]) == pytest.approx(2e6)
    # too few runs to trim: all of them; unusable times are left out
    assert cycles_per_ms(1_000, [1.0, 0.5, 0.0, -1.0, math.nan]) == pytest.approx(1500.0)
    with pytest.raises(ValueError):
        cycles_per_ms(1_000, [0.0, math.inf])


def test_sleep_is_twice_the_launch_within_its_bounds():
    per_ms = 2e6
    assert sleep_cycles(100.0, per_ms) == 400_000  # 100 µs launch → 0.2 ms sleep
    assert sleep_cycles(1.0, per_ms) == round(timing.SLEEP_MIN_MS * per_ms)
    assert sleep_cycles(None, per_ms) == round(timing.SLEEP_MIN_MS * per_ms)
    assert sleep_cycles(-5.0, per_ms) == round(timing.SLEEP_MIN_MS * per_ms)
    assert sleep_cycles(10_000_000.0, per_ms) == round(timing.SLEEP_MAX_MS * per_ms)
    assert sleep_cycles(300.0, per_ms, factor=3.0, min_ms=0.0, max_ms=1.0) == 1_800_000
    assert sleep_ms_for(0.25) == pytest.approx(0.5)
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError):
            sleep_cycles(100.0, bad)


def test_event_pair_elapsed_becomes_the_sample():
    assert event_sample_ms(0.125) == 0.125
    assert event_sample_ms(0) == 0.0
    assert event_sample_ms(-0.001) is None
    assert event_sample_ms(math.nan) is None
    assert launch_covered(0.1, 0.2) and not launch_covered(0.3, 0.2)


# -- busy-stream device time: the CUDA path against a simulated stream ----------------------


class _Stream:
    """One CUDA stream in order: sleeps and kernels take device time; events read the clock.

    The host launches with a cost per launch (``launch_ms``); a kernel starts when both
    the host has launched it and the stream has finished what was queued before it.
    """

    CYCLES_PER_MS = 2e6

    def __init__(self, kernel_ms: float, kernels: int, launch_ms: float):
        self.kernel_ms, self.kernels, self.launch_ms = kernel_ms, kernels, launch_ms
        self.host = 0.0  # host clock, ms
        self.gpu = 0.0  # when the stream is free, ms
        self.log: list[str] = []

    def _enqueue(self, duration: float) -> None:
        self.host += self.launch_ms
        self.gpu = max(self.gpu, self.host) + duration

    def sleep(self, cycles: int) -> None:
        self.log.append("sleep")
        self._enqueue(cycles / self.CYCLES_PER_MS)

    def call(self) -> None:
        self.log.append("call")
        for _ in range(self.kernels):
            self._enqueue(self.kernel_ms)

    def sync(self) -> None:
        self.host = max(self.host, self.gpu)


def _fake_cuda(monkeypatch: pytest.MonkeyPatch, stream: _Stream) -> None:
    class Event:
        def __init__(self, enable_timing: bool = False):
            self.at: float | None = None

        def record(self) -> None:
            stream.log.append("record")
            stream._enqueue(0.0)
            self.at = stream.gpu

        def synchronize(self) -> None:
            stream.log.append("event_sync")
            stream.sync()

        def query(self) -> bool:
            return self.at is not None and stream.host >= self.at

        def elapsed_time(self, end: Event) -> float:
            assert self.at is not None and end.at is not None
            return end.at - self.at

    def device_wide_sync(*_: Any) -> None:
        raise AssertionError("the event path waits on its end event, not the whole device")

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "_sleep", stream.sleep)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", device_wide_sync)
    monkeypatch.setattr(timing.time, "perf_counter_ns", lambda: int(stream.host * 1e6))


def test_device_time_is_kernel_time_and_wall_time_comes_from_the_plain_call(monkeypatch):
    # launch-bound: 20 kernels of 0.01 ms, each launch 0.02 ms of host time
    stream = _Stream(kernel_ms=0.01, kernels=20, launch_ms=0.02)
    _fake_cuda(monkeypatch, stream)
    timer = CallTimer(torch.device("cuda", 0), use_events=True)
    assert timer.calibrate() == pytest.approx(_Stream.CYCLES_PER_MS, rel=1e-6)
    stream.log.clear()
    wall, device = timer.time(stream.call)
    assert stream.log == [
        "record", "call", "record", "event_sync",  # the plain, wall-timed call
        "sleep", "record", "call", "record", "event_sync",  # the busy-stream, device-timed call
    ]
    assert device == pytest.approx(20 * 0.01)  # the kernels alone
    # the plain call's span is its launch: today's figure, under its own name
    assert timer.last_span_ms == pytest.approx(20 * 0.02 + 0.02, rel=0.05)
    assert wall >= timer.last_span_ms
    assert timer.last_launch_ms == pytest.approx(0.42)
    assert timer.uncovered == 0 and timer.device_samples == 1
    assert timer.span(stream.call)[1] == pytest.approx(timer.last_span_ms)


def test_a_launch_longer_than_the_capped_sleep_is_counted_uncovered(monkeypatch):
    stream = _Stream(kernel_ms=0.01, kernels=20, launch_ms=0.02)
    _fake_cuda(monkeypatch, stream)
    timer = CallTimer(torch.device("cuda", 0), use_events=True)
    timer.sleep_max_ms = 0.1
    _, device = timer.time(stream.call)
    assert timer.uncovered == 1
    assert device is not None and device > 20 * 0.01 * 1.5  # launch gaps show


def test_floor_on_the_event_path_keeps_the_sample_counts(monkeypatch):
    stream = _Stream(kernel_ms=0.01, kernels=1, launch_ms=0.001)
    _fake_cuda(monkeypatch, stream)
    timer = CallTimer(torch.device("cuda", 0), use_events=True)
    host, device = timer.floor(calls=5)
    assert host > 0 and device == pytest.approx(0.0)
    assert timer.device_samples == 0


def test_cpu_path_is_one_call_without_events():
    timer = CallTimer(torch.device("cpu"), use_events=True)
    calls = []
    wall, device = timer.time(lambda: calls.append(1))
    assert calls == [1] and device is None and wall >= 0
    assert not timer.use_events and timer.device_clock == ""


# -- harness floor ---------------------------------------------------------------------------


def test_floor_subtracted_speedup_on_numbers():
    assert floor_subtracted_speedup(10.0, 5.0, 1.0) == pytest.approx(9 / 4)
    assert floor_subtracted_speedup(3.0, 2.0, 1.0) == pytest.approx(2.0)
    assert floor_subtracted_speedup(3.0, 1.9, 1.0) is None  # variant within 2x the floor
    assert floor_subtracted_speedup(1.9, 3.0, 1.0) is None
    assert floor_subtracted_speedup(3.0, 1.9, 1.0, margin=1.5) == pytest.approx(2 / 0.9)
    assert floor_subtracted_speedup(3.0, 2.0, 0.0) is None
    assert floor_subtracted_speedup(math.nan, 2.0, 0.5) is None


class _Clock:
    """A host clock that moves only when a callable says it took time (no scheduling in it)."""

    def __init__(self) -> None:
        self.ns = 0

    def read(self) -> int:
        return self.ns

    def spend(self, ms: float) -> None:
        self.ns += int(ms * 1e6)


class _InflatedTimer(CallTimer):
    """A timer whose own cost is 0.5 ms: the floor every sample carries, inflated."""

    def __init__(self, device: torch.device, clock: _Clock):
        super().__init__(device)
        self.clock = clock

    def time(self, fn):  # type: ignore[no-untyped-def]
        def with_overhead() -> None:
            self.clock.spend(0.5)
            fn()

        return super().time(with_overhead)


def test_floor_subtraction_recovers_a_known_two_to_one_ratio(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(timing.time, "perf_counter_ns", clock.read)
    timer = _InflatedTimer(torch.device("cpu"), clock)
    floor, _ = timer.floor(calls=40)
    eager = [timer.time(lambda: clock.spend(2.0))[0] for _ in range(5)]
    variant = [timer.time(lambda: clock.spend(1.0))[0] for _ in range(5)]
    eager_ms, variant_ms = sorted(eager)[2], sorted(variant)[2]
    raw = eager_ms / variant_ms
    subtracted = floor_subtracted_speedup(eager_ms, variant_ms, floor)
    assert floor == pytest.approx(0.5)
    assert raw == pytest.approx(2.5 / 1.5)  # the floor pulls the raw ratio towards 1
    assert subtracted == pytest.approx(2.0)


# -- CUDA-graph pools --------------------------------------------------------------------------


def _seg(pool: tuple[int, int], size: int, device: int = 0) -> dict[str, Any]:
    return {"device": device, "address": 0, "total_size": size, "allocated_size": 0,
            "active_size": 0, "stream": 0, "segment_type": "large", "segment_pool_id": pool,
            "blocks": []}


def test_private_pool_bytes_and_growth_from_snapshot_segments():
    segments = [_seg((0, 0), 1 << 30), _seg((1, 0), 2 << 20), _seg((1, 0), 4 << 20),
                _seg((2, 1), 8 << 20), _seg((3, 0), 16 << 20, device=1)]
    assert private_pool_bytes(segments, 0) == {(1, 0): 6 << 20, (2, 1): 8 << 20}
    assert private_pool_bytes(segments) == {(1, 0): 6 << 20, (2, 1): 8 << 20, (3, 0): 16 << 20}
    assert private_pool_bytes([{"total_size": 5, "segment_pool_id": [4, 0]}]) == {(4, 0): 5}
    before = {(1, 0): 6 << 20}
    after = {(1, 0): 10 << 20, (2, 1): 8 << 20}
    assert private_pool_growth(before, after) == (4 << 20) + (8 << 20)  # growth + a new pool
    assert private_pool_growth(after, before) == 0
    assert private_pool_growth({}, {}) == 0


class _FakeAllocator:
    """The caching allocator as PeakMeter reads it: allocated bytes, their peak, the segments."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, allocated: int):
        self.allocated = self.peak = allocated
        self.segments: list[dict[str, Any]] = [_seg((0, 0), 1 << 30)]
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "synchronize", lambda *_: None)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", self.reset)
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda *_: self.allocated)
        monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *_: self.peak)
        monkeypatch.setattr(torch.cuda.memory, "_snapshot", lambda *_: {"segments": self.segments})

    def reset(self, *_: Any) -> None:
        self.peak = self.allocated

    def alloc(self, n: int) -> None:
        self.allocated += n
        self.peak = max(self.peak, self.allocated)

    def free(self, n: int) -> None:
        self.allocated -= n


def _record(meter: PeakMeter, fake: _FakeAllocator, name: str, graph: int, pool_grows: int) -> None:
    """One CUDA-graph variant's build, warm-up call, recording call (``graph`` bytes), window."""
    meter.mark_built(name)
    meter.mark_recording(name)
    fake.alloc(graph)  # the recording allocates in the private pool ...
    if pool_grows:
        fake.segments = fake.segments + [_seg((1, 0), pool_grows)]
    fake.free(graph - (1 << 20))  # ... and frees its intermediates back to it
    meter.mark_recorded(name)
    meter.start()
    meter.stop(name)  # the replays: nothing allocated in the window


def test_two_cuda_graph_variants_each_count_their_recording(monkeypatch):
    """torch's one graph pool per device and thread: the second variant records into the first's.

    Its pool hardly grows, yet it needs its own memory: each variant's figure is the
    allocated peak of its recording, as eager's is the allocated peak of its window.
    """
    fake = _FakeAllocator(monkeypatch, 100 << 20)
    meter = PeakMeter(torch.device("cuda", 0))
    assert meter.kind == "cuda_allocator_peak"
    meter.start()
    fake.alloc(40 << 20)
    fake.free(40 << 20)
    meter.stop("eager")
    _record(meter, fake, "reduce-overhead", 60 << 20, pool_grows=64 << 20)
    # the first variant is done (deleted); the next one reuses the freed pool
    fake.free(1 << 20)
    _record(meter, fake, "max-autotune", 50 << 20, pool_grows=0)
    assert meter.peak("eager") == 40 << 20
    assert meter.peak("reduce-overhead") == 60 << 20
    assert meter.peak("max-autotune") == 50 << 20  # not ~0 B
    assert meter.pool_bytes == {"reduce-overhead": 64 << 20, "max-autotune": 0}
    assert meter.kind_of("eager") == "cuda_allocator_peak"
    assert meter.kind_of("max-autotune") == "cuda_allocator_peak+graph_recording"
    # a variant without graphs (no recording call): its figure is the window's alone
    meter.mark_built("default")
    meter.mark_recorded("default")
    meter.start()
    fake.alloc(3 << 20)
    meter.stop("default")
    assert meter.peak("default") == 3 << 20 and meter.kind_of("default") == "cuda_allocator_peak"
    # graphs skipped: the recording call is a plain call, counted once, not twice
    meter.mark_recording("skipped")
    fake.alloc(5 << 20)
    fake.free(5 << 20)
    meter.mark_recorded("skipped")
    meter.start()
    fake.alloc(5 << 20)
    meter.stop("skipped")
    assert meter.peak("skipped") == 5 << 20


def test_pool_marks_are_harmless_off_cuda():
    meter = PeakMeter(torch.device("cpu"))
    meter.mark_built("eager")
    meter.mark_recorded("eager")
    meter.mark_recorded("never-built")
    meter.mark_recording("eager")
    assert meter.pool_bytes == {} and meter.graph_bytes == {} and meter.peak("eager") is None
    meter.start()
    meter.stop("eager")
    assert meter.peak("eager") == meter.window_peak("eager")
    assert memory.DEFAULT_POOL == (0, 0)


# -- CUDA-graph skip reasons -------------------------------------------------------------------


@pytest.fixture
def skip_counter():
    """torch's cudagraph_skips counter, put back after the test."""
    from torch._dynamo.utils import counters

    saved = counters["inductor"].get("cudagraph_skips", 0)
    yield counters
    counters["inductor"]["cudagraph_skips"] = saved


def test_the_installed_torch_logs_skips_where_the_log_listens():
    from torch._dynamo.utils import CompilationMetrics, get_compilation_metrics
    from torch._inductor import cudagraph_utils

    assert cudagraph_utils.cudagraphs_log.name in cudagraphs._LOGGERS
    assert callable(cudagraph_utils.log_cudagraph_skip_and_bump_counter)
    assert "cudagraph_skip_reason" in {f.name for f in CompilationMetrics.__dataclass_fields__.values()}
    assert isinstance(get_compilation_metrics(), list)


def test_torchs_own_skip_call_is_heard_and_counted_once(skip_counter):
    from torch._inductor.cudagraph_utils import log_cudagraph_skip_and_bump_counter

    log = CudagraphSkipLog()
    try:
        before = log.count()
        log_cudagraph_skip_and_bump_counter(
            "skipping cudagraphs due to mutated inputs (1 instances). Found from:\n  File \"m.py\""
        )
        assert log.count() == before + 1
        assert log.since(before) == ["skipping cudagraphs due to mutated inputs (1 instances)"]
    finally:
        log.close()


def test_a_record_on_the_logger_is_caught_and_its_reason_parsed(skip_counter):
    log = CudagraphSkipLog()
    try:
        before = log.count()
        lg = logging.getLogger("torch._inductor.cudagraph_utils.__cudagraphs")
        level = lg.level
        lg.setLevel(logging.DEBUG)  # as TORCH_LOGS=cudagraphs leaves it
        try:
            lg.info("recording cudagraph tree for graph without symints")  # not a skip
            lg.warning("skipping cudagraphs due to cpu device (arg0_1). Found from : \n stack")
        finally:
            lg.setLevel(level)
        assert log.since(before) == ["skipping cudagraphs due to cpu device (arg0_1)"]
    finally:
        log.close()
    assert skip_reason("") == ""
    assert skip_reason("disabling cudagraphs due to override_cudagraphs annotation") == (
        "disabling cudagraphs due to override_cudagraphs annotation"
    )


def test_the_counter_is_read_again_after_the_window(skip_counter):
    log = CudagraphSkipLog()
    try:
        mark = log.count()
        skip_counter["inductor"]["cudagraph_skips"] += 2  # runtime skips nobody logged
        assert log.in_window(mark) == [
            "in the timed window: 2 skip(s) counted by Inductor (no reason logged)"
        ]
        mark = log.count()
        skip_counter["inductor"].clear()  # a cleared counter: the count still only grows
        assert log.count() == mark and log.since(mark) == []
        skip_counter["inductor"]["cudagraph_skips"] += 1
        assert log.count() == mark + 1
    finally:
        log.close()


def test_compile_metrics_reasons_fill_in_unheard_skips(monkeypatch, skip_counter):
    records: list[Any] = []
    monkeypatch.setattr(cudagraphs, "_compilation_metrics", lambda: list(records))
    log = CudagraphSkipLog()
    try:
        mark = log.count()
        heard = "skipping cudagraphs due to cpu device (x)"
        logging.getLogger("torch._inductor.cudagraph_utils.__cudagraphs").warning(heard)
        skip_counter["inductor"]["cudagraph_skips"] += 2
        records.append(SimpleNamespace(cudagraph_skip_reason=heard))  # the same skip
        records.append(SimpleNamespace(cudagraph_skip_reason="skipping cudagraphs due to y"))
        records.append(SimpleNamespace(cudagraph_skip_reason=None))
        assert log.since(mark) == [heard, "skipping cudagraphs due to y"]
    finally:
        log.close()
    assert metrics_reasons([{"cudagraph_skip_reason": "a\nb"}, {}]) == ["a"]


# -- no GPU clock without NVML -------------------------------------------------------------------


def test_a_cuda_device_without_nvml_has_no_clock_and_says_why(monkeypatch):
    monkeypatch.setattr(clocks, "nvml_installed", lambda: False)
    monkeypatch.setattr(clocks, "read_cpu_mhz", lambda *_: 2400.0)  # the CPU clock is there
    probe = ClockProbe.for_device(torch.device("cuda", 0), None, None)
    assert probe.source == NO_GPU_CLOCK
    assert "no GPU clock (install the nvml extra: pip install nvidia-ml-py)" in probe.source
    reading = probe.read()
    assert reading == ClockReading(None, []) and clocks.clock_change(reading, reading) is None
    # installed, but no handle for this GPU: no clock either, and not the install hint
    monkeypatch.setattr(clocks, "nvml_installed", lambda: True)
    probe = ClockProbe.for_device(torch.device("cuda", 0))
    assert probe.source == NO_GPU_CLOCK_HANDLE and probe.read().mhz is None
    # the CPU keeps its own clock
    assert ClockProbe.for_device(torch.device("cpu")).read().mhz == 2400.0
