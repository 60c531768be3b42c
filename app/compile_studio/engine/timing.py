"""The clock around one call: nothing but the call and the synchronisation that ends it.

:class:`CallTimer` reads the host clock (``perf_counter_ns``) before and after
a call and, on CUDA, records a pre-made pair of CUDA events around it
(device time). The harness floor — the same timer around a callable that
does nothing — is what the timer itself costs; every sample includes it once.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

#: Calls of the empty callable that give the harness floor.
FLOOR_CALLS = 200


def _noop() -> None:
    return None


class CallTimer:
    """Times single calls on one device (``use_events``: CUDA events as well)."""

    def __init__(self, device: torch.device, use_events: bool = False):
        self.device = device
        self.is_cuda = device.type == "cuda"
        self.use_events = use_events and self.is_cuda
        if self.use_events:
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)

    def sync(self) -> None:
        """Wait for the device: host timings then cover the work, not its launch."""
        if self.is_cuda:
            torch.cuda.synchronize(self.device)
        elif self.device.type == "mps":
            torch.mps.synchronize()

    def time(self, fn: Callable[[], Any]) -> tuple[float, float | None]:
        """(host ms, device ms or None) of one call of ``fn``."""
        if self.use_events:
            start, end = self._start, self._end
            t0 = time.perf_counter_ns()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize(self.device)
            t1 = time.perf_counter_ns()
            return (t1 - t0) / 1e6, float(start.elapsed_time(end))
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

    def floor(self, calls: int = FLOOR_CALLS) -> tuple[float, float | None]:
        """Median (host ms, device ms) of the timer around an empty callable."""
        host: list[float] = []
        device: list[float] = []
        for _ in range(calls):
            h, d = self.time(_noop)
            host.append(h)
            if d is not None:
                device.append(d)
        return statistics.median(host), (statistics.median(device) if device else None)

    def pipelined(self, fn: Callable[[], Any], calls: int) -> float:
        """Mean ms per call of ``calls`` back-to-back calls with one synchronisation."""
        self.sync()
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        self.sync()
        return (time.perf_counter_ns() - t0) / 1e6 / max(1, calls)
