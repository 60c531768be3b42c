"""The Why tab's two pieces of evidence drawn for reading: the top-operators table and the compile-phase chart.

:class:`OpsTable` keeps every column readable at any width: the figures take
the width their text needs, the name column what is left but never less than
:data:`NAME_MIN_WIDTH` (the table scrolls sideways instead), and a name that
does not fit is elided in the middle with the whole name in its tooltip.

:class:`PhaseBars` draws one stacked bar per compiled variant, each phase in
its own colour from ``gui.colors`` (never black or yellow: "cache load", which
was black, is sky blue and written on its bar), with the legend in a row of
its own above the bars, and axes sized from the font's metrics so no variant
name or axis label is cut off. Names from the run folder are shown as plain
text. No torch.
"""

from __future__ import annotations

import html
import math
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF
from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from ..results.explain.why_files import WhyReport
from .colors import EXTRA_COLORS, FOREGROUND, OKABE_ITO
from .plots.style import SideLegend

#: Columns of the top-operators table, and what each says (their header's tooltip).
OP_COLUMNS = ["operator / kernel", "self / call", "calls / call", "share"]
OP_TIPS = [
    "the operator or kernel (elided when narrow: its tooltip has the whole name)",
    "self time per call (median over the profiled calls)",
    "calls of it per call of the model",
    "share of the call's wall time",
]
#: The least width (px) of the name column: narrower, the table scrolls sideways.
NAME_MIN_WIDTH = 180
#: Rows the table shows at least (it scrolls for more).
MIN_ROWS = 4

#: A colour per compile phase, the same in every run. All from ``gui.colors``; no black or
#: yellow: "cache load" (the backend loading a cached graph) was black, a bar that read as a gap.
PHASE_COLORS: dict[str, str] = {
    "Dynamo tracing": OKABE_ITO[0],  # blue
    "AOT autograd": OKABE_ITO[1],  # orange
    "Inductor lowering": OKABE_ITO[2],  # bluish green
    "autotuning": OKABE_ITO[4],  # reddish purple
    "Inductor codegen": OKABE_ITO[3],  # vermillion
    "C++/Triton build": EXTRA_COLORS[2],  # indigo
    "cache load": OKABE_ITO[5],  # sky blue
}
#: Colours for phases not named above (a newer torch's), in this order.
OTHER_PHASE_COLORS: tuple[str, ...] = tuple(
    c for c in (*EXTRA_COLORS, *OKABE_ITO) if c not in PHASE_COLORS.values() and c not in ("#000000", "#F0E442")
)
#: The phase written on its bar as well as in the legend.
CACHE_LOAD = "cache load"
#: The widest variant name (px) the chart's left axis shows; a longer one is elided in the middle.
MAX_NAME_WIDTH = 220
#: Pixels per bar (a row of the chart), and the chart's least height.
ROW_PX = 26
MIN_CHART_HEIGHT = 120


def phase_color(phase: str, others: list[str]) -> QColor:
    """The colour of ``phase``; ``others``: the unnamed phases seen so far (each keeps its place)."""
    known = PHASE_COLORS.get(phase)
    if known is not None:
        return QColor(known)
    if phase not in others:
        others.append(phase)
    return QColor(OTHER_PHASE_COLORS[others.index(phase) % len(OTHER_PHASE_COLORS)])


class OpsTable(QTableWidget):
    """The top operators or kernels of a variant's profile, readable at any width."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(OP_COLUMNS), parent)
        self.setHorizontalHeaderLabels(OP_COLUMNS)
        for j, tip in enumerate(OP_TIPS):
            header_item = self.horizontalHeaderItem(j)
            if header_item is not None:
                header_item.setToolTip(tip)
        header = self.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.verticalHeader().hide()
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.setHorizontalScrollMode(QTableWidget.ScrollMode.ScrollPerPixel)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        # as tall as its rows where there is room (the tab scrolls), never fewer than MIN_ROWS
        self.setSizeAdjustPolicy(QTableWidget.SizeAdjustPolicy.AdjustToContents)
        rows = self.verticalHeader().defaultSectionSize() * MIN_ROWS
        self.setMinimumHeight(
            header.sizeHint().height() + rows + self.horizontalScrollBar().sizeHint().height() + 2 * self.frameWidth()
        )

    def set_rows(self, rows: list[list[str]]) -> None:
        """One row per operator: its name, then its figures (right-aligned)."""
        self.setRowCount(len(rows))
        for i, cells in enumerate(rows):
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if j:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                else:
                    item.setToolTip(text)  # the whole name, however narrow the column
                self.setItem(i, j, item)
        self.fit_columns()

    def fit_columns(self) -> None:
        """The figures as wide as their text, the name column the rest (at least :data:`NAME_MIN_WIDTH`)."""
        header = self.horizontalHeader()
        figures = 0
        for j in range(1, self.columnCount()):
            width = max(self.sizeHintForColumn(j), header.sectionSizeHint(j))
            self.setColumnWidth(j, width)
            figures += width
        room = self.maximumViewportSize().width()
        if self.rowCount() * self.verticalHeader().defaultSectionSize() > self.viewport().height():
            room -= self.verticalScrollBar().sizeHint().width()
        self.setColumnWidth(0, max(NAME_MIN_WIDTH, room - figures))

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self.fit_columns()


class _LegendRow(SideLegend):
    """The phase legend in a row of its own above the bars, in as many columns as fit across
    the chart's widget (not its layout, which a wide legend would widen)."""

    owner: PhaseBars | None = None

    def _wanted_placement(self) -> tuple[str, int] | None:
        if not (self.wanted and self.items):
            return None
        width = self.owner.viewport().width() if self.owner is not None else self._host.width()
        entry = max(self._entry_width(), 1.0) + 8
        columns = len(self.items) if width <= 0 else int(max(1, min(len(self.items), (width - 16) // entry)))
        return ("bottom", columns)

    def sync(self) -> None:
        before = self.placement
        super().sync()
        if self.owner is not None:
            self.owner.fit_height()
            if self.placement != before:  # the layout may be narrower now: fit it to the view again
                self.owner.ci.setGeometry(QRectF(0, 0, self.owner.width(), self.owner.height()))


class PhaseBars(pg.GraphicsLayoutWidget):
    """Compile time by phase: one horizontal stacked bar per compiled variant.

    Rows of the layout: the title, the legend (phases and the first-call mark),
    the plot. :attr:`cache_labels` are the "cache load" texts written on their bars.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        self.tick_font = QFont(self.font())
        self.title = self.ci.addLabel("compile time by phase", row=0, col=0, color=FOREGROUND, size="10pt")
        self.item: pg.PlotItem = self.ci.addPlot(row=2, col=0)
        self.legend = _LegendRow(self.ci, right=(1, 0), bottom=(1, 0, 1, 1), labelTextColor=FOREGROUND,
                                 labelTextSize="9pt", pen=pg.mkPen(None), brush=pg.mkBrush(None))
        self.legend.owner = self
        self.item.layout.setContentsMargins(2, 2, 10, 6)
        for name in ("left", "bottom"):
            axis = self.item.getAxis(name)
            axis.setPen(pg.mkPen(FOREGROUND))
            axis.setTextPen(pg.mkPen(FOREGROUND))
            axis.setTickFont(self.tick_font)
            axis.setStyle(autoExpandTextSpace=False)
        self.item.getAxis("bottom").enableAutoSIPrefix(False)
        self.item.setLabel("bottom", "seconds of the first call", color=FOREGROUND, **{"font-size": "9pt"})
        self.item.showGrid(x=True, y=False, alpha=0.3)
        self.item.setMouseEnabled(x=False, y=False)
        self.item.invertY(True)  # the first variant on top, as the variant list reads
        self.item.setMenuEnabled(False)
        self.item.hideButtons()
        self.bars: list[pg.BarGraphItem] = []
        #: the "cache load" text on each bar that has one; (start, width, row, end of the bar) of each
        self.cache_labels: list[pg.TextItem] = []
        self._cache_spans: list[tuple[float, float, int, float]] = []
        #: the variant names on the left axis (as read) and as drawn there (elided to fit)
        self.names: list[str] = []
        self.shown_names: list[str] = []
        self._placing = False
        #: the right end of the x range the bars and marks need (labels may widen it)
        self._x_right = 1.0
        self.item.getViewBox().sigResized.connect(self._place_cache_labels)
        self._fit_axes()
        self.fit_height()

    # -- drawing --------------------------------------------------------------------------------
    def show_phases(self, report: WhyReport) -> None:
        self.item.clear()
        self.legend.clear()
        self.bars, self.cache_labels, self._cache_spans = [], [], []
        rows = [(n, v) for n, v in report.variants.items() if v.compile is not None and v.compile.phases]
        phases: list[str] = []
        for _, v in rows:
            assert v.compile is not None
            phases += [p for p in v.compile.phases if p not in phases]
        others: list[str] = []
        for j, phase in enumerate(phases):
            x0, y, w = [], [], []
            for i, (_, v) in enumerate(rows):
                assert v.compile is not None
                x0.append(sum(v.compile.phases.get(p, 0.0) for p in phases[:j]))
                y.append(i)
                w.append(v.compile.phases.get(phase, 0.0))
            if not any(w):
                continue
            color = phase_color(phase, others)
            bar = pg.BarGraphItem(x0=x0, y=y, height=0.6, width=w, brush=color, pen=pg.mkPen(None))
            self.item.addItem(bar)
            self.legend.addItem(bar, html.escape(phase))
            self.bars.append(bar)
            if phase == CACHE_LOAD:
                for i, (start, width) in enumerate(zip(x0, w)):
                    if width > 0:
                        self._cache_label(start, width, i)
        ends = []
        for i, (_, v) in enumerate(rows):
            assert v.compile is not None
            if v.compile.first_call_ms:
                ends.append((v.compile.first_call_ms / 1000.0, i))
        # a "cache load" text too wide for its bar goes right of the bar and its first-call mark
        ending = {i: max(x, sum(rows[i][1].compile.phases.values())) for x, i in ends}  # type: ignore[union-attr]
        self._cache_spans = [(s, w_, i, ending.get(i, s + w_)) for s, w_, i, _ in self._cache_spans]
        if ends:
            mark = pg.ScatterPlotItem([x for x, _ in ends], [i for _, i in ends], symbol="|", size=18,
                                      pen=pg.mkPen(FOREGROUND, width=2), brush=pg.mkBrush(FOREGROUND))
            self.item.addItem(mark)
            self.legend.addItem(mark, "first call")
        self.names = [name for name, _ in rows]
        self._fit_axes()
        self.item.setYRange(-0.6, max(0.6, len(rows) - 0.4), padding=0)
        ends_x = [x for x, _ in ends] + [s_ + w_ for s_, w_, _, _ in self._cache_spans]
        for bar in self.bars:
            ends_x += [float(a + b) for a, b in zip(bar.opts["x0"], bar.opts["width"])]
        self._x_right = max(ends_x, default=1.0) * 1.04 or 1.0
        self.item.setXRange(0.0, self._x_right, padding=0)
        self.title.setText("compile time by phase" if rows else "no compile phases", color=FOREGROUND, size="10pt")
        self.legend.sync()
        self.fit_height()
        self._place_cache_labels()

    def _cache_label(self, start: float, width: float, row: int) -> None:
        label = pg.TextItem(f"{CACHE_LOAD} {width:.2g} s", color=FOREGROUND, anchor=(0.5, 0.5))
        label.setZValue(20)
        self.item.addItem(label, ignoreBounds=True)
        self.cache_labels.append(label)
        self._cache_spans.append((start, width, row, start + width))

    def _place_cache_labels(self, *args: object) -> None:
        """Each "cache load" text inside its bar where it fits, else right of the bar's end (the
        range widened to hold it)."""
        vb = self.item.getViewBox()
        if vb.width() <= 0 or self._placing:
            return
        self._placing = True
        try:
            base = self._x_right
            px = vb.width() / base
            right = base
            for label, (start, width, row, end) in zip(self.cache_labels, self._cache_spans):
                text = label.textItem.boundingRect().width() + 8
                if width * px >= text:
                    label.setAnchor((0.5, 0.5))
                    label.setPos(start + width / 2, row)
                else:
                    label.setAnchor((0.0, 0.5))
                    label.setPos(end, row)
                    if text < 0.8 * vb.width():  # end + text at the scale of the wider range
                        right = max(right, end / (1.0 - text / vb.width()))
            if abs(vb.viewRange()[0][1] - right) > 1e-9 * right:
                vb.setXRange(0.0, right, padding=0)
        finally:
            self._placing = False

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        legend = getattr(self, "legend", None)  # pyqtgraph resizes the view while it is made
        if legend is not None:
            legend.sync_soon()  # as many legend columns as fit the new width

    # -- sizes from the font ----------------------------------------------------------------------
    def _fit_axes(self) -> None:
        """The left axis as wide as the longest name (elided past :data:`MAX_NAME_WIDTH`), the bottom
        axis as high as its tick texts and its label, so neither is cut off."""
        metrics = QFontMetricsF(self.tick_font)
        self.shown_names = [
            metrics.elidedText(name, Qt.TextElideMode.ElideMiddle, MAX_NAME_WIDTH) for name in self.names
        ]
        left = self.item.getAxis("left")
        left.setTicks([list(enumerate(self.shown_names))])
        widest = max((metrics.horizontalAdvance(s) for s in self.shown_names), default=metrics.horizontalAdvance("0"))
        left.setWidth(int(math.ceil(widest + left.style["tickTextOffset"][0] + max(0, left.style["tickLength"]) + 6)))
        bottom = self.item.getAxis("bottom")
        label = bottom.label.boundingRect().height() if bottom.label.isVisible() else 0.0
        # the label sits at the axis' bottom, 5 px lower than its box (pyqtgraph), the ticks' text at the top
        bottom.setHeight(int(math.ceil(metrics.height() + bottom.style["tickTextOffset"][1] + label - 2)))

    def fit_height(self) -> None:
        """Ask for the height the title, the legend, a row per bar and the axis need (and not much more)."""
        legend = self.legend.preferredHeight() if self.legend.isVisible() else 0.0
        title = self.title.minimumHeight() or QFontMetricsF(self.tick_font).height() * 1.6
        axis = self.item.getAxis("bottom").height()
        rows = max(1, len(self.names))
        need = max(MIN_CHART_HEIGHT, int(math.ceil(title + legend + rows * ROW_PX + axis + 30)))
        # no taller than that and a little: a bar stays a bar, never a block
        self.setMinimumHeight(need)
        self.setMaximumHeight(need + ROW_PX)
        left = self.item.getAxis("left").width()
        self.setMinimumWidth(int(left + 160))
