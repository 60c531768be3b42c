"""The CUDA figures a reading still found wrong, each checked on the CPU against a stand-in:
cold L2 for the device-timed call too, a per-sample launch check on a simulated stream, the
bf16 training check said not judged, in-run compile time without one-off start-up."""

from __future__ import annotations

from typing import Any

import pytest

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
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
    assert runner.run() == protocol.RunStatus.COMPLETE
    seq = "".join(log)
    assert seq.count("d") >= 2 * BASE["iterations"], seq
    assert "wd" not in seq, f"a device-timed call right after the wall-timed one (warm): {seq}"
    assert seq.count("fwfd") == seq.count("d"), seq
