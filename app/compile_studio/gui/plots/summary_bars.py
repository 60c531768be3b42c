"""The "Summary" tab: per variant a median bar, its interquartile box and p5–p95 whiskers, the speedup on top.

The axis range is set by the boxes (p25–p75), never by the whiskers: on a
noisy machine a p95 of 20 ms beside a median of 0.06 ms would squash the
median to nothing. A whisker beyond the range is drawn to its edge and marked
there (▲ and its value). The latency axis turns logarithmic by itself when the
boxes span more than :data:`AUTO_LOG_SPREAD` times; the "Log scale" toggle
overrides that.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics
from PySide6.QtWidgets import QCheckBox, QWidget

from ...results import SummaryRow
from .style import (
    FOREGROUND,
    PlainLogAxis,
    bar_label_font,
    captioned_plot,
    plain_number,
    series_color,
    style_plot_item,
    with_alpha,
)
from .tab import PlotTab, TabSpec, register_tab

#: Above this ratio of the highest box top to the lowest box bottom the axis is logarithmic by default.
AUTO_LOG_SPREAD = 10.0
#: Whiskers are drawn whole while they reach at most this many times the boxes' range.
WHISKER_ROOM = 2.0
#: Head room above the highest mark for the speedup labels (a share of the range).
LABEL_ROOM = 0.22

SUMMARY_CAPTION = (
    "bar = median · box = p25–p75 · whiskers = p5–p95 (▲ value: a whisker beyond the range, cut at its edge)"
)

#: The caption above the summary bars.
SUMMARY_BARS_CAPTION = (
    "Bar: median · box: p25–p75 · whiskers: p5–p95, cut at the edge (▲) where they would squash the boxes"
)


def axis_ticks(bars: list[SummaryBar], px_per_bar: float, metrics: QFontMetrics) -> list[tuple[float, str]]:
    """The x axis's texts: each bar's variant; with several runs, a second line with the run's
    name once, under the middle of its bars, cut to their width (names never run into each other)."""
    parts = []
    for b in bars:
        run_key, sep, variant = b.key.partition("/")
        if not sep:
            run_key, variant = "", b.key
        name = b.label[: -len(variant)] if variant and b.label.endswith(variant) else ""
        parts.append((run_key, name.strip().rstrip("·").strip(), variant or b.label))
    groups: dict[str, list[int]] = {}
    for i, (run_key, _, _) in enumerate(parts):
        groups.setdefault(run_key, []).append(i)
    if len(groups) < 2 or not any(name for _, name, _ in parts):
        return [(float(i), b.label) for i, b in enumerate(bars)]
    under = [""] * len(bars)
    for indices in groups.values():
        name = parts[indices[0]][1]
        room = max(20, int(px_per_bar * len(indices)) - 10)
        under[indices[len(indices) // 2]] = metrics.elidedText(name, Qt.TextElideMode.ElideRight, room)
    return [
        (float(i), f"{metrics.elidedText(variant, Qt.TextElideMode.ElideRight, max(20, int(px_per_bar) - 4))}\n{under[i]}")
        for i, (_, _, variant) in enumerate(parts)
    ]


@dataclass(frozen=True)
class SummaryBar:
    """One variant of the summary chart: its median, p5–p95 whiskers and p25–p75 box (None: not known)."""

    key: str
    label: str
    median_ms: float
    p5_ms: float
    p95_ms: float
    speedup: float | None
    p25_ms: float | None = None
    p75_ms: float | None = None

    @classmethod
    def from_row(cls, row: SummaryRow, key: str, label: str) -> SummaryBar | None:
        """The bar of one summary row; None when the variant has no median yet.

        The box is filled in by the tab from the series' measured calls (the row has no quartiles).
        """
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

    def box(self) -> tuple[float, float]:
        """(p25, p75), the median where a quartile is not known; always around the median."""
        lo = self.p25_ms if self.p25_ms is not None and math.isfinite(self.p25_ms) else self.median_ms
        hi = self.p75_ms if self.p75_ms is not None and math.isfinite(self.p75_ms) else self.median_ms
        return min(lo, self.median_ms), max(hi, self.median_ms)

    def whiskers(self) -> tuple[float, float]:
        """(p5, p95), never inside the box."""
        lo, hi = self.box()
        return min(self.p5_ms, lo), max(self.p95_ms, hi)


def format_speedup(speedup: float | None) -> str:
    """The text written on a summary bar, e.g. ``"1.42×"`` (empty when unknown)."""
    if speedup is None or not math.isfinite(speedup):
        return ""
    return f"{speedup:.2f}×"


def box_spread(bars: list[SummaryBar]) -> float:
    """The highest box top over the lowest box bottom (1 with no bar, inf with a box at 0)."""
    if not bars:
        return 1.0
    low = min(b.box()[0] for b in bars)
    high = max(b.box()[1] for b in bars)
    if low <= 0:
        return math.inf if high > 0 else 1.0
    return high / low


@dataclass(frozen=True)
class ClippedWhisker:
    """A whisker cut at the edge of the range shown: which bar, which end, its value (ms)."""

    index: int
    end: str  # "p95" (cut at the top) or "p5" (cut at the bottom)
    value_ms: float


class SummaryBarsTab(PlotTab):
    """The bars of :meth:`set_bars`, each in the colour of its series (``color_of`` its key).

    ``quartiles_of`` gives (p25, p75) of a series' measured calls (None: no
    calls); it fills in the box of a bar that does not carry one.
    """

    def __init__(
        self,
        color_of: Callable[[str], QColor | None],
        quartiles_of: Callable[[str], tuple[float, float] | None] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._color_of = color_of
        self._quartiles_of = quartiles_of
        self.bars: list[SummaryBar] = []
        self.plot = pg.PlotWidget(background="w", axisItems={"left": PlainLogAxis("left")})
        item = self.plot.getPlotItem()
        style_plot_item(item, "latency (ms): median, p25–p75, p5–p95", None)
        item.showGrid(x=False, y=True, alpha=0.15)
        # the plot's own log switch would transform none of these items: the tab's toggle does it
        item.ctrl.logYCheck.setEnabled(False)
        self._bar_items: list[pg.GraphicsObject] = []
        #: the speedup texts on the bars, left to right
        self.bar_texts: list[pg.TextItem] = []
        #: the marks (and texts) of whiskers cut at the edge of the range
        self.clip_texts: list[pg.TextItem] = []
        self.clipped: list[ClippedWhisker] = []
        #: the y range shown (ms), bottom to top
        self.shown_range: tuple[float, float] = (0.0, 1.0)
        #: whether every whisker is drawn whole (none cut at an edge)
        self.whiskers_whole = True
        self._log_y = False
        #: the user's choice of the log toggle (None: chosen by the spread of the boxes)
        self._log_chosen: bool | None = None

        self.log_scale_checkbox = QCheckBox("Log scale")
        self.log_scale_checkbox.setToolTip(
            f"Logarithmic latency axis (on by itself when the boxes span more than {AUTO_LOG_SPREAD:g}×)"
        )
        self.log_scale_checkbox.toggled.connect(self._on_log_toggled)
        self.caption = captioned_plot(self, SUMMARY_BARS_CAPTION, self.log_scale_checkbox, self.plot)
        #: a line about the run shown under the caption (how its timed calls took turns with drawing)
        self.run_note = ""

    def set_note(self, text: str) -> None:
        """Show ``text`` (a line about the run shown) under the caption; "" for none."""
        self.run_note = text
        self.caption.setText(SUMMARY_BARS_CAPTION + (f"\n{text}" if text else ""))

    # -- log scale ------------------------------------------------------------------------
    def log_scale(self) -> bool:
        """Whether the latency axis is logarithmic."""
        return self._log_y

    def set_log_scale(self, on: bool | None) -> None:
        """Log (True) or linear (False) axis as the user chose; None: chosen by the spread of the boxes."""
        self._log_chosen = None if on is None else bool(on)
        self._draw()

    def _on_log_toggled(self, on: bool) -> None:
        self.set_log_scale(on)

    def _want_log(self) -> bool:
        if self._log_chosen is not None:
            return self._log_chosen
        return box_spread(self.bars) > AUTO_LOG_SPREAD

    # -- bars ------------------------------------------------------------------------------
    def _with_box(self, b: SummaryBar) -> SummaryBar:
        if b.p25_ms is not None and b.p75_ms is not None or self._quartiles_of is None:
            return b
        q = self._quartiles_of(b.key)
        if q is None:
            return b
        return dataclasses.replace(b, p25_ms=q[0], p75_ms=q[1])

    def set_bars(self, bars: list[SummaryBar]) -> None:
        """Draw each bar's median, p25–p75 box and p5–p95 whiskers and its speedup."""
        self.bars = [
            self._with_box(b) for b in bars if b.median_ms is not None and math.isfinite(b.median_ms)
        ]
        self._draw()

    def _to_view(self, ms: float) -> float:
        if not self._log_y:
            return ms
        return math.log10(ms) if ms > 0 else -12.0

    def _draw(self) -> None:
        plot = self.plot
        item = plot.getPlotItem()
        for old in self._bar_items + self.bar_texts + self.clip_texts:
            plot.removeItem(old)
        self._bar_items, self.bar_texts, self.clip_texts, self.clipped = [], [], [], []
        axis = item.getAxis("bottom")
        # log needs every box above 0
        self._log_y = self._want_log() and all(b.box()[0] > 0 for b in self.bars)
        self.log_scale_checkbox.blockSignals(True)
        self.log_scale_checkbox.setChecked(self._log_y)
        self.log_scale_checkbox.blockSignals(False)
        item.getAxis("left").setLogMode(False, self._log_y)
        if not self.bars:
            axis.setTicks([[]])
            axis.setHeight(None)
            return
        n = len(self.bars)
        x = np.arange(n, dtype=float)
        bottom, top, whiskers_whole = self._range()
        v = self._to_view
        lo_v, hi_v = v(bottom), v(top)
        span = hi_v - lo_v
        box_hi, w_hi = self._draw_boxes(x, lo_v, hi_v)
        self._label_bars(x, box_hi, w_hi, lo_v, hi_v)
        px_per_bar = item.getViewBox().width() / n if item.getViewBox().width() > 0 else 80.0
        metrics = QFontMetrics(axis.style.get("tickFont") or QFont())
        ticks = axis_ticks(self.bars, px_per_bar, metrics)
        axis.setTicks([ticks])
        two_lines = any("\n" in text for _, text in ticks)
        # two lines of names (variant, run) need the room of two
        axis.setHeight(2 * metrics.lineSpacing() + 14 if two_lines else None)
        item.setXRange(-0.6, n - 0.4, padding=0)
        item.setYRange(lo_v, hi_v + LABEL_ROOM * span, padding=0)
        self.shown_range = (bottom, top)
        self.whiskers_whole = whiskers_whole

    def _draw_boxes(self, x: np.ndarray, lo_v: float, hi_v: float) -> tuple[np.ndarray, np.ndarray]:
        """Each bar's median bar, box, whiskers (cut at the range) and median mark, at ``x``
        (view units); returns the boxes' and the whiskers' tops."""
        plot, v, n = self.plot, self._to_view, len(self.bars)
        colors = []
        for i, b in enumerate(self.bars):
            color = self._color_of(b.key)
            colors.append(color if color is not None else series_color(i))
        med = np.array([v(b.median_ms) for b in self.bars])
        box_lo = np.array([v(b.box()[0]) for b in self.bars])
        box_hi = np.array([v(b.box()[1]) for b in self.bars])
        median_bars = pg.BarGraphItem(
            x=x, y0=np.full(n, lo_v), y1=med, width=0.6,
            brushes=[pg.mkBrush(with_alpha(c, 70)) for c in colors], pens=[pg.mkPen(None) for _ in colors],
        )
        boxes = pg.BarGraphItem(
            x=x, y0=box_lo, y1=box_hi, width=0.36,
            brushes=[pg.mkBrush(with_alpha(c, 200)) for c in colors],
            pens=[pg.mkPen(c.darker(140), width=1) for c in colors],
        )
        # whiskers drawn to the edge of the range where they reach beyond it
        w_lo = np.array([max(v(b.whiskers()[0]), lo_v) for b in self.bars])
        w_hi = np.array([min(v(b.whiskers()[1]), hi_v) for b in self.bars])
        whisker_item = pg.ErrorBarItem(
            x=x, y=box_lo, top=np.maximum(w_hi - box_lo, 0), bottom=np.maximum(box_lo - w_lo, 0), beam=0.0,
            pen=pg.mkPen(FOREGROUND, width=1.3),
        )
        caps_top = pg.ErrorBarItem(x=x, y=w_hi, top=np.zeros(n), bottom=np.zeros(n), beam=0.18,
                                   pen=pg.mkPen(FOREGROUND, width=1.3))
        caps_bottom = pg.ErrorBarItem(x=x, y=w_lo, top=np.zeros(n), bottom=np.zeros(n), beam=0.18,
                                      pen=pg.mkPen(FOREGROUND, width=1.3))
        median_marks = pg.ErrorBarItem(x=x, y=med, top=np.zeros(n), bottom=np.zeros(n), beam=0.5,
                                       pen=pg.mkPen(FOREGROUND, width=2.5))
        new_items = [median_bars, whisker_item, caps_top, caps_bottom, boxes, median_marks]
        for it in new_items:
            plot.addItem(it)
        self._bar_items = list(new_items)
        return box_hi, w_hi

    def _label_bars(self, x: np.ndarray, box_hi: np.ndarray, w_hi: np.ndarray, lo_v: float, hi_v: float) -> None:
        """Each bar's speedup above it, and a mark where a whisker is cut at the range's edge."""
        plot, v, font = self.plot, self._to_view, bar_label_font()
        for i, b in enumerate(self.bars):
            p5, p95 = b.whiskers()
            cut_top = v(p95) > hi_v + 1e-12
            cut_bottom = v(p5) < lo_v - 1e-12
            if cut_top:
                self._clip_mark(i, "p95", p95, float(x[i]), hi_v, top_edge=True)
            if cut_bottom:
                self._clip_mark(i, "p5", p5, float(x[i]), lo_v, top_edge=False)
            text = pg.TextItem(format_speedup(b.speedup), color=FOREGROUND, anchor=(0.5, 1.0))
            text.setFont(font)
            # above the whisker where it is whole; else above the box, beside the cut whisker
            if cut_top:
                text.setAnchor((0.0, 1.0))
                text.setPos(float(x[i]) + 0.2, float(box_hi[i]))
            else:
                text.setPos(float(x[i]), float(w_hi[i]))
            plot.addItem(text)
            self.bar_texts.append(text)

    def _clip_mark(self, index: int, end: str, value_ms: float, x: float, edge_v: float, top_edge: bool) -> None:
        self.clipped.append(ClippedWhisker(index, end, value_ms))
        arrow = "▲" if top_edge else "▼"
        mark = pg.TextItem(
            f"{arrow} {end} {plain_number(value_ms)} ms", color=FOREGROUND, anchor=(0.5, 1.0 if top_edge else 0.0)
        )
        mark.setPos(x, edge_v)
        self.plot.addItem(mark)
        self.clip_texts.append(mark)

    def _range(self) -> tuple[float, float, bool]:
        """(bottom, top) in ms of the range the marks are drawn in, and whether every whisker fits.

        Set by the boxes; the whiskers join it while that at most doubles its span.
        """
        box_lo = min(b.box()[0] for b in self.bars)
        box_hi = max(b.box()[1] for b in self.bars)
        w_lo = min(b.whiskers()[0] for b in self.bars)
        w_hi = max(b.whiskers()[1] for b in self.bars)
        if self._log_y:
            lo, hi = math.log10(box_lo), math.log10(box_hi)
            pad = max(0.15 * (hi - lo), 0.08)
            lo, hi = lo - pad, hi + pad
            span = hi - lo
            wl = math.log10(w_lo) if w_lo > 0 else -math.inf
            wh = math.log10(w_hi)
            whole = True
            if wh - lo <= WHISKER_ROOM * span:
                hi = max(hi, wh + 0.03 * span)
            else:
                whole = False
            if hi - wl <= WHISKER_ROOM * span:
                lo = min(lo, wl - 0.03 * span)
            else:
                whole = False
            return 10 ** lo, 10 ** hi, whole
        top = box_hi * 1.15 if box_hi > 0 else 1.0
        whole = w_hi <= WHISKER_ROOM * top
        if whole:
            top = max(top, w_hi * 1.03)
        return 0.0, top, whole

    def clear(self) -> None:
        self.set_bars([])


register_tab(TabSpec(
    key="summary", title="Summary", make=lambda panel: SummaryBarsTab(panel.color_of, panel.quartiles_of), order=30,
    caption=("Median latency per variant", SUMMARY_CAPTION + " · label = speedup over eager"),
))
