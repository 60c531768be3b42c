"""GPU state sampling logic, with an NVML double (this machine has no NVIDIA GPU)."""

from __future__ import annotations

import time

from compile_studio.core import protocol
from compile_studio.engine.gpu_monitor import GpuMonitor
from compile_studio.engine.sink import ListSink


class FakeNvml:
    """Answers the three NVML calls the monitor makes, with a clock that drops."""

    NVML_CLOCK_SM = 1
    NVML_TEMPERATURE_GPU = 0

    def __init__(self):
        self.calls = 0

    def nvmlDeviceGetClockInfo(self, handle, kind):  # noqa: N802 - NVML's names
        self.calls += 1
        return 1980 if self.calls < 3 else 1410

    def nvmlDeviceGetTemperature(self, handle, kind):  # noqa: N802
        return 70

    def nvmlDeviceGetPowerUsage(self, handle):  # noqa: N802
        raise RuntimeError("not supported on this GPU")

    def nvmlShutdown(self):  # noqa: N802
        pass


def test_readings_are_tagged_with_the_latest_sample_and_sent_in_batches():
    sink = ListSink()
    nvml = FakeNvml()
    monitor = GpuMonitor("handle", nvml, sink, index=0)
    sink.sample("eager", "measure", 41, 1.0, 0.9)
    monitor._thread.start()
    time.sleep(0.75)
    monitor.stop()
    events = [e for e in sink.events if isinstance(e, protocol.GpuStateEvent)]
    assert len(events) >= 1
    n = sum(len(e.t_s) for e in events)
    assert n >= 4 and nvml.calls == n
    first = events[0]
    assert first.variant[0] == "eager" and first.iteration[0] == 41
    clocks = [c for e in events for c in e.sm_clock_mhz]
    assert clocks[:2] == [1980, 1980] and clocks[-1] == 1410
    assert all(p is None for e in events for p in e.power_w)  # unsupported reading → None
    assert all(t == 70 for e in events for t in e.temperature_c)


def test_no_monitor_without_cuda():
    class Cpu:
        type = "cpu"

    assert GpuMonitor.start(Cpu(), ListSink()) is None
