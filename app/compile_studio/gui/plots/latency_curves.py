"""What the latency tab draws for one series (curves, median line, warm-up band, edge marks) and the span of its calls."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from .buffers import Series
from .robust_range import call_quantiles
from .style import WARMUP_SHADE, curve_pen, median_pen, warmup_pen

#: The percentiles (in %) of each series' calls shown that set the y range.
LOW_PERCENTILE = 1.0
HIGH_PERCENTILE = 99.0
#: Stretches of calls per pixel column a curve is drawn with (see ``__init__``).
DOWNSAMPLE_PER_PIXEL = 2.0
#: Most edge marks drawn per edge for the calls beyond the range (one per pixel column below it).
MAX_EDGE_MARKS = 4000
#: Pixel columns per edge mark: a mark is 8 pixels wide, so closer marks draw the same picture, slower.
MARK_SPACING_PX = 4
#: Most calls of a series the range is computed from (every k-th beyond: the quantiles that set
#: it move by well under a pixel, and a refit stays cheap however many calls are drawn).
RANGE_SAMPLE = 16_384


def thinned(values: np.ndarray, most: int = RANGE_SAMPLE) -> np.ndarray:
    """``values`` as they are, or every k-th of them when there are more than ``most``."""
    return values[:: math.ceil(len(values) / most)] if len(values) > most else values


def one_per_column(xs: np.ndarray, x0: float, x1: float, columns: int) -> np.ndarray:
    """The first of ``xs`` in each of ``columns`` equal columns of ``x0``…``x1`` that holds any."""
    if len(xs) <= 1 or x1 <= x0:
        return xs
    col = np.clip(((xs - x0) * (columns / (x1 - x0))).astype(np.int64), 0, columns - 1)
    _, first = np.unique(col, return_index=True)
    return xs[np.sort(first)]


class LatencyCurves:
    """What the latency tab draws for one series: two curves, a median line, a warm-up band.

    ``run_style`` picks the dash pattern of the series' run (0: solid).
    """

    def __init__(self, series: Series, run_style: int = 0) -> None:
        self.series = series
        self.run_style = run_style
        self.measure_curve = pg.PlotDataItem(
            name=series.label, pen=curve_pen(series.color, run_style=run_style), antialias=True
        )
        self.warmup_curve = pg.PlotDataItem(pen=warmup_pen(series.color, run_style=run_style), antialias=True)
        for curve in (self.measure_curve, self.warmup_curve):
            curve.setSkipFiniteCheck(True)
            # each stretch of calls drawn as its highest and lowest, two stretches per pixel
            # column: the picture of every call (peaks kept), at a cost that does not grow
            # with the calls (pyqtgraph draws five per pixel by default)
            curve.setDownsampling(auto=True, method="peak")
            curve.opts["autoDownsampleFactor"] = DOWNSAMPLE_PER_PIXEL
        self.median_line = pg.InfiniteLine(
            angle=0, movable=False, pen=median_pen(series.color)
        )
        self.median_line.setVisible(False)
        self.region = pg.LinearRegionItem(
            values=(0, 0),
            orientation="vertical",
            movable=False,
            brush=pg.mkBrush(WARMUP_SHADE),
            pen=pg.mkPen(None),
        )
        self.region.setZValue(-10)
        self.region.setVisible(False)
        #: the median (ms) of the measured samples drawn, and how many samples it is of
        self.median: float | None = None
        self.median_n = -1
        #: a dotted vertical line where each measurement round after the first begins
        self.round_lines: list[pg.InfiniteLine] = []
        #: the calls beyond the y range, marked at the edge they lie past (▲ above, ▼ below)
        self.marks_above = pg.ScatterPlotItem(symbol="t1", size=8, pen=pg.mkPen(None), brush=pg.mkBrush(series.color))
        self.marks_below = pg.ScatterPlotItem(symbol="t", size=8, pen=pg.mkPen(None), brush=pg.mkBrush(series.color))
        for marks in (self.marks_above, self.marks_below):
            marks.setZValue(60)
        #: (what it was computed from, (first x, last x, low y, high y)) of the calls shown
        self.extent: tuple[tuple[int, int, bool, bool], tuple[float, float, float, float] | None] | None = None
        #: (what they were computed from, quantiles in ms) of the calls shown
        self.quantiles: tuple[tuple[int, int, bool], dict[float, float] | None] | None = None

    def new_round_lines(self) -> list[pg.InfiniteLine]:
        """Lines for the rounds that began since the last call (the caller adds them to the plot)."""
        color = pg.mkColor(self.series.color)
        color.setAlpha(110)
        pen = pg.mkPen(color, width=1, style=Qt.PenStyle.DotLine)
        new = [
            pg.InfiniteLine(pos=x - 0.5, angle=90, movable=False, pen=pen)
            for x in self.series.round_starts[len(self.round_lines):]
        ]
        self.round_lines.extend(new)
        return new

    def items(self) -> tuple[pg.GraphicsObject, ...]:
        return (
            self.measure_curve, self.warmup_curve, self.median_line, self.region,
            self.marks_above, self.marks_below, *self.round_lines,
        )

    def place_median(self, log_y: bool) -> None:
        """Draw the median line at :attr:`median` (hidden without one, or at 0 on a log axis)."""
        if self.median is None or (log_y and self.median <= 0):
            self.median_line.setVisible(False)
            return
        self.median_line.setPos(math.log10(self.median) if log_y else self.median)
        self.median_line.setVisible(True)

    def apply_log(self, log_y: bool) -> None:
        """Draw both curves on a log (or linear) latency axis."""
        for curve in (self.measure_curve, self.warmup_curve):
            curve.setLogMode(False, log_y)

    def calls_extent(self, folded: bool, log_y: bool) -> tuple[float, float, float, float] | None:
        """(first x, last x, p1, p99 in view units) of the calls shown (``folded``: the measured
        ones alone); None: none shown. Kept until the series or what is shown changes."""
        s = self.series
        key = (s.meas.count, s.warm.count, folded, log_y)
        if self.extent is not None and self.extent[0] == key:
            return self.extent[1]
        buffers = [b for b in ((s.meas,) if folded else (s.meas, s.warm)) if b.n]
        out: tuple[float, float, float, float] | None = None
        if buffers:
            x_lo = min(float(b.xs.min()) for b in buffers)
            x_hi = max(float(b.xs.max()) for b in buffers)
            parts = [s.measured_values()] if s.meas.n else []
            if not folded and s.warm.n:
                parts.append(s.warm.ys)
            values = thinned(np.concatenate(parts)) if parts else np.empty(0)
            values = values[np.isfinite(values)]
            if log_y:
                values = np.log10(values[values > 0])
            if len(values):
                lo, hi = np.percentile(values, [LOW_PERCENTILE, HIGH_PERCENTILE])
                out = (x_lo, x_hi, float(lo), float(hi))
        self.extent = (key, out)
        return out

    def calls_quantiles(self, folded: bool) -> dict[float, float] | None:
        """The quantiles of the calls shown (ms; see robust_range.QUANTILES); None: none shown.
        Kept until the series or what is shown changes."""
        s = self.series
        key = (s.meas.count, s.warm.count, folded)
        if self.quantiles is not None and self.quantiles[0] == key:
            return self.quantiles[1]
        parts = [s.measured_values()] if s.meas.n else []
        if not folded and s.warm.n:
            parts.append(s.warm.ys)
        out = call_quantiles(thinned(np.concatenate(parts))) if parts else None
        self.quantiles = (key, out)
        return out

    def mark_beyond(
        self, x_range: tuple[float, float], y_range: tuple[float, float], folded: bool, log_y: bool,
        columns: int = MAX_EDGE_MARKS,
    ) -> tuple[int, int, bool]:
        """Mark the calls drawn beyond ``y_range`` (view units) at the edge they lie past, one
        mark per :data:`MARK_SPACING_PX` of the ``columns`` pixel columns the x range spans (a mark
        is 8 pixels wide: more would draw the same picture, slower); marks that did not move are
        not set again. Returns (calls above, calls below, whether every call was counted: no
        buffer thinned)."""
        (x0, x1), (y0, y1) = x_range, y_range
        inset = 0.025 * (y1 - y0)
        s = self.series
        exact = True
        above: list[np.ndarray] = []
        below: list[np.ndarray] = []
        for b in (s.meas,) if folded else (s.meas, s.warm):
            if not b.n:
                continue
            exact = exact and b.stride == 1
            xs, ys = b.xs, b.ys
            inside = (xs >= x0) & (xs <= x1)
            if log_y:
                positive = ys > 0
                ys = np.where(positive, np.log10(np.where(positive, ys, 1.0)), -np.inf)
            above.append(xs[inside & (ys > y1)])
            below.append(xs[inside & (ys < y0)])
        counts = []
        for marks, xs_beyond, y in ((self.marks_above, above, y1 - inset), (self.marks_below, below, y0 + inset)):
            xs = np.concatenate(xs_beyond) if xs_beyond else np.empty(0)
            counts.append(len(xs))
            xs = one_per_column(xs, x0, x1, max(1, min(columns, MAX_EDGE_MARKS) // MARK_SPACING_PX))
            ys = np.full(len(xs), y)
            if not _same_marks(marks, xs, ys):
                marks.setData(x=xs, y=ys)
        return counts[0], counts[1], exact


def _same_marks(marks: pg.ScatterPlotItem, xs: np.ndarray, ys: np.ndarray) -> bool:
    """Whether ``marks`` already stand at ``xs``, ``ys`` (setting them again would repaint the plot)."""
    old_x, old_y = marks.getData()
    if old_x is None or old_y is None or len(old_x) != len(xs):
        return False
    return bool(np.array_equal(old_x, xs) and np.array_equal(old_y, ys))
