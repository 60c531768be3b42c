"""The "Latency" tab: latency per iteration, warm-up shaded, dashed medians, log scale, crosshair.

Before anything is shown it says what Run will do instead of drawing empty axes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from .buffers import Series
from .hover import hover_label, track_mouse
from .style import (
    MUTED,
    WARMUP_SHADE,
    PlainLogAxis,
    SideLegend,
    curve_pen,
    hover_pen,
    make_legend,
    set_legend_text,
    style_plot_item,
    warmup_pen,
)
from .tab import PlotTab, TabSpec, register_tab


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
        self.median_line = pg.InfiniteLine(
            angle=0, movable=False, pen=pg.mkPen(series.color, width=1.2, style=Qt.PenStyle.DashLine)
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
        return (self.measure_curve, self.warmup_curve, self.median_line, self.region, *self.round_lines)


#: The caption above the latency plot (it wraps when the plot is narrow).
LATENCY_CAPTION = (
    "Shaded: warm-up (not in the statistics) · dashed: median of measured calls · "
    "dotted: a new round"
)


class LatencyTab(PlotTab):
    """Latency (ms) against iteration for every series; hover snaps a crosshair to a sample.

    The legend sits right of the plot (the "Legend" toggle hides it); with no
    series and a :meth:`set_hint` text, the tab shows that text instead of the plot.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.curves: dict[str, LatencyCurves] = {}
        self._log_y = False
        self.plot = pg.PlotWidget(background="w", axisItems={"left": PlainLogAxis("left")})
        item = self.plot.getPlotItem()
        style_plot_item(item, "latency (ms)", "iteration")
        self.legend = make_legend(item, outside=True)
        # Applied by PlotItem.addItem to every curve added later (and kept in its menu).
        item.setDownsampling(auto=True, mode="peak")
        item.setClipToView(True)
        self._warm_sample = pg.PlotDataItem(
            [0], [0], pen=pg.mkPen(None), symbol="s", symbolSize=13,
            symbolBrush=pg.mkBrush(0, 0, 0, 40), symbolPen=pg.mkPen(None),
        )
        self._warm_legend_shown = False

        self._vline = pg.InfiniteLine(angle=90, movable=False, pen=hover_pen())
        self._hline = pg.InfiniteLine(angle=0, movable=False, pen=hover_pen())
        self.hover_label = hover_label(anchor=(0, 1))
        for hover_item in (self._vline, self._hline, self.hover_label):
            hover_item.setVisible(False)
            hover_item.setZValue(100)
            hover_item.exclude_from_export = True  # see gui.export
            self.plot.addItem(hover_item, ignoreBounds=True)
        self._mouse_proxy = track_mouse(self.plot, self._on_mouse_moved, self.hide_crosshair, self)

        self.log_scale_checkbox = QCheckBox("Log scale")
        self.log_scale_checkbox.setToolTip(
            "Logarithmic latency axis: use it when variants differ by several times or a few calls spike"
        )
        self.log_scale_checkbox.toggled.connect(self.set_log_scale)
        item.ctrl.logYCheck.toggled.connect(self._on_menu_log_toggled)
        self.legend_checkbox = QCheckBox("Legend")
        self.legend_checkbox.setChecked(True)
        self.legend_checkbox.setToolTip("Show the legend beside the plot (hide it to give the curves its room)")
        self.legend_checkbox.toggled.connect(self.set_legend_wanted)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        bar = QHBoxLayout()
        bar.setContentsMargins(6, 2, 6, 0)
        self.caption = QLabel(LATENCY_CAPTION)
        self.caption.setObjectName("latencyCaption")
        self.caption.setStyleSheet(f"color: {MUTED};")
        # wraps instead of running into the check boxes when the plot is narrow
        self.caption.setWordWrap(True)
        self.caption.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        bar.addWidget(self.caption, 1)
        bar.addWidget(self.legend_checkbox)
        bar.addWidget(self.log_scale_checkbox)
        lay.addLayout(bar)
        self.hint_label = QLabel()
        self.hint_label.setObjectName("emptyPlotHint")
        self.hint_label.setWordWrap(True)
        self.hint_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint_label.setTextFormat(Qt.TextFormat.PlainText)
        self.hint_label.setMargin(24)
        self.hint_label.setStyleSheet(f"color: {MUTED}; background: white; font-size: 11pt;")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.plot)
        self.stack.addWidget(self.hint_label)
        lay.addWidget(self.stack, 1)
        self.sync_legend()

    # -- the hint shown before anything is plotted -----------------------------------------
    def set_hint(self, text: str) -> None:
        """The text shown instead of empty axes while no series is plotted ("": the axes)."""
        self.hint_label.setText(text)
        self._sync_hint()

    def hint_shown(self) -> bool:
        """Whether the hint is shown in place of the plot."""
        return self.stack.currentWidget() is self.hint_label

    def _sync_hint(self) -> None:
        empty = not self.curves and bool(self.hint_label.text())
        self.stack.setCurrentWidget(self.hint_label if empty else self.plot)

    # -- legend ----------------------------------------------------------------------------
    def set_legend_wanted(self, on: bool) -> None:
        """Show or hide the legend beside the plot."""
        if self.legend_checkbox.isChecked() != bool(on):
            self.legend_checkbox.setChecked(bool(on))  # re-enters through toggled
            return
        if isinstance(self.legend, SideLegend):
            self.legend.wanted = bool(on)
        self.sync_legend()

    # -- series ---------------------------------------------------------------------
    def add(self, series: Series, run_style: int = 0) -> None:
        """Add the curves of ``series``, dashed as the ``run_style``-th run shown."""
        c = LatencyCurves(series, run_style)
        self.curves[series.key] = c
        self.plot.addItem(c.region)
        self.plot.addItem(c.warmup_curve)
        self.plot.addItem(c.measure_curve)  # named: joins the legend
        if self._warm_legend_shown:  # keep the warm-up entry last
            self.legend.removeItem(self._warm_sample)
            self.legend.addItem(self._warm_sample, "warm-up")
        self.plot.addItem(c.median_line, ignoreBounds=True)
        self._apply_log(c)
        self._sync_hint()

    def relabel(self, series: Series) -> None:
        """Show the series' label (and failed mark) in the legend and its pens."""
        c = self.curves[series.key]
        c.measure_curve.opts["name"] = series.label
        c.measure_curve.setPen(curve_pen(series.color, series.failed, c.run_style))
        c.warmup_curve.setPen(warmup_pen(series.color, series.failed, c.run_style))
        set_legend_text(self.legend, c.measure_curve, series.legend_text())

    def clear(self) -> None:
        for c in self.curves.values():
            for item in c.items():
                self.plot.removeItem(item)
        self.curves.clear()
        self.legend.clear()
        self._warm_legend_shown = False
        self.hide_crosshair()
        self.sync_legend()
        self._sync_hint()

    def sync_legend(self) -> None:
        """An empty legend would draw an empty box: show it only when it lists something (and is wanted)."""
        if isinstance(self.legend, SideLegend):
            self.legend.sync()
        else:
            self.legend.setVisible(bool(self.legend.items))

    # -- drawing ----------------------------------------------------------------------
    def redraw(self, changed: Iterable[Series]) -> None:
        """Draw the buffers of the ``changed`` series, their medians and the warm-up bands."""
        clip = self.plot.getPlotItem().clipToViewMode()
        for s in changed:
            c = self.curves[s.key]
            c.warmup_curve.setData(s.warm.xs, s.warm.ys)
            c.measure_curve.setData(s.meas.xs, s.meas.ys)
            c.warmup_curve.setClipToView(clip and s.warm.monotonic)
            c.measure_curve.setClipToView(clip and s.meas.monotonic)
            for line in c.new_round_lines():
                self.plot.addItem(line, ignoreBounds=True)
            if s.meas.n != c.median_n:
                c.median_n = s.meas.n
                c.median = float(np.median(s.measured_values())) if s.meas.n else None
                self._place_median(c)
        self._place_regions()

    def _place_median(self, c: LatencyCurves) -> None:
        if c.median is None or (self._log_y and c.median <= 0):
            c.median_line.setVisible(False)
            return
        c.median_line.setPos(math.log10(c.median) if self._log_y else c.median)
        c.median_line.setVisible(True)

    def _place_regions(self) -> None:
        seen: set[tuple[float, float]] = set()
        for c in self.curves.values():
            rng = c.series.warmup_range
            if rng is None:
                c.region.setVisible(False)
                continue
            span = (rng[0] - 0.5, rng[1] + 0.5)
            c.region.setRegion(span)
            # Runs of one config share their warm-up span: shade it once.
            c.region.setVisible(span not in seen)
            seen.add(span)
        if seen and not self._warm_legend_shown:
            self.legend.addItem(self._warm_sample, "warm-up")
            self._warm_legend_shown = True

    # -- log scale -----------------------------------------------------------------------
    def set_log_scale(self, on: bool) -> None:
        """Switch the latency axis between linear and logarithmic."""
        on = bool(on)
        if self.log_scale_checkbox.isChecked() != on:
            self.log_scale_checkbox.setChecked(on)  # re-enters through toggled
            return
        if on == self._log_y:
            return
        self._log_y = on
        self.plot.getPlotItem().setLogMode(x=False, y=on)
        for c in self.curves.values():
            self._apply_log(c)
            self._place_median(c)
        self.hide_crosshair()

    def _apply_log(self, c: LatencyCurves) -> None:
        for curve in (c.measure_curve, c.warmup_curve):
            curve.setLogMode(False, self._log_y)

    def _on_menu_log_toggled(self, on: bool) -> None:
        if on != self._log_y:
            self.set_log_scale(on)

    # -- crosshair --------------------------------------------------------------------------
    def _on_mouse_moved(self, args: tuple) -> None:
        pos = args[0]
        vb = self.plot.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            self.hide_crosshair()
            return
        p = vb.mapSceneToView(pos)
        y = 10 ** p.y() if self._log_y else p.y()
        self.crosshair_at(p.x(), y)

    def crosshair_at(self, iteration: float, latency_ms: float) -> str | None:
        """Snap the crosshair to the sample nearest (iteration, latency_ms); its label text."""
        vb = self.plot.getPlotItem().getViewBox()
        (x0, x1), (y0, y1) = vb.viewRange()
        sx = max(x1 - x0, 1e-12)
        sy = max(y1 - y0, 1e-12)
        ty = self._view_y(latency_ms)
        best: tuple[float, Series, int] | None = None
        for c in self.curves.values():
            b = c.series.all
            if b.n == 0:
                continue
            xs = b.xs
            if b.monotonic:
                i = int(np.searchsorted(xs, iteration))
                candidates: Iterable[int] = [j for j in (i - 1, i) if 0 <= j < b.n]
            else:
                candidates = [int(np.argmin(np.abs(xs - iteration)))]
            for j in candidates:
                d = ((xs[j] - iteration) / sx) ** 2 + ((self._view_y(b.y[j]) - ty) / sy) ** 2
                if best is None or d < best[0]:
                    best = (d, c.series, j)
        if best is None:
            self.hide_crosshair()
            return None
        _, s, j = best
        x, y = float(s.all.x[j]), float(s.all.y[j])
        phase = " (warm-up)" if s.all.flag[j] else ""
        text = f"{s.legend_text()}\niteration {x:g}{phase}\n{y:.4g} ms"
        vy = self._view_y(y)
        self._vline.setPos(x)
        self._hline.setPos(vy)
        self.hover_label.setText(text)
        self.hover_label.setColor(s.color)
        # Keep the label inside the view: flip to the left half / below as needed.
        ax = 1.0 if x > (x0 + x1) / 2 else 0.0
        ay = 0.0 if vy > (y0 + y1) / 2 else 1.0
        self.hover_label.setAnchor((ax, ay))
        self.hover_label.setPos(QPointF(x, vy))
        for item in (self._vline, self._hline, self.hover_label):
            item.setVisible(True)
        return text

    def _view_y(self, y_ms: float) -> float:
        if self._log_y:
            return math.log10(y_ms) if y_ms > 0 else -12.0
        return y_ms

    def hide_crosshair(self) -> None:
        """Hide the crosshair and its label."""
        for item in (self._vline, self._hline, self.hover_label):
            item.setVisible(False)

    def tick(self) -> None:
        self.sync_legend()

    def hidden(self) -> None:
        self.hide_crosshair()


register_tab(TabSpec(
    key="latency", title="Latency", make=lambda panel: LatencyTab(), order=10,
    caption=(
        "Latency per call",
        "dashed = median of measured calls · dotted = a new round · shaded = warm-up (not in the statistics) · "
        "one colour per variant",
    ),
))
