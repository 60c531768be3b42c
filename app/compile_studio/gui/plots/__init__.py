"""The plots of the window: one module per tab, composed by :class:`PlotPanel`."""

from __future__ import annotations

from .buffers import GPU_QUANTITIES, PHASES
from .gpu_state import NO_GPU_READINGS
from .panel import PlotPanel
from .summary_bars import SummaryBar, format_speedup

__all__ = ["GPU_QUANTITIES", "NO_GPU_READINGS", "PHASES", "PlotPanel", "SummaryBar", "format_speedup"]
