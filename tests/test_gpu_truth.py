"""The CUDA figures a reading still found wrong, each checked on the CPU against a stand-in:
cold L2 for the device-timed call too, a per-sample launch check on a simulated stream, the
bf16 training check said not judged, in-run compile time without one-off start-up."""

from __future__ import annotations

import ctypes
import sys
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.engine import timing
from compile_studio.engine.cache_flush import CacheFlush
from compile_studio.engine.runner import BenchmarkRunner
from compile_studio.engine.sink import ListSink

BASE = {
    "layers": "32,32,8", "batch_size": 4, "device": "cpu", "iterations": 6, "warmup": 2,
    "warmup_min_ms": 0, "rounds": 1, "compile_timing": "in_run", "diagnostics": False,
    "variants": ["eager"],
}


def _config(**changes: Any) -> BenchmarkConfig:
    return BenchmarkConfig.from_dict({**BASE, **changes})


def _warnings(sink: ListSink) -> list[str]:
    return [e.message for e in sink.events if isinstance(e, protocol.WarningEvent)]


# -- cold L2: the device-timed call is cold too ----------------------------------------------


@pytest.mark.parametrize("rounds", [1, 2])
def test_cold_l2_flushes_before_the_device_timed_call_as_before_the_wall_one(monkeypatch, rounds):
    """On CUDA each sample is two calls (wall, then busy-stream device): both must find L2 cold."""
    log: list[str] = []
    monkeypatch.setattr(CacheFlush, "evict", lambda self: log.append("f"))
    sink = ListSink()
    runner = BenchmarkRunner(_config(cold_l2=True, rounds=rounds, variants=["eager", "eager-aa"]), sink)
    timer = runner.timer
    timer.use_events = True  # the two-call path of CUDA events, with the calls simulated

    def wall(fn: Any) -> float:
        log.append("w")
        fn()
        return 1.0

    def device(fn: Any) -> float:
        log.append("d")
        fn()
        return 0.5

    monkeypatch.setattr(timer, "_wall_call", wall)
    monkeypatch.setattr(timer, "_device_call", device)
    monkeypatch.setattr(timer, "floor", lambda *a, **k: (0.01, 0.005))
    monkeypatch.setattr(timer, "calibrate", lambda: 1e6)
    assert runner.run() == protocol.RunStatus.COMPLETE
    seq = "".join(log)
    assert seq.count("d") >= 2 * BASE["iterations"], seq
    assert "wd" not in seq, f"a device-timed call right after the wall-timed one (warm): {seq}"
    assert seq.count("fwfd") == seq.count("d"), seq


def test_cold_l2_on_the_cpu_evicts_before_every_timed_call(monkeypatch):
    """On the CPU the timed loop reads the clock around the call itself: it still evicts the
    cache before each timed call (outside the call's span), as the warm-up's calls do."""
    log: list[str] = []
    monkeypatch.setattr(CacheFlush, "evict", lambda self: log.append("f"))
    sink = ListSink()
    runner = BenchmarkRunner(_config(cold_l2=True), sink)
    assert runner.timer.host_only
    assert runner.run() == protocol.RunStatus.COMPLETE
    timed = sum(
        len(e.wall_ms) for e in sink.events
        if isinstance(e, protocol.SamplesEvent) and e.phase == protocol.Phase.MEASURE
    )
    assert timed == BASE["iterations"]
    assert log.count("f") >= BASE["warmup"] + timed, log


# -- the busy-stream device time: each sample's own check ------------------------------------


class _Stream:
    """One CUDA stream and the host clock, simulated in ns: sleeps, kernels and events queue."""

    def __init__(self, sleep_cycles_per_ns: float):
        self.host = 0
        self.free_at = 0  # when the stream has run everything queued so far
        self.rate = sleep_cycles_per_ns

    def perf_counter_ns(self) -> int:
        return self.host

    def sleep(self, cycles: int) -> None:
        self.free_at = max(self.free_at, self.host) + round(cycles / self.rate)

    def kernel(self, launch_ns: int, run_ns: int) -> None:
        self.host += launch_ns
        self.free_at = max(self.free_at, self.host) + run_ns


class _Event:
    def __init__(self, stream: _Stream):
        self.stream = stream
        self.at = 0

    def record(self) -> None:
        s = self.stream
        self.at = s.free_at = max(s.free_at, s.host)

    def query(self) -> bool:
        return self.stream.host >= self.at

    def synchronize(self) -> None:
        self.stream.host = max(self.stream.host, self.at)

    def elapsed_time(self, other: _Event) -> float:
        return (other.at - self.at) / 1e6


def _simulated_timer(monkeypatch: pytest.MonkeyPatch, stream: _Stream, calibrated_per_ms: float):
    monkeypatch.setattr(timing, "time", stream)
    monkeypatch.setattr(torch.cuda, "_sleep", stream.sleep)
    timer = timing.CallTimer(torch.device("cpu"))
    timer.use_events = True
    timer._start, timer._end = _Event(stream), _Event(stream)
    timer._span_start, timer._span_end = _Event(stream), _Event(stream)
    timer._cycles_per_ms = calibrated_per_ms
    return timer


def test_a_sleep_calibrated_at_an_idle_clock_is_caught_by_the_start_event(monkeypatch):
    """Calibrated at 1 GHz, the boosted GPU sleeps at 3: the sleep ends before the launch does.

    Three kernels of 10 µs launched 100 µs apart: covered, the pair holds 30 µs; uncovered,
    it holds the launch gaps. The calibration says covered; the start event says not.
    """
    stream = _Stream(sleep_cycles_per_ns=3.0)
    timer = _simulated_timer(monkeypatch, stream, calibrated_per_ms=1e6)

    def model() -> None:
        for _ in range(3):
            stream.kernel(100_000, 10_000)

    wall, device = timer.time(model)
    assert timer.last_launch_ms == pytest.approx(0.3)
    assert device is not None and device > 0.1  # launch gaps, not 30 µs of kernels
    assert timer.counts() == (1, 1)
    # calibrated again at the warm clock, the sleep outlasts the launch: kernel time alone
    timer._cycles_per_ms = 3e6
    wall, device = timer.time(model)
    assert device == pytest.approx(0.03)
    assert timer.counts() == (2, 1)


def test_a_host_sync_inside_the_model_makes_every_sample_uncovered(monkeypatch):
    stream = _Stream(sleep_cycles_per_ns=1.0)
    timer = _simulated_timer(monkeypatch, stream, calibrated_per_ms=1e6)

    def model_with_item() -> None:
        stream.kernel(20_000, 10_000)
        stream.host = max(stream.host, stream.free_at)  # .item(): the host waits for the stream
        stream.kernel(20_000, 10_000)

    for _ in range(3):
        timer.time(model_with_item)
    assert timer.counts() == (3, 3)


def test_the_run_calibrates_warm_and_reports_uncovered_device_samples(monkeypatch):
    log: list[str] = []
    sink = ListSink()
    runner = BenchmarkRunner(_config(variants=["eager"]), sink)
    timer = runner.timer
    timer.use_events = True

    def wall(fn: Any) -> float:
        log.append("w")
        fn()
        return 1.0

    def device(fn: Any) -> float:
        log.append("d")
        fn()
        timer.device_samples += 1
        timer.uncovered += log.count("d") % 2 == 0  # every other device sample
        return 0.5

    monkeypatch.setattr(timer, "_wall_call", wall)
    monkeypatch.setattr(timer, "_device_call", device)
    monkeypatch.setattr(timer, "floor", lambda *a, **k: (0.01, 0.005))
    monkeypatch.setattr(timer, "calibrate", lambda: log.append("c") or 1e6)
    assert runner.run() == protocol.RunStatus.COMPLETE
    seq = "".join(log)
    warm = 2 * BASE["warmup"]
    assert seq[:warm] == "wd" * BASE["warmup"] and seq[warm] == "c", seq  # after the warm-up
    done = next(e for e in sink.events if isinstance(e, protocol.VariantDoneEvent))
    assert done.checks["device_time"] == {"samples": 6, "uncovered": 3}, done.checks
    said = [w for w in _warnings(sink) if "outlasted the sleep" in w]
    assert said and "3 of 6 device-timed calls" in said[0] and "launch gaps" in said[0], said


# -- the training check in bf16/fp16: judged, or said why not ---------------------------------


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_a_low_precision_training_check_says_why_its_parameters_are_not_judged(dtype):
    sink = ListSink()
    config = _config(workload="training", dtype=dtype, variants=["eager", "eager-aa"], iterations=4)
    assert BenchmarkRunner(config, sink).run() == protocol.RunStatus.COMPLETE
    done = {e.variant: e for e in sink.events if isinstance(e, protocol.VariantDoneEvent)}
    checks = done["eager-aa"].checks
    assert checks["gradients"] is not None  # the gradients are judged as before
    if checks["params_drift_bound"] is None:  # not judged: the run says why, in words
        why = checks["params_drift_not_judged"]
        assert why and dtype in why, checks
        said = [w for w in _warnings(sink) if "parameters are not judged" in w]
        assert said and why in said[0], _warnings(sink)
    else:
        assert checks["params_drift"] is not None and checks["params_drift_not_judged"] is None
    assert done["eager"].checks["params_drift_not_judged"] is None


# -- in-run compile time: one-off start-up outside it, whatever the order ---------------------


@pytest.mark.parametrize("workload", ["inference", "training"])
def test_an_in_run_compile_listed_first_does_not_pay_the_one_off_start_up(monkeypatch, workload):
    """A library's start-up (cuBLAS on CUDA), stood in for by a hook on the first Linear call
    after the variant is built: paid by an untimed eager call, not inside the timed first call."""
    from compile_studio.engine.diagnostics import WhyCollector
    from compile_studio.engine.memory import PeakMeter

    log: list[str] = []
    armed: list[bool] = []

    @torch.compiler.disable
    def start_up() -> None:
        if armed and "start-up" not in log:
            log.append("start-up")

    linear_forward = torch.nn.Linear.forward

    def forward(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
        start_up()
        return linear_forward(self, x)

    monkeypatch.setattr(torch.nn.Linear, "forward", forward)
    mark_built = PeakMeter.mark_built
    monkeypatch.setattr(PeakMeter, "mark_built",
                        lambda self, name: (armed.append(True), mark_built(self, name))[1])
    starts = WhyCollector.first_call_starts
    monkeypatch.setattr(WhyCollector, "first_call_starts",
                        lambda self, name: (log.append(f"timed {name}"), starts(self, name))[1])
    torch._dynamo.reset()
    sink = ListSink()
    config = _config(variants=["aot_eager", "eager"], workload=workload, iterations=3)
    assert BenchmarkRunner(config, sink).run() == protocol.RunStatus.COMPLETE
    assert log[:2] == ["start-up", "timed aot_eager"], log
    done = {e.variant: e for e in sink.events if isinstance(e, protocol.VariantDoneEvent)}
    assert done["aot_eager"].allclose is True and done["eager"].allclose is True


# -- NVML through ctypes in the app (no nvidia-ml-py), and throttling said --------------------


def _fake_libnvml(uuids: dict[int, bytes], reasons: int) -> SimpleNamespace:
    """libnvidia-ml's functions by name, in its C calling shape (ctypes arguments, int status)."""

    def out(arg: Any, value: int) -> int:
        arg._obj.value = value
        return 0

    def get_uuid(handle: Any, buf: Any, length: Any) -> int:
        raw = uuids[handle.value] + b"\0"
        ctypes.memmove(buf, raw, len(raw))
        return 0

    def by_uuid(uuid: Any, handle: Any) -> int:
        found = [i for i, u in uuids.items() if u == uuid.value]
        return out(handle, found[0]) if found else 13

    return SimpleNamespace(
        nvmlInit_v2=lambda: 0,
        nvmlShutdown=lambda: 0,
        nvmlErrorString=lambda code: b"Not Found",
        nvmlDeviceGetHandleByUUID=by_uuid,
        nvmlDeviceGetUUID=get_uuid,
        nvmlDeviceGetClockInfo=lambda h, kind, v: out(v, 1755 if kind.value == 1 else 2619),
        nvmlDeviceGetTemperature=lambda h, sensor, v: out(v, 71),
        nvmlDeviceGetPowerUsage=lambda h, v: out(v, 699_000),
        nvmlDeviceGetCurrentClocksEventReasons=lambda h, v: out(v, reasons),
        nvmlSystemGetDriverVersion=lambda buf, n: ctypes.memmove(buf, b"570.86.15\0", 10) and 0,
    )


def test_the_app_reads_nvml_through_ctypes_without_nvidia_ml_py_and_warns_on_throttling(monkeypatch):
    from compile_studio.engine import environment, finish, gpu_monitor, nvml_ctypes
    from compile_studio.engine.clocks import ClockProbe

    lib = _fake_libnvml({7: b"GPU-aaaa-1111", 8: b"GPU-bbbb-2222"}, reasons=0x4 | 0x20)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # nvidia-ml-py is not installed
    monkeypatch.setattr(nvml_ctypes.CtypesNvml, "load", classmethod(lambda cls, name="": cls(lib)))
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda *_: SimpleNamespace(uuid="bbbb-2222", pci_bus_id=None))
    device = torch.device("cuda", 0)
    found = gpu_monitor.nvml_handle(device)
    assert found is not None
    binding, handle, uuid = found
    assert isinstance(binding, nvml_ctypes.CtypesNvml) and uuid == "bbbb-2222"
    probe = ClockProbe.for_device(device, handle, binding)
    assert probe.source == "nvml_sm_clock"
    reading = probe.read()
    assert reading.mhz == 1755.0 and reading.reasons == ["sw_power_cap", "sw_thermal_slowdown"]
    # the GPU state monitor reads it too, and the environment gets the driver version
    _, _, _, clock, temp, power = gpu_monitor.GpuMonitor(handle, binding, ListSink(), 0)._read()
    assert (clock, temp, power) == (1755, 71, 699.0)
    assert environment._nvidia_driver() == "570.86.15"
    # the throttle reasons recorded at a window's edges are said, not only stored
    warned: list[str] = []
    run = SimpleNamespace(clock=probe, send_warning=lambda name, message: warned.append(message))
    v = SimpleNamespace(name="default", clock_max_change=0.0,
                        clock_start=reading.to_dict(), clock_end=reading.to_dict())
    clock = finish.clock_report(run, v)
    assert clock["start"]["reasons"] == ["sw_power_cap", "sw_thermal_slowdown"]
    assert warned and "sw power cap" in warned[0] and "sw thermal slowdown" in warned[0], warned
    # idle or a clock setting is no slowdown
    idle = {"mhz": 1980.0, "reasons": ["gpu_idle", "applications_clocks_setting"]}
    warned.clear()
    finish.clock_report(run, SimpleNamespace(name="eager", clock_max_change=0.0,
                                             clock_start=idle, clock_end=idle))
    assert warned == []


# -- Triton: recorded, and compared with the version torch requires ---------------------------

#: Requires-Dist lines as torch's CUDA wheels list them (a release, a nightly).
RELEASE_REQUIRES = [
    "filelock", "typing-extensions>=4.10.0", "nvidia-cublas-cu12==12.8.4.1; platform_system == \"Linux\"",
    "triton==3.5.1; platform_system == \"Linux\"", "opt-einsum>=3.3; extra == \"opt-einsum\"",
]
NIGHTLY_REQUIRES = ["pytorch-triton==3.6.0+git5261b273; platform_system == \"Linux\"", "sympy>=1.13.3"]


def test_the_triton_torch_requires_is_read_from_its_metadata_and_compared(monkeypatch):
    from compile_studio.engine import environment as env

    assert env.triton_required(RELEASE_REQUIRES) == ("triton", "3.5.1")
    assert env.triton_required(NIGHTLY_REQUIRES) == ("pytorch-triton", "3.6.0+git5261b273")
    assert env.triton_required(["numpy", "triton>=3.0; extra == \"x\""]) is None  # a CPU wheel
    assert env.triton_required(['triton==9.9; platform_system == "NoSuchOS"']) is None
    # the lent image: torch 2.11 with Triton 3.6
    said = env.triton_mismatch(("triton", "3.6.0"), ("triton", "3.5.1"), "2.11.0+cu128")
    assert said and "torch 2.11.0+cu128 was built for triton 3.5.1" in said and "triton 3.6.0" in said
    assert env.triton_mismatch(("pytorch-triton", "3.6.0+git5261b273"),
                               ("pytorch-triton", "3.6.0+git5261b273"), "2.13") is None
    assert env.triton_mismatch(("triton", "3.5.1"), ("triton", "3.5.1"), "2.12") is None
    assert "no Triton is installed" in env.triton_mismatch(None, ("triton", "3.5.1"), "2.12")
    assert env.triton_mismatch(None, None, "2.13.0+cpu") is None
    # this machine's torch, from its own metadata; both recorded in the environment
    probe = env.probe()
    assert "triton" in probe and "triton_required" in probe
    assert probe["triton_required"] == env._version_text(env.triton_required())
    # said before compiling, where Inductor compiles for a GPU
    monkeypatch.setattr(env, "triton_installed", lambda: ("triton", "3.6.0"))
    monkeypatch.setattr(env, "triton_required", lambda requires=None: ("triton", "3.5.1"))
    assert env.triton_warning("cuda", ["eager", "default"]) is not None
    assert env.triton_warning("cuda", ["eager", "aot_eager"]) is None  # no Inductor
    assert env.triton_warning("cpu", ["eager", "default"]) is None  # Inductor's C++ on the CPU


def test_a_run_says_the_triton_mismatch_before_its_first_compile(monkeypatch):
    from compile_studio.engine import environment as env

    monkeypatch.setattr(env, "triton_warning", lambda device, variants: "triton 3.6.0 is not 3.5.1")
    sink = ListSink()
    assert BenchmarkRunner(_config(variants=["eager"]), sink).run() == protocol.RunStatus.COMPLETE
    kinds = [type(e).__name__ for e in sink.events]
    said = next(i for i, e in enumerate(sink.events)
                if isinstance(e, protocol.WarningEvent) and "3.6.0" in e.message)
    assert said < kinds.index("PhaseEvent"), kinds
