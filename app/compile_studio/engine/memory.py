"""Each variant's own peak memory, above a baseline taken with the shared data allocated.

CUDA: the caching allocator's peak, reset before each group of a variant's
calls; the baseline is what is allocated at that moment (the input, the
reference, the cache-flush buffer, every live model), so the figure is the
variant's own working memory. CPU (Linux): the process's peak resident size
(``VmHWM``), reset by writing ``5`` to ``/proc/self/clear_refs`` before each
group of calls, minus the resident size at that moment. Elsewhere the peak
cannot be reset: the lifetime growth is reported and said to be so.

CUDA graphs allocate their private memory pool while they are recorded, before
the timed window, and replays allocate nothing: the window's peak alone says
~0 B. Around a variant's build and first calls (:meth:`PeakMeter.mark_built`,
:meth:`PeakMeter.mark_recorded`) the meter reads the allocator's segments and
adds to the variant's figure what private pools grew by in between.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

CLEAR_REFS = Path("/proc/self/clear_refs")
STATUS = Path("/proc/self/status")


def _status_kib(key: str, status: Path = STATUS) -> int | None:
    try:
        with open(status, encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


#: The caching allocator's default pool; every other pool id is a private (CUDA graph) pool.
DEFAULT_POOL = (0, 0)


def private_pool_bytes(
    segments: Iterable[Mapping[str, Any]], device: int | None = None
) -> dict[tuple[int, int], int]:
    """Bytes of allocator segments per private pool, from ``torch.cuda.memory._snapshot()["segments"]``.

    The default pool ``(0, 0)`` is left out; with ``device``, so are other devices' segments.
    """
    pools: dict[tuple[int, int], int] = {}
    for seg in segments:
        if device is not None and seg.get("device", device) != device:
            continue
        raw = seg.get("segment_pool_id", DEFAULT_POOL)
        pool = (int(raw[0]), int(raw[1])) if raw is not None else DEFAULT_POOL
        if pool == DEFAULT_POOL:
            continue
        pools[pool] = pools.get(pool, 0) + int(seg.get("total_size", 0))
    return pools


def private_pool_growth(
    before: Mapping[tuple[int, int], int], after: Mapping[tuple[int, int], int]
) -> int:
    """Bytes private pools gained between two readings: new pools whole, others by their growth."""
    return sum(max(0, size - before.get(pool, 0)) for pool, size in after.items())


def _can_reset_rss_peak() -> bool:
    return CLEAR_REFS.exists() and os.access(CLEAR_REFS, os.W_OK) and _status_kib("VmHWM") is not None


@dataclass
class PeakMeter:
    """Measures the peak memory of groups of calls, one variant at a time."""

    device: torch.device
    kind: str = ""
    _baseline: int = 0
    peaks: dict[str, int] = field(default_factory=dict)
    #: bytes of CUDA-graph private pools each variant's build and first calls added
    pool_bytes: dict[str, int] = field(default_factory=dict)
    _pools_built: dict[str, dict[tuple[int, int], int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.device.type == "cuda":
            self.kind = "cuda_allocator_peak"
        elif _can_reset_rss_peak():
            self.kind = "rss_peak"
        else:
            self.kind = "rss_lifetime_growth"
            self._baseline = self._lifetime_peak()

    @staticmethod
    def _lifetime_peak() -> int:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024

    def start(self) -> None:
        """Reset the peak; what is allocated now is the baseline."""
        if self.kind == "cuda_allocator_peak":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._baseline = int(torch.cuda.memory_allocated(self.device))
        elif self.kind == "rss_peak":
            try:
                CLEAR_REFS.write_text("5")
            except OSError:
                pass
            self._baseline = (_status_kib("VmRSS") or 0) * 1024

    def stop(self, variant: str) -> None:
        """Close a group of ``variant``'s calls: its peak is the largest growth seen."""
        if self.kind == "cuda_allocator_peak":
            torch.cuda.synchronize(self.device)
            peak = int(torch.cuda.max_memory_allocated(self.device)) - self._baseline
        elif self.kind == "rss_peak":
            peak = (_status_kib("VmHWM") or 0) * 1024 - self._baseline
        else:
            peak = self._lifetime_peak() - self._baseline
        self.peaks[variant] = max(self.peaks.get(variant, 0), max(0, peak))

    def _private_pools(self) -> dict[tuple[int, int], int] | None:
        """Private pool bytes on this device now; None off CUDA or where torch cannot tell."""
        if self.kind != "cuda_allocator_peak" or not torch.cuda.is_available():
            return None
        try:
            torch.cuda.synchronize(self.device)
            segments = torch.cuda.memory._snapshot(self.device).get("segments", [])
        except Exception:  # noqa: BLE001 - an allocator without snapshots: no pool figure
            return None
        index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        return private_pool_bytes(segments, index)

    def mark_built(self, variant: str) -> None:
        """Before ``variant``'s first call: the private pools that exist already (CUDA only)."""
        pools = self._private_pools()
        if pools is not None:
            self._pools_built[variant] = pools

    def mark_recorded(self, variant: str) -> None:
        """After ``variant``'s first calls (the CUDA graph recorded): what its pools hold."""
        before = self._pools_built.pop(variant, None)
        if before is None:
            return
        after = self._private_pools()
        if after is not None:
            self.pool_bytes[variant] = private_pool_growth(before, after)

    def window_peak(self, variant: str) -> int | None:
        """The largest growth seen inside ``variant``'s timed groups of calls."""
        return self.peaks.get(variant)

    def peak(self, variant: str) -> int | None:
        """What ``variant`` holds: its window peak plus the CUDA-graph pools it added."""
        window = self.peaks.get(variant)
        pools = self.pool_bytes.get(variant)
        if window is None or pools is None:
            return window
        return window + pools

    def kind_of(self, variant: str) -> str:
        """``kind``, marked ``+graph_pools`` where the variant's figure counts private pools."""
        return self.kind + "+graph_pools" if self.pool_bytes.get(variant) else self.kind
