"""The plots' shared look: colours, pens, fonts, axes and legends on a white background."""

from __future__ import annotations

import html
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QPen

from ..colors import FOREGROUND, MUTED, WARMUP_SHADE, series_color, with_alpha

__all__ = [
    "FOREGROUND",
    "MUTED",
    "WARMUP_SHADE",
    "GPU_RUN_COLORS",
    "LEGEND_BRUSH",
    "bar_label_font",
    "curve_pen",
    "histogram_pen",
    "hover_pen",
    "make_legend",
    "series_color",
    "set_legend_text",
    "style_plot_item",
    "warmup_pen",
    "with_alpha",
]

#: Curve colours of the runs on the GPU tab (one per run; the first is neutral, so the
#: variant bands behind a single run keep the colours of the latency curves).
GPU_RUN_COLORS: tuple[str, ...] = (
    "#333333", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
)
#: Fill of the legends and hover labels: white, nearly opaque.
LEGEND_BRUSH = (255, 255, 255, 215)


def _line_style(failed: bool) -> Qt.PenStyle:
    return Qt.PenStyle.DashDotLine if failed else Qt.PenStyle.SolidLine


def curve_pen(color: QColor, failed: bool = False) -> QPen:
    """The pen of a measured-latency curve (dash-dot when the variant failed).

    Width 1 (cosmetic): wider antialiased pens are orders of magnitude slower in Qt.
    """
    return pg.mkPen(color, width=1, style=_line_style(failed))


def warmup_pen(color: QColor, failed: bool = False) -> QPen:
    """The pen of a warm-up curve: the series colour, faded."""
    return pg.mkPen(with_alpha(color, 80), width=1, style=_line_style(failed))


def histogram_pen(color: QColor, failed: bool = False) -> QPen:
    """The outline pen of a histogram."""
    return pg.mkPen(color, width=1.5, style=_line_style(failed))


def hover_pen() -> QPen:
    """The dotted pen of the crosshair and the GPU tab's hover line."""
    return pg.mkPen(MUTED, width=1, style=Qt.PenStyle.DotLine)


def bar_label_font() -> QFont:
    """The bold font of the speedup written on a summary bar."""
    font = QFont()
    font.setPointSize(10)
    font.setBold(True)
    return font


def style_plot_item(item: pg.PlotItem, left: str, bottom: str | None) -> None:
    """Axis pens and labels, a faint grid, the context menu on, the auto-range button off."""
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.enableAutoSIPrefix(False)
        axis.setPen(pg.mkPen(FOREGROUND))
        axis.setTextPen(pg.mkPen(FOREGROUND))
    label_style = {"color": FOREGROUND, "font-size": "10pt"}
    item.setLabel("left", left, **label_style)
    if bottom:
        item.setLabel("bottom", bottom, **label_style)
    item.showGrid(x=True, y=True, alpha=0.15)
    item.setMenuEnabled(True)
    item.hideButtons()


def make_legend(item: pg.PlotItem) -> pg.LegendItem:
    """A legend in the top-right corner of ``item``; its entries are plain text.

    pyqtgraph renders legend labels as HTML: a run label from a shared run
    folder is escaped, so it shows as typed (``bs<64``) and never as markup.
    """
    legend = item.addLegend(
        offset=(-10, 10),
        brush=pg.mkBrush(*LEGEND_BRUSH),
        pen=pg.mkPen(200, 200, 200),
        labelTextColor=FOREGROUND,
        labelTextSize="9pt",
    )
    add = legend.addItem

    def add_plain(entry: Any, name: str) -> None:
        add(entry, html.escape(str(name)))

    legend.addItem = add_plain
    return legend


def set_legend_text(legend: pg.LegendItem, curve: pg.PlotDataItem, text: str) -> None:
    """Rename ``curve`` in ``legend`` (nothing when it is not listed)."""
    label = legend.getLabel(curve)
    if label is not None:
        label.setText(html.escape(text))
        # Lay the legend out now, not in a posted event (one left pending when
        # Python exits makes PySide crash in its clean-up).
        legend.layout.activate()
