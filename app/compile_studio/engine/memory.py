"""Each variant's own peak memory, above a baseline taken with the shared data allocated.

CUDA: the caching allocator's peak, reset before each group of a variant's
calls; the baseline is what is allocated at that moment (the input, the
reference, the cache-flush buffer, every live model), so the figure is the
variant's own working memory. CPU (Linux): the process's peak resident size
(``VmHWM``), reset by writing ``5`` to ``/proc/self/clear_refs`` before each
group of calls, minus the resident size at that moment. Elsewhere the peak
cannot be reset: the lifetime growth is reported and said to be so.

CUDA graphs allocate their memory while they are recorded, before the timed
window, and replays allocate nothing: the window's peak alone says ~0 B.
torch keeps one CUDA-graph memory pool per device and thread for every
compiled function (``torch/_inductor/cudagraph_trees.py``), so a second
CUDA-graph variant records into the pool the first one left and the pool
hardly grows: what the pool grew by is no variant's figure. The meter takes
instead the allocator's *allocated* peak during the recording call
(:meth:`PeakMeter.mark_recording` before it, :meth:`PeakMeter.mark_recorded`
after), above what was allocated before it — allocated bytes, as eager's
window figure is, whoever's pool the blocks come from. The variant's figure
is the larger of the two (``memory_kind`` ``cuda_allocator_peak+graph_recording``
where the recording's is larger). What the private pools grew by (reserved
segments) is kept in ``pool_bytes`` for what it is.
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
    #: reserved bytes CUDA-graph private pools grew by over each variant's build and first
    #: calls (0 for a variant recording into a pool an earlier one left: not its figure)
    pool_bytes: dict[str, int] = field(default_factory=dict)
    #: allocated bytes at the peak of each CUDA-graph variant's recording call, above what
    #: was allocated before it (the same kind of figure as a window's peak)
    graph_bytes: dict[str, int] = field(default_factory=dict)
    _pools_built: dict[str, dict[tuple[int, int], int]] = field(default_factory=dict)
    _recording_base: dict[str, int] = field(default_factory=dict)

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
            segments = torch.cuda.memory._snapshot(self.device).get("segments", [])  # noqa: SLF001 - torch's, per device
        except Exception:  # noqa: BLE001 - an allocator without snapshots: no pool figure
            return None
        index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        return private_pool_bytes(segments, index)

    def mark_built(self, variant: str) -> None:
        """Before ``variant``'s first call: the private pools that exist already (CUDA only)."""
        pools = self._private_pools()
        if pools is not None:
            self._pools_built[variant] = pools

    def mark_recording(self, variant: str) -> None:
        """Right before ``variant``'s recording call (CUDA only): the allocated peak is reset."""
        if self.kind != "cuda_allocator_peak" or not torch.cuda.is_available():
            return
        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        self._recording_base[variant] = int(torch.cuda.memory_allocated(self.device))

    def mark_recorded(self, variant: str) -> None:
        """After ``variant``'s first calls (the CUDA graph recorded): its recording's peak.

        The allocated peak since :meth:`mark_recording` (any pool) goes to
        ``graph_bytes``; the private pools' growth since :meth:`mark_built` to ``pool_bytes``.
        """
        base = self._recording_base.pop(variant, None)
        if base is not None and torch.cuda.is_available():
            torch.cuda.synchronize(self.device)
            self.graph_bytes[variant] = max(
                0, int(torch.cuda.max_memory_allocated(self.device)) - base
            )
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
        """``variant``'s own allocated peak: its window's, or its CUDA-graph recording's if larger.

        Replays allocate nothing, so a graph variant's window peak is what runs
        outside its graphs; its recording allocated what the graphs hold (and
        whatever ran beside them), so the larger of the two counts, not their sum.
        """
        window = self.peaks.get(variant)
        graph = self.graph_bytes.get(variant)
        if window is None or graph is None:
            return window
        return max(window, graph)

    def kind_of(self, variant: str) -> str:
        """``kind`` (allocated bytes on CUDA), ``+graph_recording`` where the recording's peak counts."""
        graph = self.graph_bytes.get(variant)
        if graph and graph > (self.peaks.get(variant) or 0):
            return self.kind + "+graph_recording"
        return self.kind
