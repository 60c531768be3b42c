"""The "Distribution" tab: a histogram of the measured latencies per series and their ECDF.

The range drawn is clipped to robust quantiles (the largest p99.5 of the
series, and their p0.5 when the fast tail is long), so a few outliers do not
squash the rest into two bars; the calls left out are counted in words. Each
series' median is marked; the x axis can be logarithmic.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QCheckBox, QWidget

from ...results.report.formatting import plural
from .buffers import Series
from .style import (
    MUTED,
    CaptionedLayoutView,
    PlainLogAxis,
    SideLegend,
    captioned_plot,
    curve_pen,
    histogram_pen,
    median_pen,
    set_legend_text,
    side_legend,
    style_plot_item,
    with_alpha,
)
from .tab import PlotTab, TabSpec, register_tab

#: Minimum seconds between two histogram recomputations during a live run.
HISTOGRAM_MIN_INTERVAL_S = 0.2
#: The quantiles (in %) the drawn range is clipped to.
LOW_QUANTILE = 0.5
HIGH_QUANTILE = 99.5
#: The fast tail is clipped only when it is longer than this share of the range kept.
LOW_TAIL_SHARE = 0.25
#: Points of each ECDF curve (its quantiles), however many calls there are.
ECDF_POINTS = 401

DISTRIBUTION_CAPTION = (
    "Left: % of measured calls per bin · wide pale line: median · right: ECDF, % of calls at or below a latency"
)


def outlier_note(below: int, low_ms: float, above: int, high_ms: float) -> str:
    """The words on the calls outside the drawn range ("" when none is)."""
    parts = []
    if below:
        parts.append(f"{plural(below, 'call')} below {low_ms:.3g} ms")
    if above:
        parts.append(f"{plural(above, 'call')} above {high_ms:.3g} ms" if not below else f"{above:,} above {high_ms:.3g} ms")
    return " and ".join(parts) + " not shown" if parts else ""


def clipped_range(data: list[np.ndarray]) -> tuple[float, float, int, int]:
    """(low, high, calls below, calls above) of the range drawn for the samples in ``data``.

    High: the largest p99.5 of the series. Low: their smallest minimum, or
    their smallest p0.5 when the calls below it span more than a quarter of the range.
    """
    lo = min(float(v.min()) for v in data)
    top = max(float(v.max()) for v in data)
    hi = min(top, max(float(np.percentile(v, HIGH_QUANTILE)) for v in data))
    lo_q = min(float(np.percentile(v, LOW_QUANTILE)) for v in data)
    if lo_q - lo > LOW_TAIL_SHARE * max(hi - lo_q, 0.0) and lo_q < hi:
        lo = lo_q
    below = sum(int(np.count_nonzero(v < lo)) for v in data)
    above = sum(int(np.count_nonzero(v > hi)) for v in data)
    return lo, hi, below, above


class DistributionView(CaptionedLayoutView):
    """The histogram (left) and the ECDF (right) in one view, so one export holds both.

    :meth:`getPlotItem` is the histogram (its title carries the outlier note).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(colspan=3, parent=parent)
        self.hist = self.ci.addPlot(row=1, col=0, axisItems={"bottom": PlainLogAxis("bottom")})
        self.ecdf = self.ci.addPlot(row=1, col=1, axisItems={"bottom": PlainLogAxis("bottom")})
        self.ci.layout.setColumnStretchFactor(0, 3)
        self.ci.layout.setColumnStretchFactor(1, 2)

    def getPlotItem(self) -> pg.PlotItem:  # noqa: N802 - as pg.PlotWidget
        """The histogram's plot item."""
        return self.hist


class DistributionTab(PlotTab):
    """Percent of measured calls per latency bin and the ECDF, recomputed at most every 0.2 s."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.ecdf_curves: dict[str, pg.PlotDataItem] = {}
        self.median_lines: dict[str, pg.InfiniteLine] = {}
        #: the median (ms) each series' line marks
        self.medians: dict[str, float] = {}
        self._series: dict[str, Series] = {}
        self._run_styles: dict[str, int] = {}
        self._dirty = False
        #: False while another tab is shown: the histograms wait until this one is
        self._on_screen = True
        self._last = -math.inf
        self._log_x = False
        #: the range drawn (ms) after the last update, None before
        self.shown_range: tuple[float, float] | None = None
        self.plot = DistributionView()
        hist, ecdf = self.plot.hist, self.plot.ecdf
        style_plot_item(hist, "% of measured calls", "latency (ms)")
        style_plot_item(ecdf, "% of calls ≤ latency", "latency (ms)")
        ecdf.setYRange(0, 100, padding=0.02)
        ecdf.getViewBox().setMouseEnabled(y=False)
        self._half = pg.InfiniteLine(
            pos=50, angle=0, movable=False, pen=pg.mkPen(MUTED, width=1, style=Qt.PenStyle.DotLine)
        )
        ecdf.addItem(self._half, ignoreBounds=True)
        # beside both plots, or below them when the tab is narrow
        self.legend = side_legend(self.plot.ci, right=(1, 2), bottom=(2, 0, 1, 2))

        self.log_x_checkbox = QCheckBox("Log x")
        self.log_x_checkbox.setToolTip(
            "Logarithmic latency axis with log-spaced bins: use it when variants differ by several times"
        )
        self.log_x_checkbox.toggled.connect(self.set_log_x)
        self.caption = captioned_plot(self, DISTRIBUTION_CAPTION, self.log_x_checkbox, self.plot)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._update)
        self.sync_legend()

    # -- series ------------------------------------------------------------------------------
    def add(self, series: Series, run_style: int = 0) -> None:
        """Add the histogram, ECDF and median line of ``series``, in the line style of the ``run_style``-th run."""
        curve = pg.PlotDataItem(
            name=series.label,
            stepMode="center",
            fillLevel=0,
            fillBrush=pg.mkBrush(with_alpha(series.color, 60)),
            pen=histogram_pen(series.color, run_style=run_style),
        )
        ecdf = pg.PlotDataItem(pen=curve_pen(series.color, run_style=run_style), antialias=True)
        line = pg.InfiniteLine(
            angle=90, movable=False, pen=median_pen(series.color)
        )
        line.setVisible(False)
        self.curves[series.key] = curve
        self.ecdf_curves[series.key] = ecdf
        self.median_lines[series.key] = line
        self._series[series.key] = series
        self._run_styles[series.key] = run_style
        self.plot.hist.addItem(curve)
        self.plot.hist.addItem(line, ignoreBounds=True)
        self.plot.ecdf.addItem(ecdf)
        for item in (curve, ecdf):
            item.setLogMode(self._log_x, False)
        self.legend.addItem(curve, series.label)

    def relabel(self, series: Series) -> None:
        """Show the series' label (and failed mark) in the legend and its pens."""
        style = self._run_styles.get(series.key, 0)
        curve = self.curves[series.key]
        curve.opts["name"] = series.label
        curve.setPen(histogram_pen(series.color, series.failed, style))
        self.ecdf_curves[series.key].setPen(curve_pen(series.color, series.failed, style))
        set_legend_text(self.legend, curve, series.legend_text())

    def clear(self) -> None:
        for key, curve in self.curves.items():
            self.plot.hist.removeItem(curve)
            self.plot.hist.removeItem(self.median_lines[key])
            self.plot.ecdf.removeItem(self.ecdf_curves[key])
        self.curves.clear()
        self.ecdf_curves.clear()
        self.median_lines.clear()
        self.medians.clear()
        self._series.clear()
        self._run_styles.clear()
        self.legend.clear()
        self._dirty = False
        self.shown_range = None
        self._set_note("")
        self.sync_legend()

    def sync_legend(self) -> None:
        """An empty legend would draw an empty box: show it only when it lists something."""
        if isinstance(self.legend, SideLegend):
            self.legend.sync()
        else:
            self.legend.setVisible(bool(self.legend.items))

    # -- log x -----------------------------------------------------------------------------------
    def set_log_x(self, on: bool) -> None:
        """Logarithmic latency axis (log-spaced bins) on both plots, or linear."""
        on = bool(on)
        if self.log_x_checkbox.isChecked() != on:
            self.log_x_checkbox.setChecked(on)  # re-enters through toggled
            return
        if on == self._log_x:
            return
        self._log_x = on
        for plot in (self.plot.hist, self.plot.ecdf):
            plot.setLogMode(x=on, y=False)
        self._dirty = True
        self._update()

    def is_log_x(self) -> bool:
        return self._log_x

    # -- updates ---------------------------------------------------------------------------------
    def invalidate(self) -> None:
        """The samples changed: recompute now, or as soon as the rate limit allows (when this
        tab is shown: behind another, when it comes on screen)."""
        self._dirty = True
        if not self._on_screen:
            return
        wait = HISTOGRAM_MIN_INTERVAL_S - (time.monotonic() - self._last)
        if wait <= 0:
            self._update()
        elif not self._timer.isActive():
            self._timer.start(int(wait * 1000) + 1)

    def shown(self) -> None:
        """The tab came on screen: bring stale histograms up to date."""
        self._on_screen = True
        self.bring_up_to_date()

    def hidden(self) -> None:
        self._on_screen = False
        self._timer.stop()

    def bring_up_to_date(self) -> None:
        """Recompute stale histograms now, shown or not (what the tab will show)."""
        if self._dirty:
            self._update()

    def _update(self) -> None:
        self._timer.stop()
        if not self._dirty:
            return
        self._dirty = False
        self._last = time.monotonic()
        data = {k: s.measured_values() for k, s in self._series.items() if s.meas.n}
        for k, curve in self.curves.items():
            if k not in data:
                curve.setData([], [])
                self.ecdf_curves[k].setData([], [])
                self.median_lines[k].setVisible(False)
                self.medians.pop(k, None)
        if not data:
            self.shown_range = None
            self._set_note("")
            return
        lo, hi, below, above = clipped_range(list(data.values()))
        log = self._log_x and lo > 0
        if hi <= lo:
            hi = lo + max(abs(lo) * 1e-3, 1e-6)
        n_max = max(len(v) for v in data.values())
        bins = int(np.clip(math.sqrt(n_max) * 2, 10, 150))
        edges = np.geomspace(lo, hi, bins + 1) if log else np.linspace(lo, hi, bins + 1)
        quantiles = np.linspace(0.0, 100.0, ECDF_POINTS)
        for k, values in data.items():
            counts, _ = np.histogram(values, bins=edges)
            self.curves[k].setData(edges, counts * (100.0 / len(values)))
            self.ecdf_curves[k].setData(np.percentile(values, quantiles), quantiles)
            median = float(np.median(values))
            self.medians[k] = median
            line = self.median_lines[k]
            if self._log_x and median <= 0:
                line.setVisible(False)
            else:
                line.setPos(math.log10(median) if self._log_x else median)
                line.setVisible(True)
        self.shown_range = (lo, hi)
        x0, x1 = (math.log10(lo), math.log10(hi)) if log else (lo, hi)
        for plot in (self.plot.hist, self.plot.ecdf):
            plot.setXRange(x0, x1, padding=0.02)
        self.plot.hist.enableAutoRange(axis="y")
        self._set_note(outlier_note(below, lo, above, hi))

    def _set_note(self, text: str) -> None:
        """The note on calls beyond the shown range, as the histogram's title (none when empty)."""
        plot = self.plot.getPlotItem()
        if text:
            plot.setTitle(text, color=MUTED, size="9pt")
        else:
            plot.setTitle(None)

    def tick(self) -> None:
        self.sync_legend()

    def redraw(self, changed: Iterable[Series]) -> None:
        self.invalidate()


register_tab(TabSpec(
    key="distribution", title="Distribution", make=lambda panel: DistributionTab(), order=20,
    caption=(
        "Distribution of measured calls",
        "left: % of calls per bin, wide pale line = median · right: ECDF, % of calls at or below a latency",
    ),
))
