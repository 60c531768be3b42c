"""The "Summary" tab: a bar per variant at its median, p5–p95 error bars, the speedup on top."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QVBoxLayout, QWidget

from ...results import SummaryRow
from .style import FOREGROUND, bar_label_font, series_color, style_plot_item, with_alpha
from .tab import PlotTab, TabSpec, register_tab


@dataclass(frozen=True)
class SummaryBar:
    """One bar of the summary chart: a variant's median with its p5–p95 spread."""

    key: str
    label: str
    median_ms: float
    p5_ms: float
    p95_ms: float
    speedup: float | None

    @classmethod
    def from_row(cls, row: SummaryRow, key: str, label: str) -> SummaryBar | None:
        """The bar of one summary row; None when the variant has no median yet."""
        if row.median_ms is None:
            return None
        return cls(
            key=key,
            label=label,
            median_ms=row.median_ms,
            p5_ms=row.p5_ms if row.p5_ms is not None else row.median_ms,
            p95_ms=row.p95_ms if row.p95_ms is not None else row.median_ms,
            speedup=row.speedup,
        )


def format_speedup(speedup: float | None) -> str:
    """The text written on a summary bar, e.g. ``"1.42×"`` (empty when unknown)."""
    if speedup is None or not math.isfinite(speedup):
        return ""
    return f"{speedup:.2f}×"


class SummaryBarsTab(PlotTab):
    """The bars of :meth:`set_bars`, each in the colour of its series (``color_of`` its key)."""

    def __init__(self, color_of: Callable[[str], QColor | None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._color_of = color_of
        self.bars: list[SummaryBar] = []
        self.plot = pg.PlotWidget(background="w")
        style_plot_item(self.plot.getPlotItem(), "median latency (ms), p5–p95", None)
        self.plot.getPlotItem().showGrid(x=False, y=True, alpha=0.15)
        self._bar_items: list[pg.GraphicsObject] = []
        #: the speedup texts on the bars, left to right
        self.bar_texts: list[pg.TextItem] = []
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.plot)

    def set_bars(self, bars: list[SummaryBar]) -> None:
        """Draw median bars with p5–p95 error bars and the speedup on each bar."""
        self.bars = [b for b in bars if b.median_ms is not None and math.isfinite(b.median_ms)]
        plot = self.plot
        for item in self._bar_items + self.bar_texts:
            plot.removeItem(item)
        self._bar_items = []
        self.bar_texts = []
        axis = plot.getPlotItem().getAxis("bottom")
        if not self.bars:
            axis.setTicks([[]])
            return
        n = len(self.bars)
        x = np.arange(n, dtype=float)
        med = np.array([b.median_ms for b in self.bars])
        p5 = np.array([min(b.p5_ms, b.median_ms) for b in self.bars])
        p95 = np.array([max(b.p95_ms, b.median_ms) for b in self.bars])
        colors = []
        for i, b in enumerate(self.bars):
            color = self._color_of(b.key)
            colors.append(color if color is not None else series_color(i))
        bar_item = pg.BarGraphItem(
            x=x,
            height=med,
            width=0.6,
            brushes=[pg.mkBrush(with_alpha(c, 190)) for c in colors],
            pens=[pg.mkPen(c.darker(130), width=1) for c in colors],
        )
        errors = pg.ErrorBarItem(
            x=x, y=med, top=p95 - med, bottom=med - p5, beam=0.18, pen=pg.mkPen(FOREGROUND, width=1.3)
        )
        plot.addItem(bar_item)
        plot.addItem(errors)
        self._bar_items = [bar_item, errors]
        font = bar_label_font()
        for i, b in enumerate(self.bars):
            text = pg.TextItem(format_speedup(b.speedup), color=FOREGROUND, anchor=(0.5, 1.0))
            text.setFont(font)
            text.setPos(float(x[i]), float(p95[i]))
            plot.addItem(text)
            self.bar_texts.append(text)
        axis.setTicks([[(float(x[i]), b.label) for i, b in enumerate(self.bars)]])
        top = float(p95.max()) if len(p95) else 1.0
        plot.getPlotItem().setXRange(-0.6, n - 0.4, padding=0)
        plot.getPlotItem().setYRange(0, top * 1.18 if top > 0 else 1.0, padding=0)

    def clear(self) -> None:
        self.set_bars([])


register_tab(TabSpec(
    key="summary", title="Summary", make=lambda panel: SummaryBarsTab(panel.color_of), order=30,
    caption=("Median latency per variant", "bar = median · whiskers = p5–p95 · label = speedup over eager"),
))
