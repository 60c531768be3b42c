"""Helpers shared by the window tests: opening a window, running, and reading what the plots show."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.plots import PlotPanel
from compile_studio.gui.plots.buffers import GpuReadings

RUN_TIMEOUT_MS = 120_000


def open_window(qtbot, probe: bool = False) -> MainWindow:
    """A shown MainWindow (without the start-up probe unless asked), closed by qtbot."""
    window = MainWindow(probe=probe)
    qtbot.addWidget(window)
    window.show()
    return window


def run_and_wait(qtbot, window: MainWindow, config: BenchmarkConfig):
    """Start ``config`` from the window and return the RunResult it finishes with."""
    with qtbot.waitSignal(window.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.start_run(config)
    return blocker.args[0]


def live_key(window: MainWindow, variant: str) -> str:
    """The plot key of ``variant`` of the window's running (or last) run."""
    return f"{window.live.run_id}/{variant}"


# -- the latency, distribution and summary tabs -----------------------------------------------
def series_data(panel: PlotPanel, key: str) -> tuple[np.ndarray, np.ndarray]:
    """(iterations, wall_ms) of series ``key`` in arrival order, as appended (copies)."""
    s = panel.series[key]
    return s.all.xs.copy(), s.all.ys.copy()


def series_color(panel: PlotPanel, key: str) -> QColor:
    """The colour series ``key`` is drawn in on the latency tab."""
    return QColor(panel.latency.curves[key].measure_curve.opts["pen"].color())


def is_series_failed(panel: PlotPanel, key: str) -> bool:
    """Whether series ``key`` is drawn as failed (dash-dot) on the latency tab."""
    return panel.latency.curves[key].measure_curve.opts["pen"].style() == Qt.PenStyle.DashDotLine


def legend_labels(panel: PlotPanel) -> list[str]:
    """The texts of the latency legend, top to bottom."""
    return [label.text for _, label in panel.latency.legend.items]


def median_line_value(panel: PlotPanel, key: str) -> float | None:
    """The latency (ms) at which the dashed median line of ``key`` is drawn (None: none)."""
    c = panel.latency.curves[key]
    return c.median if c.median_line.isVisible() else None


def warmup_region(panel: PlotPanel, key: str) -> tuple[float, float] | None:
    """The shaded warm-up iteration span drawn for ``key`` (None when it has no warm-up)."""
    c = panel.latency.curves[key]
    if c.series.warm.n == 0 or not c.region.scene():
        return None
    lo, hi = c.region.getRegion()
    return (float(lo), float(hi))


def is_log_scale(panel: PlotPanel) -> bool:
    """Whether the latency axis is drawn logarithmic."""
    return bool(panel.latency_plot.getPlotItem().getAxis("left").logMode)


def hover_text(panel: PlotPanel) -> str:
    """The crosshair's label text ("" when hidden)."""
    label = panel.latency.hover_label
    return label.toPlainText() if label.isVisible() else ""


def histogram_data(panel: PlotPanel, key: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(bin edges in ms, percent of its measured calls per bin) drawn for ``key`` (None: none)."""
    panel.distribution.bring_up_to_date()
    edges, percent = panel.distribution.curves[key].getOriginalDataset()
    if edges is None or len(edges) == 0:
        return None
    return edges, percent


def distribution_note(panel: PlotPanel) -> str:
    """The distribution tab's note on calls beyond the shown range ("" when none)."""
    panel.distribution.bring_up_to_date()
    title = panel.distribution_plot.getPlotItem().titleLabel
    return title.text if title.isVisible() else ""


def summary_texts(panel: PlotPanel) -> list[str]:
    """The speedup texts written on the summary bars, left to right."""
    return [t.toPlainText() for t in panel.summary.bar_texts]


# -- the GPU tab ------------------------------------------------------------------------------
def gpu_run_keys(panel: PlotPanel) -> list[str]:
    """Keys of the runs on the GPU tab, in the order they were added."""
    return list(panel.gpu.runs)


def gpu_state_data(panel: PlotPanel, run_key: str) -> dict[str, np.ndarray]:
    """Columns ``t_s``, ``iteration`` and the quantities of run ``run_key`` (NaN for None), copies."""
    readings = panel.gpu.runs[run_key].readings
    return {c: readings.column(c).copy() for c in GpuReadings.COLUMNS}


def gpu_variant_boundaries(panel: PlotPanel, run_key: str) -> list[tuple[float, str]]:
    """(t, variant) of the dashed lines drawn where run ``run_key`` starts a variant."""
    return [(float(line.value()), tag) for line, tag in panel.gpu.runs[run_key].lines]


def gpu_variant_bands(panel: PlotPanel, run_key: str) -> list[tuple[float, float, str]]:
    """(start, end, variant) of the shaded bands drawn for ``run_key`` (only one run: shaded)."""
    top = panel.gpu.top_plot
    out = []
    for owner, item in panel.gpu.runs[run_key].markers:
        if owner is top and isinstance(item, pg.LinearRegionItem):
            lo, hi = item.getRegion()
            out.append((float(lo), float(hi), str(item.variant)))
    return out


def gpu_note_shown(panel: PlotPanel) -> bool:
    """Whether the GPU tab shows its "no readings" note instead of the plots."""
    return panel.gpu.stack.currentWidget() is panel.gpu.note


def gpu_legend_labels(panel: PlotPanel) -> list[str]:
    """The texts of the GPU legend (empty while it is hidden: one run or none)."""
    if not panel.gpu.legend.isVisible():
        return []
    return [label.text for _, label in panel.gpu.legend.items]
