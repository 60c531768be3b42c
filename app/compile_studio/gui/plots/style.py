"""The plots' shared look: colours, pens, fonts, axes and legends on a white background."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QFont, QPen
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from ..colors import FOREGROUND, MUTED, WARMUP_SHADE, series_color, with_alpha

__all__ = [
    "FOREGROUND",
    "MUTED",
    "WARMUP_SHADE",
    "GPU_RUN_COLORS",
    "LEGEND_BRUSH",
    "RUN_DASHES",
    "PlainLogAxis",
    "SideLegend",
    "side_legend",
    "bar_label_font",
    "curve_pen",
    "histogram_pen",
    "hover_pen",
    "make_legend",
    "plain_number",
    "run_dash",
    "run_dash_name",
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


#: The dash pattern of each overlaid run's curves (in pen widths; None: solid): the first run
#: shown is solid, the next dashed, then dotted, …; a variant keeps its colour in every run.
RUN_DASHES: tuple[tuple[float, ...] | None, ...] = (
    None,
    (6.0, 3.0),
    (1.5, 2.5),
    (12.0, 3.0, 2.0, 3.0),
    (12.0, 5.0),
    (4.0, 2.0, 1.5, 2.0, 1.5, 2.0),
)


#: How each run's line style is named in captions.
RUN_DASH_NAMES = ("solid", "dashed", "dotted", "dash-dot", "long dashes", "dash-dot-dot")


def median_pen(color: QColor) -> QPen:
    """The pen of a median line: wide and pale in the series colour, solid. No run's curve is
    drawn so (theirs are thin: solid, dashed, dotted, …), so "dashed" means one run only."""
    return pg.mkPen(with_alpha(color, 120), width=3)


def run_dash_name(run_style: int) -> str:
    """The name of the ``run_style``-th run's line style ("solid", "dashed", …)."""
    return RUN_DASH_NAMES[run_style % len(RUN_DASH_NAMES)]


def run_dash(run_style: int) -> tuple[float, ...] | None:
    """The dash pattern of the ``run_style``-th run shown (cycles after six)."""
    return RUN_DASHES[run_style % len(RUN_DASHES)]


def _styled(pen: QPen, failed: bool, run_style: int) -> QPen:
    if failed:
        pen.setStyle(Qt.PenStyle.DashDotLine)
        return pen
    dash = run_dash(run_style)
    if dash is not None:
        pen.setDashPattern(list(dash))
    return pen


def curve_pen(color: QColor, failed: bool = False, run_style: int = 0) -> QPen:
    """The pen of a measured-latency curve: its run's dash pattern, dash-dot when the variant failed.

    Width 1 (cosmetic): wider antialiased pens are orders of magnitude slower in Qt.
    """
    return _styled(pg.mkPen(color, width=1), failed, run_style)


def warmup_pen(color: QColor, failed: bool = False, run_style: int = 0) -> QPen:
    """The pen of a warm-up curve: the series colour, faded."""
    return _styled(pg.mkPen(with_alpha(color, 80), width=1), failed, run_style)


def histogram_pen(color: QColor, failed: bool = False, run_style: int = 0) -> QPen:
    """The outline pen of a histogram."""
    return _styled(pg.mkPen(color, width=1.5), failed, run_style)


def plain_number(value: float) -> str:
    """``value`` with up to three significant digits and no exponent: 70, 0.25, 1500."""
    return str(np.format_float_positional(float(value), precision=3, unique=True, fractional=False, trim="-"))


class PlainLogAxis(pg.AxisItem):
    """An axis whose log-scale ticks read as plain numbers (70, not 7·10¹).

    The labels of the 2…9 ticks between decades are left out where they would
    run into a neighbour (decades always keep theirs).
    """

    def logTickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        texts = [plain_number(10 ** float(v) * scale) for v in values]
        lo, hi = (float(r) for r in self.range)
        length = self.width() if self.orientation in ("top", "bottom") else self.height()
        if hi <= lo or length <= 0:
            return texts
        per_unit = length / (hi - lo)
        horizontal = self.orientation in ("top", "bottom")
        kept: list[float] = []
        out = [""] * len(texts)
        # decades first, then the others where there is room
        order = sorted(range(len(values)), key=lambda i: abs(float(values[i]) - round(float(values[i]))) > 1e-9)
        for i in order:
            pos = float(values[i]) * per_unit
            room = (7.0 * len(texts[i]) + 8.0) if horizontal else 15.0
            if all(abs(pos - other) >= room for other in kept):
                out[i] = texts[i]
                kept.append(pos)
        return out


def hover_pen() -> QPen:
    """The dotted pen of the crosshair and the GPU tab's hover line."""
    return pg.mkPen(MUTED, width=1, style=Qt.PenStyle.DotLine)


def bar_label_font() -> QFont:
    """The bold font of the speedup written on a summary bar."""
    font = QFont()
    font.setPointSize(10)
    font.setBold(True)
    return font


def captioned_plot(owner: QWidget, caption: str, toggle: QCheckBox, plot: QWidget) -> QLabel:
    """Lay ``owner`` out as a tab of a plot: a muted caption and its toggle above ``plot``; the caption."""
    label = QLabel(caption)
    label.setStyleSheet(f"color: {MUTED};")
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    bar = QHBoxLayout()
    bar.setContentsMargins(6, 2, 6, 0)
    bar.addWidget(label, 1)
    bar.addWidget(toggle)
    lay = QVBoxLayout(owner)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(2)
    lay.addLayout(bar)
    lay.addWidget(plot, 1)
    return label


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


class CaptionedLayoutView(pg.GraphicsLayoutWidget):
    """A white plot layout whose row 0 holds an export's caption (see gui.image_export).

    The row is empty and zero high on screen; plots go in rows 1 and below.
    ``colspan``: how many layout columns the caption spans.
    """

    def __init__(self, colspan: int = 1, parent: Any = None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        #: the export caption's row (empty and zero high on screen)
        self.caption_label = self.ci.addLabel("", row=0, col=0, colspan=colspan)
        self.caption_label.setMaximumHeight(0)
        self.ci.layout.setRowFixedHeight(0, 0)

    def export_caption_slot(self) -> tuple[pg.LabelItem, Any]:
        """The label and layout row 0 an export writes its caption into."""
        return self.caption_label, self.ci.layout


#: The legend goes beside the plot while it takes at most this share of the plot's width,
#: else below it, in as many columns as fit.
LEGEND_RIGHT_SHARE = 0.3


class SideLegend(pg.LegendItem):
    """A legend in a cell of its own next to a plot, so it never covers a curve.

    Placed right of the plot (``right``: row, column of ``host``'s grid) while
    it takes at most :data:`LEGEND_RIGHT_SHARE` of ``host``'s width, else below
    it (``bottom``: row, column, row span, column span) in as many columns as
    fit. It takes no room while hidden (:meth:`sync`: shown when it lists
    something and :attr:`wanted`), and does not move when dragged.
    """

    def __init__(
        self,
        host: pg.GraphicsWidget,
        right: tuple[int, int] = (2, 3),
        bottom: tuple[int, int, int, int] = (4, 1, 1, 1),
        **kwargs: Any,
    ) -> None:
        super().__init__(offset=None, **kwargs)
        self._host = host
        self._right = right
        self._bottom = bottom
        #: where the legend is now: None (not shown), or ("right", 1) / ("bottom", columns)
        self.placement: tuple[str, int] | None = None
        self._busy = False
        #: the user's choice (the "Legend" toggle); shown only when it lists something too
        self.wanted = True
        self.setParentItem(host)
        self.setVisible(False)
        # A width change can move the legend between right and below, which edits the
        # host's layout: never from inside that layout's own activation (a geometry
        # change fires while Qt lays out or paints the scene), always from the event loop.
        self._resync = QTimer()
        self._resync.setSingleShot(True)
        self._resync.setInterval(0)
        self._resync.timeout.connect(self.sync)
        host.geometryChanged.connect(self._resync.start)

    def sync_soon(self) -> None:
        """Place the legend again from the event loop (after the host's size changed)."""
        self._resync.start()

    def _entry_width(self) -> float:
        widest = 0.0
        for sample, label in self.items:
            text = max(label.width(), label.item.boundingRect().width())
            widest = max(widest, sample.boundingRect().width() + text + 8)
        return widest

    def _wanted_placement(self) -> tuple[str, int] | None:
        if not (self.wanted and self.items):
            return None
        host_width = self._host.width()
        entry = self._entry_width()
        if host_width <= 0 or entry <= LEGEND_RIGHT_SHARE * host_width:
            return ("right", 1)
        columns = int(max(1, min(len(self.items), (host_width * 0.9) // max(entry, 1.0))))
        return ("bottom", columns)

    def updateSize(self) -> None:  # noqa: N802 - pyqtgraph API
        width = 0.0
        height = 0.0
        for row in range(self.layout.rowCount()):
            row_height = 0.0
            row_width = 0.0
            for col in range(self.layout.columnCount()):
                entry = self.layout.itemAt(row, col)
                if entry:
                    row_width += entry.width() + 3
                    row_height = max(row_height, entry.height())
            width = max(width, row_width)
            height += row_height
        # the entries' grid with its margins and spacing, as its layout asks for it
        hint = self.layout.effectiveSizeHint(Qt.SizeHint.PreferredSize)
        width = max(width + 6, hint.width() + 4)
        height = max(height + 4, hint.height() + 4)
        self.setMinimumWidth(width)
        self.setMaximumWidth(width)
        self.setMinimumHeight(0)
        self.setPreferredHeight(height)
        self.setMaximumHeight(height)

    def mouseDragEvent(self, ev: Any) -> None:  # noqa: N802 - pyqtgraph API
        ev.ignore()

    def sync(self) -> None:
        """Place, move or remove the legend as its entries, the plot's width and :attr:`wanted` ask."""
        if self._busy:
            return
        placement = self._wanted_placement()
        if placement == self.placement:
            return  # called on every repaint tick: nothing to do unless that changed
        self._busy = True
        try:
            layout = self._host.layout
            if self.placement is not None:
                layout.removeItem(self)
            if placement is not None:
                side, columns = placement
                self.setColumnCount(columns)
                if side == "right":
                    layout.addItem(self, *self._right)
                    layout.setAlignment(self, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
                else:
                    layout.addItem(self, *self._bottom)
                    layout.setAlignment(self, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignHCenter)
                self.updateSize()
            self.placement = placement
            self.setVisible(placement is not None)
            layout.activate()
        finally:
            self._busy = False


def _plain_text_entries(legend: pg.LegendItem) -> pg.LegendItem:
    """Make ``legend`` show its entries' names as plain text (escaped HTML)."""
    add = legend.addItem

    def add_plain(entry: Any, name: str) -> None:
        add(entry, html.escape(str(name)))

    legend.addItem = add_plain
    return legend


def _legend_options() -> dict[str, Any]:
    return {
        "brush": pg.mkBrush(*LEGEND_BRUSH),
        "pen": pg.mkPen(200, 200, 200),
        "labelTextColor": FOREGROUND,
        "labelTextSize": "9pt",
    }


def side_legend(
    host: pg.GraphicsWidget, right: tuple[int, int], bottom: tuple[int, int, int, int]
) -> SideLegend:
    """A :class:`SideLegend` in ``host``'s grid with plain-text entries."""
    legend = SideLegend(host, right, bottom, **_legend_options())
    _plain_text_entries(legend)
    return legend


def make_legend(item: pg.PlotItem, outside: bool = False) -> pg.LegendItem:
    """A legend of ``item`` (top-right inside, or ``outside``: a :class:`SideLegend`); plain-text entries.

    pyqtgraph renders legend labels as HTML: a run label from a shared run
    folder is escaped, so it shows as typed (``bs<64``) and never as markup.
    """
    if outside:
        legend: pg.LegendItem = side_legend(item, (2, 3), (4, 1, 1, 1))
        item.legend = legend  # named curves added to the plot join it
        return legend
    return _plain_text_entries(item.addLegend(offset=(-10, 10), **_legend_options()))


def set_legend_text(legend: pg.LegendItem, curve: pg.PlotDataItem, text: str) -> None:
    """Rename ``curve`` in ``legend`` (nothing when it is not listed)."""
    label = legend.getLabel(curve)
    if label is not None:
        label.setText(html.escape(text))
        legend.updateSize()
        # Lay the legend out now, not in a posted event (one left pending when
        # Python exits makes PySide crash in its clean-up).
        legend.layout.activate()
