"""The shape-sweep chart: first-call time, recompiles and speedup per batch size, a line per dynamic mode."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from ...jobs.sweep_spec import x_positions
from ...results.records.shape_record import (
    ShapePoint,
    ShapeSweepRecord,
    no_speedup_reason,
    range_text,
    shape_speedup_text,
    speedup_spread,
)
from ...results.report.formatting import plural
from .speedup_axis import speedup_ticks
from .style import FOREGROUND, MUTED, make_legend, series_color, style_plot_item, with_alpha


def _positive(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) and v > 0 else None


class ShapeSweepPlot(pg.GraphicsLayoutWidget):
    """A shape sweep: first-call (compile or recompile) ms, recompiles and speedup per batch size, a line per mode.

    Three plots over the batch sizes (log x when they span a factor of 8): the
    first call at each batch size (log y: a compile is 100–1000× a call), the
    recompiles it caused, and the speedup over eager (log y), which is rough:
    a ratio of medians of a few calls, so each point is labelled ``≈1.3×``
    (a row of labels per series along the top), the plot's title says from how many calls, and a bar spans the lowest to
    the highest ratio of the paired eager and variant calls where the record
    has them. A point without a speedup is named with the reason in the
    plot's note. A point where Dynamo hit its recompile limit is marked with
    a red cross on the first two. Redrawn whole by :meth:`set_record`.
    """

    PLOTS = ("first_call", "recompiles", "speedup")
    #: a colour per dynamic mode, the same on every plot
    MODE_COLORS = {"false": series_color(0), "auto": series_color(1), "true": series_color(2)}
    LIMIT_COLOR = QColor("#B00020")
    #: most speedup labels written beside their points (beyond, the hover-free plot would be a blur)
    MAX_SPEEDUP_LABELS = 30

    def __init__(self, parent=None) -> None:
        super().__init__(parent=parent)
        self.setBackground("w")
        self.record: ShapeSweepRecord | None = None
        self.plots: dict[str, pg.PlotItem] = {}
        titles = {
            "first_call": ("first call at each batch size (compile or recompile)", "ms (log)"),
            "recompiles": ("recompiles caused by each batch size", "recompiles"),
            "speedup": ("speedup vs eager (rough)", "× eager (log)"),
        }
        places = {"first_call": (0, 0, 1), "recompiles": (0, 1, 1), "speedup": (1, 0, 2)}
        for name in self.PLOTS:
            row, col, colspan = places[name]
            item = self.addPlot(row=row, col=col, colspan=colspan)
            title, unit = titles[name]
            item.setTitle(title, color=FOREGROUND, size="10pt")
            style_plot_item(item, unit, None)
            item.getAxis("left").setWidth(64)
            self.plots[name] = item
        self.plots["first_call"].getAxis("left").setLogMode(False, True)
        self.legend = make_legend(self.plots["first_call"])
        self.note = pg.TextItem("", color=MUTED, anchor=(0.5, 0.5))
        self.plots["first_call"].addItem(self.note, ignoreBounds=True)
        #: the speedup plot's note: the points without a speedup, and why
        self.speedup_note = pg.TextItem("", color=MUTED, anchor=(0, 0))
        self.plots["speedup"].addItem(self.speedup_note, ignoreBounds=True)
        self.one_line = pg.InfiniteLine(pos=0.0, angle=0, movable=False,
                                        pen=pg.mkPen(MUTED, width=1, style=Qt.PenStyle.DashLine))
        self.plots["speedup"].addItem(self.one_line, ignoreBounds=True)
        self._items: dict[str, list[pg.GraphicsObject]] = {name: [] for name in self.PLOTS}
        #: (plot, series, batch, y) of every marker drawn, for tests and hover text
        self.drawn: list[tuple[str, str, int, float]] = []
        #: (series, batch) → the speedup as written for it (``≈1.3× (5 calls, 1.1–1.6×)`` or ``– (why)``)
        self.speedup_texts: dict[tuple[str, int], str] = {}
        #: the labels of the speedup points, a row per series along the top of the plot
        self.speedup_labels: list[pg.TextItem] = []
        self._label_rows = 0

    def _add(self, name: str, item: pg.GraphicsObject) -> None:
        self.plots[name].addItem(item)
        self._items[name].append(item)

    def clear_items(self) -> None:
        for name, items in self._items.items():
            for item in items:
                self.plots[name].removeItem(item)
            items.clear()
        self.legend.clear()
        self.note.setText("")
        self.speedup_note.setText("")
        self.drawn = []
        self.speedup_texts = {}
        self.speedup_labels = []

    def set_record(self, record: ShapeSweepRecord | None) -> None:
        """Draw ``record`` (None: nothing)."""
        self.record = record
        self.clear_items()
        series = record.series() if record is not None else []
        if record is None or not series:
            self.note.setText("No compiled point yet")
            self.note.setPos(0.5, 0.0)
            self._set_speedup_title(None)
            return
        xs, log_x = x_positions(list(record.batches))
        x_of = dict(zip(record.batches, xs))
        ticks = [(x, str(b)) for b, x in zip(record.batches, xs)]
        several = len({v for v, _ in series}) > 1
        labels = sum(len(record.points_of(v, m)) for v, m in series) <= self.MAX_SPEEDUP_LABELS
        missing: list[str] = []
        self._label_rows = len(series) if labels else 0
        for k, (variant, mode) in enumerate(series):
            name = f"{variant} dynamic={mode}" if several else f"dynamic={mode}"
            color = self.MODE_COLORS.get(mode, series_color(3 + k)) if not several else series_color(k)
            all_points = [p for p in record.points_of(variant, mode) if p.batch in x_of]
            points = [p for p in all_points if not p.error]
            first = [(x_of[p.batch], ms, p) for p in points if (ms := _positive(p.first_call_ms)) is not None]
            self._line("first_call", name, color,
                       [x for x, _, _ in first], [math.log10(y) for _, y, _ in first], legend=True)
            self.drawn += [("first_call", name, p.batch, y) for _, y, p in first]
            recompiles = [(x_of[p.batch], float(p.recompiles), p) for p in points]
            self._line("recompiles", name, color,
                       [x for x, _, _ in recompiles], [y for _, y, _ in recompiles], legend=False)
            self.drawn += [("recompiles", name, p.batch, y) for _, y, p in recompiles]
            missing += self._draw_speedups(name, color, all_points, x_of, record.repeats, labels, k)
            for p in (p for p in points if p.limit_hit):
                ms = _positive(p.first_call_ms)
                marks = [("recompiles", float(p.recompiles))]
                if ms is not None:
                    marks.append(("first_call", math.log10(ms)))
                for plot, y in marks:
                    mark = pg.ScatterPlotItem([x_of[p.batch]], [y], symbol="x", size=16,
                                              pen=pg.mkPen(self.LIMIT_COLOR, width=2), brush=self.LIMIT_COLOR)
                    self._add(plot, mark)
        span = max(xs) - min(xs)
        pad = 0.08 * span if span > 0 else 0.5
        for item in self.plots.values():
            item.getAxis("bottom").setTicks([ticks])
            item.setLabel("bottom", "batch size" + (" (log)" if log_x else ""), color=FOREGROUND)
            item.enableAutoRange()
            item.setXRange(min(xs) - pad, max(xs) + pad, padding=0)
        top = max((y for plot, _, _, y in self.drawn if plot == "recompiles"), default=0.0)
        self.plots["recompiles"].setYRange(0, max(1.0, top) * 1.15, padding=0)
        self._set_speedup_title(record)
        self._set_speedup_range(min(xs) - pad, missing)

    def _draw_speedups(
        self, name: str, color: QColor, points: list[ShapePoint], x_of: dict[int, float], repeats: int,
        labels: bool, row: int = 0,
    ) -> list[str]:
        """The speedup points of one series with their spread bars and labels; the words on those without."""
        missing = []
        shown: list[tuple[float, float, ShapePoint]] = []
        for p in points:
            text = shape_speedup_text(p, repeats)
            self.speedup_texts[(name, p.batch)] = text
            reason = no_speedup_reason(p)
            if reason is not None or p.speedup is None:
                missing.append(f"batch {p.batch} ({name}): {reason}")
                continue
            shown.append((x_of[p.batch], math.log10(p.speedup), p))
        if not shown:
            return missing
        x = [x_ for x_, _, _ in shown]
        y = [y_ for _, y_, _ in shown]
        self._line("speedup", name, color, x, y, legend=False)
        self.drawn += [("speedup", name, p.batch, y_) for _, y_, p in shown]
        spread = [(x_, y_, s) for x_, y_, p in shown if (s := speedup_spread(p)) is not None]
        if spread:
            bars = pg.ErrorBarItem(
                x=np.array([x_ for x_, _, _ in spread]), y=np.array([y_ for _, y_, _ in spread]),
                top=np.array([max(0.0, math.log10(s[1]) - y_) for _, y_, s in spread]),
                bottom=np.array([max(0.0, y_ - math.log10(s[0])) for _, y_, s in spread]),
                beam=0.0, pen=pg.mkPen(with_alpha(color, 160), width=2),
            )
            self._add("speedup", bars)
        if labels:
            # a row of labels per series along the top of the plot (placed by _set_speedup_range):
            # a ratio of a few calls is written as the range its calls give, or not at all
            for x_, _, p in shown:
                spread_of = speedup_spread(p)
                if spread_of is None:
                    continue
                label = pg.TextItem(range_text(*spread_of), color=color.darker(120), anchor=(0.5, -1.0 * row))
                label.setPos(x_, 0.0)
                self._add("speedup", label)
                self.speedup_labels.append(label)
        return missing

    def _set_speedup_title(self, record: ShapeSweepRecord | None) -> None:
        title = "speedup vs eager (rough)"
        if record is not None:
            calls = {p.timed_calls for p in record.points if p.mode != "eager" and p.timed_calls is not None}
            n = calls.pop() if len(calls) == 1 else record.repeats
            title = f"speedup vs eager, rough: ratio of medians of {plural(n, 'call')} each"
            if any(speedup_spread(p) is not None for p in record.points):
                title += " · bar: lowest–highest paired ratio"
        self.plots["speedup"].setTitle(title, color=FOREGROUND, size="10pt")

    def _set_speedup_range(self, left: float, missing: list[str]) -> None:
        """Range over the points (and 1×); a spread bar joins it only while it at most doubles that span,
        else it runs off the edge. Room above for the rows of labels."""
        item = self.plots["speedup"]
        ys = [y for plot, _, _, y in self.drawn if plot == "speedup"] + [0.0]
        low, high = min(ys), max(ys)
        reach = max(high - low, 0.3)
        for bars in self._items["speedup"]:
            if isinstance(bars, pg.ErrorBarItem):
                y = bars.opts["y"]
                ends = list(y + bars.opts["top"]) + list(y - bars.opts["bottom"])
                ys += [e for e in ends if low - reach <= e <= high + reach]
        low, high = min(ys), max(ys)
        margin = max(0.08, 0.1 * (high - low))
        bottom, top = low - margin, high + margin
        rows = self._label_rows + (1 if missing else 0)
        height = item.vb.height() if item.vb.height() > 50 else 220.0
        share = min(0.6, rows * 17.0 / height)
        above = top + (top - bottom) * share / (1.0 - share)
        item.setYRange(bottom, above, padding=0)
        item.getAxis("left").setTicks([speedup_ticks(10**bottom, 10**top)])
        for label in self.speedup_labels:
            label.setPos(label.pos().x(), above)
        if missing:
            shown = missing[:4] + ([f"… {len(missing) - 4} more"] if len(missing) > 4 else [])
            self.speedup_note.setText("no speedup: " + "; ".join(shown))
            self.speedup_note.setAnchor((0.0, -1.0 * self._label_rows))
            self.speedup_note.setPos(left, above)

    def _line(self, plot: str, name: str, color: QColor, x: list[float], y: list[float], legend: bool) -> None:
        if not x:
            return
        item = pg.PlotDataItem(
            np.asarray(x, dtype=float), np.asarray(y, dtype=float), pen=pg.mkPen(color, width=2),
            symbol="o", symbolSize=7, symbolBrush=pg.mkBrush(color), symbolPen=pg.mkPen(color.darker(130)),
            name=name if legend else None,
        )
        self._add(plot, item)
