"""Each variant's own peak memory, above a baseline taken with the shared data allocated.

CUDA: the caching allocator's peak, reset before each group of a variant's
calls; the baseline is what is allocated at that moment (the input, the
reference, the cache-flush buffer, every live model), so the figure is the
variant's own working memory. CPU (Linux): the process's peak resident size
(``VmHWM``), reset by writing ``5`` to ``/proc/self/clear_refs`` before each
group of calls, minus the resident size at that moment. Elsewhere the peak
cannot be reset: the lifetime growth is reported and said to be so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

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


def _can_reset_rss_peak() -> bool:
    return CLEAR_REFS.exists() and os.access(CLEAR_REFS, os.W_OK) and _status_kib("VmHWM") is not None


@dataclass
class PeakMeter:
    """Measures the peak memory of groups of calls, one variant at a time."""

    device: torch.device
    kind: str = ""
    _baseline: int = 0
    peaks: dict[str, int] = field(default_factory=dict)

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

    def peak(self, variant: str) -> int | None:
        return self.peaks.get(variant)
