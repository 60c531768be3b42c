"""The "Distribution" tab: a histogram of the measured latencies per series, on shared bins."""

from __future__ import annotations

import math
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QVBoxLayout, QWidget

from .buffers import Series
from .style import MUTED, histogram_pen, make_legend, set_legend_text, style_plot_item, with_alpha

#: Minimum seconds between two histogram recomputations during a live run.
HISTOGRAM_MIN_INTERVAL_S = 0.2


class DistributionTab(QWidget):
    """Percent of measured calls per latency bin, recomputed at most every 0.2 s."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self._series: dict[str, Series] = {}
        self._dirty = False
        self._last = -math.inf
        self.plot = pg.PlotWidget(background="w")
        style_plot_item(self.plot.getPlotItem(), "% of measured calls", "latency (ms)")
        self.legend = make_legend(self.plot.getPlotItem())
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.plot)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._update)
        self.sync_legend()

    def add(self, series: Series) -> None:
        curve = pg.PlotDataItem(
            name=series.label,
            stepMode="center",
            fillLevel=0,
            fillBrush=pg.mkBrush(with_alpha(series.color, 60)),
            pen=histogram_pen(series.color),
        )
        self.curves[series.key] = curve
        self._series[series.key] = series
        self.plot.addItem(curve)

    def relabel(self, series: Series) -> None:
        """Show the series' label (and failed mark) in the legend and its pen."""
        curve = self.curves[series.key]
        curve.opts["name"] = series.label
        curve.setPen(histogram_pen(series.color, series.failed))
        set_legend_text(self.legend, curve, series.legend_text())

    def clear(self) -> None:
        for curve in self.curves.values():
            self.plot.removeItem(curve)
        self.curves.clear()
        self._series.clear()
        self.legend.clear()
        self._dirty = False
        self._set_note("")
        self.sync_legend()

    def sync_legend(self) -> None:
        """An empty legend would draw an empty box: show it only when it lists something."""
        self.legend.setVisible(bool(self.legend.items))

    def invalidate(self) -> None:
        """The samples changed: recompute now, or as soon as the rate limit allows."""
        self._dirty = True
        wait = HISTOGRAM_MIN_INTERVAL_S - (time.monotonic() - self._last)
        if wait <= 0:
            self._update()
        elif not self._timer.isActive():
            self._timer.start(int(wait * 1000) + 1)

    def shown(self) -> None:
        """The tab came on screen: bring stale histograms up to date."""
        if self._dirty:
            self._update()

    def _update(self) -> None:
        self._timer.stop()
        if not self._dirty:
            return
        self._dirty = False
        self._last = time.monotonic()
        data = {k: s.meas.ys for k, s in self._series.items() if s.meas.n}
        for k, curve in self.curves.items():
            if k not in data:
                curve.setData([], [])
        if not data:
            self._set_note("")
            return
        lo = min(float(v.min()) for v in data.values())
        top = max(float(v.max()) for v in data.values())
        # Shared bins up to the largest p99.5, so one outlier does not squash the rest.
        hi = min(top, max(float(np.percentile(v, 99.5)) for v in data.values()))
        if hi <= lo:
            hi = lo + max(abs(lo) * 1e-3, 1e-6)
        n_max = max(len(v) for v in data.values())
        bins = int(np.clip(math.sqrt(n_max) * 2, 10, 150))
        edges = np.linspace(lo, hi, bins + 1)
        beyond = 0
        for k, values in data.items():
            counts, _ = np.histogram(values, bins=edges)
            beyond += int(np.count_nonzero(values > hi))
            self.curves[k].setData(edges, counts * (100.0 / len(values)))
        self._set_note(f"{beyond} calls above {hi:.3g} ms not shown" if beyond else "")

    def _set_note(self, text: str) -> None:
        """The note on calls beyond the shown range, as the plot's title (none when empty)."""
        plot = self.plot.getPlotItem()
        if text:
            plot.setTitle(text, color=MUTED, size="9pt")
        else:
            plot.setTitle(None)
