"""The sweep chart: speedup, latency, compile time and break-even against the swept parameter.

Four plots in one view (so one PNG or SVG holds them all), sharing the x axis:
whole numbers spanning a factor of 8 or more sit on a log axis labelled with
the values themselves, names (dtypes, true/false) side by side. Each compiled
variant keeps one colour on every plot; eager is grey on the latency plot.
Hover a point for its numbers; double-click it to open its run
(:attr:`SweepPlot.point_activated`). The shape-sweep chart is in
shape_sweep_plot.py (imported from here as well).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QResizeEvent

from ...jobs.sweep_spec import value_text, x_positions
from ...results.records.sweep_record import PointVariant, SweepPoint, SweepRecord
from ...results.report.formatting import fmt_interval, plural
from .hover import hover_label, track_mouse
from .shape_sweep_plot import ShapeSweepPlot as ShapeSweepPlot  # where it was first
from .speedup_axis import speedup_ticks as speedup_ticks  # where it was first
from .style import FOREGROUND, MUTED, make_legend, series_color, style_plot_item, with_alpha

#: Farthest a point may be from the mouse (pixels) to count as hovered.
HOVER_RADIUS_PX = 14
EAGER_COLOR = QColor("#555555")


@dataclass(frozen=True)
class PlottedPoint:
    """One marker: which point and variant it shows, and where (view coordinates)."""

    plot: str
    index: int
    variant: str
    x: float
    y: float


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def _fmt(v: float | None, digits: int = 3) -> str:
    return "–" if not _finite(v) else f"{v:.{digits}g}"


def point_text(param: str, point: SweepPoint, v: PointVariant) -> str:
    """What hovering a marker says: the point, the variant and its numbers."""
    lines = [f"{param} = {value_text(point.value)} · {v.variant} ({point.status})"]
    if _finite(v.median_ms):
        lines.append(f"median {v.median_ms:.4g} ms (p5–p95 {_fmt(v.p5_ms, 4)}–{_fmt(v.p95_ms, 4)})")
    if v.variant != "eager" and _finite(v.speedup):
        shown = (
            fmt_interval(v.variant, v.speedup, v.speedup_lo, v.speedup_hi)
            if _finite(v.speedup_lo) and _finite(v.speedup_hi) else f"{v.speedup:.2f}×"
        )
        lines.append(f"speedup {shown}" + (f" · {v.verdict}" if v.verdict else ""))
    if _finite(v.compile_s):
        lines.append(f"compile {v.compile_s:.2f} s")
    if v.variant != "eager" and v.compile_s is not None:
        if v.verdict == "faster" and _finite(v.break_even_calls):
            lines.append(f"pays off after {plural(math.ceil(v.break_even_calls or 0), 'call')}")
        elif v.verdict == "slower":
            lines.append("never pays off (slower)")
    if _finite(v.tflops):
        lines.append(f"{v.tflops:.3g} TFLOP/s")
    extra = []
    if v.allclose is not None:
        extra.append("correct" if v.allclose else "WRONG output")
    if v.recompiles:
        extra.append(plural(v.recompiles, "recompile"))
    if v.graph_breaks:
        extra.append(plural(v.graph_breaks, "graph break"))
    if extra:
        lines.append(" · ".join(extra))
    if v.error:
        lines.append(f"error: {v.error[:120]}")
    lines.append("double-click: open this run")
    return "\n".join(lines)


def fitting_anchor(at: QPointF, width: float, height: float, room: QRectF) -> tuple[float, float]:
    """The anchor that keeps a ``width`` × ``height`` label at ``at`` inside ``room`` (scene pixels).

    Above and right of the point where it fits, else shifted just enough (a
    point in the middle gets its label beside it, not cut off at either edge);
    a label wider or taller than ``room`` keeps its left or top edge inside.
    """

    def along(pos: float, low: float, high: float, extent: float, preferred: float) -> float:
        if extent <= 0:
            return preferred
        anchor = max(preferred, 1.0 - (high - pos) / extent)  # the far edge inside
        anchor = min(anchor, (pos - low) / extent)  # the near edge inside, first
        return min(1.0, max(0.0, anchor))

    return (
        along(at.x(), room.left(), room.right(), width, 0.0),
        along(at.y(), room.top(), room.bottom(), height, 1.0),
    )


class SweepPlot(pg.GraphicsLayoutWidget):
    """Four plots of one sweep, redrawn whole by :meth:`set_record` (a sweep has few points)."""

    #: a point was double-clicked: its index
    point_activated = Signal(int)

    PLOTS = ("speedup", "latency", "compile", "break_even")

    def __init__(self, parent=None) -> None:
        super().__init__(parent=parent)
        self.setBackground("w")
        self.record: SweepRecord | None = None
        self.log_x = False
        self.log_latency = False
        self.log_break_even = False
        self.plots: dict[str, pg.PlotItem] = {}
        titles = {
            "speedup": ("speedup vs eager, 95 % interval (above 1× = faster)", "× eager (log)"),
            "latency": ("median latency per call", "ms"),
            "compile": ("compile time (first call)", "s"),
            "break_even": ("break-even (calls to repay the compile)", "calls"),
        }
        #: each plot's whole title (cut with "…" to its column's width: see fit_titles)
        self.titles = {name: title for name, (title, _) in titles.items()}
        # room right of the right-hand plots for their last tick label and point
        self.ci.setContentsMargins(2, 2, 16, 2)
        for k, name in enumerate(self.PLOTS):
            item = self.addPlot(row=k // 2, col=k % 2)
            title, unit = titles[name]
            item.setTitle(title, color=FOREGROUND, size="10pt")
            # a long title is cut at its plot's edge instead of widening the column past the dock
            item.titleLabel.updateMin = lambda: None
            item.titleLabel.setMinimumWidth(0)
            style_plot_item(item, unit, None)
            self.plots[name] = item
        for column in (0, 1):
            self.ci.layout.setColumnStretchFactor(column, 1)
        # room for tick labels such as 0.0156× from the first paint on (exports paint once)
        for item in self.plots.values():
            item.getAxis("left").setWidth(76)
            # a narrow plot keeps its few values' labels (they are at most 12)
            item.getAxis("bottom").setStyle(textFillLimits=[(0, 0.95), (4, 0.9), (8, 0.8), (12, 0.7)])
        #: one legend for all four plots (a variant has the same colour on each)
        self.legends = {"latency": make_legend(self.plots["latency"])}
        for legend in self.legends.values():
            legend.setOffset((4, 4))  # top left, inside a narrow plot too: latencies rise to the right
        #: the line at 1× (speedups are drawn as log10: 1× is at 0)
        self.one_line = pg.InfiniteLine(
            pos=0.0, angle=0, pen=pg.mkPen(MUTED, width=1, style=Qt.PenStyle.DashLine)
        )
        self.plots["speedup"].addItem(self.one_line, ignoreBounds=False)
        self.markers: list[PlottedPoint] = []
        self._items: dict[str, list[pg.GraphicsObject]] = {name: [] for name in self.PLOTS}
        #: per plot, what it says when it has nothing to draw
        self.notes: dict[str, pg.TextItem] = {}
        for name in self.PLOTS:
            note = pg.TextItem("", color=MUTED, anchor=(0.5, 0.5))
            self.plots[name].addItem(note, ignoreBounds=True)
            self.notes[name] = note
        self.empty_text = self.notes["speedup"]
        self.hover = hover_label((0, 1))
        self._hover_plot: pg.PlotItem | None = None
        self._mouse = track_mouse(self, self._on_mouse_moved, self.hide_hover, self)
        self.scene().sigMouseClicked.connect(self._on_clicked)

    def fit_titles(self) -> None:
        """Each plot's title cut with "…" to its column's width (whole in a wide dock): titles
        of plots side by side never run into each other."""
        font = QFont()
        font.setPointSizeF(10)
        metrics = QFontMetrics(font)
        room = max(40, (self.width() - 40) // 2 - 12)
        for name, item in self.plots.items():
            text = metrics.elidedText(self.titles[name], Qt.TextElideMode.ElideRight, room)
            if item.titleLabel.text != text:
                item.setTitle(text, color=FOREGROUND, size="10pt")

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        if getattr(self, "plots", None) and len(self.plots) == len(self.PLOTS):
            self.fit_titles()

    # -- drawing ------------------------------------------------------------------------------
    def clear_items(self) -> None:
        for name, items in self._items.items():
            for item in items:
                self.plots[name].removeItem(item)
            items.clear()
        for legend in self.legends.values():
            legend.clear()
        for note in self.notes.values():
            note.setText("")
        self.markers = []
        self.hide_hover()

    def _add(self, name: str, item: pg.GraphicsObject) -> None:
        self.plots[name].addItem(item)
        self._items[name].append(item)

    def set_record(self, record: SweepRecord | None) -> None:
        """Draw ``record`` (None: nothing); called after every point while a sweep runs."""
        self.record = record
        self.clear_items()
        if record is None or not record.points:
            self.empty_text.setText("No sweep yet:\nSweep → New…\nor Sweep → Open…")
            # in the middle of the upper half: clear of the line at 1× (y = 0) and of the axes
            item = self.plots["speedup"]
            item.setXRange(0.0, 1.0, padding=0)
            item.setYRange(-1.0, 1.0, padding=0)
            self.empty_text.setPos(0.5, 0.5)
            return
        xs, self.log_x = x_positions(record.values)
        x_of = {p.index: x for p, x in zip(record.points, xs)}
        ticks = [(x, value_text(p.value)) for p, x in zip(record.points, xs)]
        if len(ticks) > 12:
            step = math.ceil(len(ticks) / 12)
            ticks = ticks[::step]
        for item in self.plots.values():
            item.getAxis("bottom").setTicks([ticks])
            item.setLabel("bottom", record.param, color=FOREGROUND)
        names = record.variant_names()
        colors = {name: (EAGER_COLOR if name == "eager" else series_color(k)) for k, name in enumerate(
            n for n in names if n != "eager")}
        colors["eager"] = EAGER_COLOR
        latencies: list[float] = [
            v.median_ms for p in record.points for v in p.variants
            if v.median_ms is not None and math.isfinite(v.median_ms) and v.median_ms > 0
        ]
        self.log_latency = bool(latencies) and max(latencies) >= 20 * min(latencies)
        evens: list[float] = [
            v.break_even_calls for p in record.points for v in p.variants
            if v.break_even_calls is not None and math.isfinite(v.break_even_calls)
            and v.break_even_calls > 0 and v.verdict == "faster"
        ]
        self.log_break_even = bool(evens) and max(evens) >= 20 * min(evens)
        self.plots["latency"].getAxis("left").setLogMode(False, self.log_latency)
        self.plots["break_even"].getAxis("left").setLogMode(False, self.log_break_even)
        for name in names:
            color = colors.get(name, series_color(0))
            rows = [(p, v) for p in record.points for v in p.variants if v.variant == name]
            self._draw_latency(name, color, rows, x_of)
            if name == "eager":
                continue
            self._draw_speedup(name, color, rows, x_of)
            self._draw_series("compile", name, color, [(p, v, v.compile_s) for p, v in rows], False)
            self._draw_series(
                "break_even", name, color,
                [(p, v, v.break_even_calls if v.verdict == "faster" else None) for p, v in rows],
                self.log_break_even,
            )
        span = max(xs) - min(xs)
        pad = 0.08 * span if span > 0 else 0.5
        for item in self.plots.values():
            item.enableAutoRange()
            # more room on the right: the last value's label is centred on its point, and a
            # label that would reach past the plot's edge is left out
            item.setXRange(min(xs) - pad, max(xs) + 1.6 * pad, padding=0)
        self._set_speedup_axis()
        for name in ("compile", "break_even"):
            ys = [m.y for m in self.markers if m.plot == name]
            log_y = name == "break_even" and self.log_break_even
            if ys and not log_y:
                self.plots[name].setYRange(0, max(ys) * 1.12 if max(ys) > 0 else 1.0, padding=0)
        self._note_empty(record, xs)

    def _note_empty(self, record: SweepRecord, xs: list[float]) -> None:
        """Say why a plot is empty rather than leaving it blank."""
        compiled = [n for n in record.variant_names() if n != "eager"]
        words = {
            "speedup": "no compiled variant measured yet" if compiled else "only eager: nothing to compare",
            "latency": "nothing measured yet",
            "compile": "no compile measured yet" if compiled else "only eager: nothing compiles",
            "break_even": (
                "no variant found faster:\nthe compile never pays off"
                if any(p.variants for p in record.points) else "nothing measured yet"
            ),
        }
        middle = (min(xs) + max(xs)) / 2
        for name, item in self.plots.items():
            empty = not any(m.plot == name for m in self.markers)
            item.getAxis("left").setStyle(showValues=not empty or name == "speedup")
            if not empty:
                continue
            self.notes[name].setText(words[name])
            if name != "speedup":
                item.setYRange(0, 1, padding=0)
            low, high = item.vb.viewRange()[1]
            self.notes[name].setPos(middle, (low + high) / 2)

    def _set_speedup_axis(self) -> None:
        """Ticks of the log speedup axis as ×: powers of two, finer when the range is narrow."""
        item = self.plots["speedup"]
        ys = [m.y for m in self.markers if m.plot == "speedup"] + [0.0]
        for bars in self._items["speedup"]:
            if isinstance(bars, pg.ErrorBarItem):
                y = bars.opts["y"]
                ys += list(y + bars.opts["top"]) + list(y - bars.opts["bottom"])
        low, high = min(ys), max(ys)
        margin = max(0.04, 0.08 * (high - low))
        item.setYRange(low - margin, high + margin, padding=0)
        item.getAxis("left").setTicks([speedup_ticks(10 ** (low - margin), 10 ** (high + margin))])

    def _curve(self, name: str, plot: str, color: QColor, x: list[float], y: list[float], legend: bool) -> None:
        curve = pg.PlotDataItem(
            np.asarray(x, dtype=float), np.asarray(y, dtype=float),
            pen=pg.mkPen(color, width=2), symbol="o", symbolSize=8,
            symbolBrush=pg.mkBrush(color), symbolPen=pg.mkPen(color.darker(130)),
            name=name if legend and plot in self.legends else None,
        )
        self._add(plot, curve)

    def _keep(self, plot: str, name: str, points: list[tuple[SweepPoint, float, float]]) -> None:
        for p, x, y in points:
            self.markers.append(PlottedPoint(plot, p.index, name, x, y))

    def _draw_latency(self, name: str, color: QColor, rows, x_of) -> None:
        pts = [(p, x_of[p.index], v.median_ms) for p, v in rows if _finite(v.median_ms) and (v.median_ms or 0) > 0]
        if not pts:
            return
        ys = [math.log10(y) if self.log_latency else y for _, _, y in pts]
        self._curve(name, "latency", color, [x for _, x, _ in pts], ys, legend=True)
        self._keep("latency", name, [(p, x, y) for (p, x, _), y in zip(pts, ys)])

    def _draw_speedup(self, name: str, color: QColor, rows, x_of) -> None:
        pts = [(p, v, x_of[p.index]) for p, v in rows if _finite(v.speedup) and (v.speedup or 0) > 0]
        if not pts:
            return
        x = [x for _, _, x in pts]
        y = [math.log10(v.speedup or 1.0) for _, v, _ in pts]

        def log_or(value: float | None, fallback: float) -> float:
            return math.log10(value) if value is not None and math.isfinite(value) and value > 0 else fallback

        top = [max(0.0, log_or(v.speedup_hi, y_) - y_) for (_, v, _), y_ in zip(pts, y)]
        bottom = [max(0.0, y_ - log_or(v.speedup_lo, y_)) for (_, v, _), y_ in zip(pts, y)]
        bars = pg.ErrorBarItem(
            x=np.asarray(x), y=np.asarray(y, dtype=float), top=np.asarray(top), bottom=np.asarray(bottom),
            beam=0.04 if self.log_x else 0.0, pen=pg.mkPen(with_alpha(color, 170), width=1.5),
        )
        self._add("speedup", bars)
        self._curve(name, "speedup", color, x, y, legend=True)
        self._keep("speedup", name, [(p, x_, y_) for (p, _, x_), y_ in zip(pts, y)])

    def _draw_series(self, plot: str, name: str, color: QColor, rows, log_y: bool) -> None:
        pts = [(p, v, value) for p, v, value in rows if _finite(value) and (not log_y or value > 0)]
        if not pts or self.record is None:
            return
        xs, _ = x_positions(self.record.values)
        x_of = {p.index: x for p, x in zip(self.record.points, xs)}
        x = [x_of[p.index] for p, _, _ in pts]
        y = [math.log10(value) if log_y else value for _, _, value in pts]
        self._curve(name, plot, color, x, y, legend=False)
        self._keep(plot, name, [(p, x_, y_) for (p, _, _), x_, y_ in zip(pts, x, y)])

    # -- hover and double-click -----------------------------------------------------------------
    def marker_scene_pos(self, marker: PlottedPoint) -> QPointF:
        """Where ``marker`` is drawn, in scene coordinates (for tests and tooltips)."""
        return self.plots[marker.plot].vb.mapViewToScene(QPointF(marker.x, marker.y))

    def marker_at(self, scene_pos: QPointF) -> PlottedPoint | None:
        """The marker nearest ``scene_pos`` within :data:`HOVER_RADIUS_PX`, or None."""
        best, best_d = None, float(HOVER_RADIUS_PX)
        for name, item in self.plots.items():
            if not item.vb.sceneBoundingRect().contains(scene_pos):
                continue
            for m in self.markers:
                if m.plot != name:
                    continue
                at = self.marker_scene_pos(m)
                d = math.hypot(at.x() - scene_pos.x(), at.y() - scene_pos.y())
                if d <= best_d:
                    best, best_d = m, d
        return best

    def text_of(self, marker: PlottedPoint) -> str:
        record = self.record
        if record is None:
            return ""
        point = next((p for p in record.points if p.index == marker.index), None)
        v = point.variant(marker.variant) if point is not None else None
        return point_text(record.param, point, v) if point is not None and v is not None else ""

    def hover_at(self, scene_pos: QPointF) -> str:
        """Show the hover label for the marker under ``scene_pos``; returns its text ("" for none)."""
        marker = self.marker_at(scene_pos)
        if marker is None:
            self.hide_hover()
            return ""
        item = self.plots[marker.plot]
        if self._hover_plot is not item:
            if self._hover_plot is not None:
                self._hover_plot.removeItem(self.hover)
            item.addItem(self.hover, ignoreBounds=True)
            self._hover_plot = item
        text = self.text_of(marker)
        self.hover.setText(text)
        room = item.vb.sceneBoundingRect()
        label = self.hover.textItem
        label.setTextWidth(-1)
        if label.boundingRect().width() > room.width():
            label.setTextWidth(max(80.0, room.width() - 2))  # a narrow plot: the lines wrap
        size = label.boundingRect()
        self.hover.setAnchor(fitting_anchor(self.marker_scene_pos(marker), size.width(), size.height(), room))
        self.hover.setPos(marker.x, marker.y)
        self.hover.setVisible(True)
        return text

    def hide_hover(self) -> None:
        self.hover.setVisible(False)

    def _on_mouse_moved(self, args: tuple) -> None:
        self.hover_at(args[0])

    def activate_at(self, scene_pos: QPointF) -> int | None:
        """Open the point under ``scene_pos`` (emits :attr:`point_activated`); its index or None."""
        marker = self.marker_at(scene_pos)
        if marker is None:
            return None
        self.point_activated.emit(marker.index)
        return marker.index

    def _on_clicked(self, event) -> None:
        if event.double():
            self.activate_at(event.scenePos())
