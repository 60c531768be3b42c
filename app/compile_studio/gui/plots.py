"""The plot panel: live latency per iteration, latency distribution, summary bars.

Data arrives through :meth:`PlotPanel.append` into preallocated numpy buffers
(grown by doubling) and is drawn only by :meth:`PlotPanel.refresh`, which the
window calls from a timer, so a burst of samples never costs a burst of
repaints. The panel shows data; it computes nothing but what it draws
(medians for the dashed lines, histogram counts).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QPointF, Qt, QTimer
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QTabWidget, QVBoxLayout, QWidget

from ..results import RunResult, summarize
from .colors import FOREGROUND, MUTED, WARMUP_SHADE, series_color, with_alpha

PHASES = ("warmup", "measure")

#: Minimum seconds between two histogram recomputations during a live run.
HISTOGRAM_MIN_INTERVAL_S = 0.2
#: Rate limit of the crosshair (mouse move events per second).
CROSSHAIR_RATE_HZ = 30


@dataclass(frozen=True)
class SummaryBar:
    """One bar of the summary chart: a variant's median with its p5–p95 spread."""

    key: str
    label: str
    median_ms: float
    p5_ms: float
    p95_ms: float
    speedup: float | None


def format_speedup(speedup: float | None) -> str:
    """The text written on a summary bar, e.g. ``"1.42×"`` (empty when unknown)."""
    if speedup is None or not math.isfinite(speedup):
        return ""
    return f"{speedup:.2f}×"


class _Buffer:
    """Growable (x, y, flag) columns backed by numpy arrays doubled when full."""

    def __init__(self, capacity: int = 1024) -> None:
        self.x = np.empty(capacity, dtype=np.float64)
        self.y = np.empty(capacity, dtype=np.float64)
        self.flag = np.empty(capacity, dtype=np.bool_)
        self.n = 0
        self.monotonic = True

    def append(self, x: np.ndarray, y: np.ndarray, flag: bool = False) -> None:
        m = len(x)
        if m == 0:
            return
        need = self.n + m
        if need > len(self.x):
            cap = len(self.x)
            while cap < need:
                cap *= 2
            for name in ("x", "y", "flag"):
                old = getattr(self, name)
                new = np.empty(cap, dtype=old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)
        if self.monotonic:
            if m > 1 and np.any(np.diff(x) < 0):
                self.monotonic = False
            elif self.n and x[0] < self.x[self.n - 1]:
                self.monotonic = False
        self.x[self.n : need] = x
        self.y[self.n : need] = y
        self.flag[self.n : need] = flag
        self.n = need

    @property
    def xs(self) -> np.ndarray:
        return self.x[: self.n]

    @property
    def ys(self) -> np.ndarray:
        return self.y[: self.n]


class _Series:
    """Everything drawn for one (run, variant): buffers and plot items."""

    def __init__(self, key: str, label: str, color: QColor) -> None:
        self.key = key
        self.label = label
        self.color = color
        self.failed = False
        self.all = _Buffer()  # arrival order; flag = warm-up
        self.warm = _Buffer(64)
        self.meas = _Buffer()
        self.warm_lo = math.inf
        self.warm_hi = -math.inf
        self.median: float | None = None
        self.median_n = -1
        self.dirty = False
        self.hist: tuple[np.ndarray, np.ndarray] | None = None

        # Width-1 (cosmetic) pens: wider antialiased pens are orders of magnitude slower in Qt.
        pen = pg.mkPen(color, width=1)
        self.measure_curve = pg.PlotDataItem(name=label, pen=pen, antialias=True)
        self.warmup_curve = pg.PlotDataItem(pen=pg.mkPen(with_alpha(color, 80), width=1), antialias=True)
        for curve in (self.measure_curve, self.warmup_curve):
            curve.setSkipFiniteCheck(True)
        self.median_line = pg.InfiniteLine(
            angle=0, movable=False, pen=pg.mkPen(color, width=1.2, style=Qt.PenStyle.DashLine)
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
        self.hist_curve = pg.PlotDataItem(
            name=label,
            stepMode="center",
            fillLevel=0,
            fillBrush=pg.mkBrush(with_alpha(color, 60)),
            pen=pg.mkPen(color, width=1.5),
        )

    @property
    def warmup_range(self) -> tuple[float, float] | None:
        if self.warm.n == 0:
            return None
        return (self.warm_lo, self.warm_hi)

    def legend_text(self) -> str:
        return f"{self.label} (failed)" if self.failed else self.label


class _LeaveFilter(QObject):
    """Calls ``on_leave`` when the watched widget loses the mouse."""

    def __init__(self, on_leave, parent: QObject) -> None:
        super().__init__(parent)
        self._on_leave = on_leave

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.Leave:
            self._on_leave()
        return False


def _style_plot(plot: pg.PlotWidget, left: str, bottom: str | None) -> None:
    item = plot.getPlotItem()
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


def _make_legend(plot: pg.PlotWidget) -> pg.LegendItem:
    return plot.getPlotItem().addLegend(
        offset=(-10, 10),
        brush=pg.mkBrush(255, 255, 255, 215),
        pen=pg.mkPen(200, 200, 200),
        labelTextColor=FOREGROUND,
        labelTextSize="9pt",
    )


class PlotPanel(QTabWidget):
    """Tabs "Latency", "Distribution" and "Summary" over the series of one or more runs."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._series: dict[str, _Series] = {}
        self._next_color = 0
        self._bars: list[SummaryBar] = []
        self._log_y = False
        self._hist_dirty = False
        self._hist_last = -math.inf
        self._hist_note = ""

        # -- latency tab ----------------------------------------------------
        self.latency_plot = pg.PlotWidget(background="w")
        _style_plot(self.latency_plot, "latency (ms)", "iteration")
        self._latency_legend = _make_legend(self.latency_plot)
        # Applied by PlotItem.addItem to every curve added later (and kept in its menu).
        self.latency_plot.getPlotItem().setDownsampling(auto=True, mode="peak")
        self.latency_plot.getPlotItem().setClipToView(True)
        warm_sample = pg.PlotDataItem(
            [0], [0], pen=pg.mkPen(None), symbol="s", symbolSize=13,
            symbolBrush=pg.mkBrush(0, 0, 0, 40), symbolPen=pg.mkPen(None),
        )
        self._warm_sample = warm_sample
        self._warm_legend_shown = False

        crosshair_pen = pg.mkPen(MUTED, width=1, style=Qt.PenStyle.DotLine)
        self._vline = pg.InfiniteLine(angle=90, movable=False, pen=crosshair_pen)
        self._hline = pg.InfiniteLine(angle=0, movable=False, pen=crosshair_pen)
        self._hover_label = pg.TextItem(
            "", color=FOREGROUND, anchor=(0, 1), fill=pg.mkBrush(255, 255, 255, 225),
            border=pg.mkPen(180, 180, 180),
        )
        for item in (self._vline, self._hline, self._hover_label):
            item.setVisible(False)
            item.setZValue(100)
            item.exclude_from_export = True  # see gui.export
            self.latency_plot.addItem(item, ignoreBounds=True)
        self._hover_text = ""
        self._mouse_proxy = pg.SignalProxy(
            self.latency_plot.scene().sigMouseMoved,
            rateLimit=CROSSHAIR_RATE_HZ,
            slot=self._on_mouse_moved,
        )
        self._leave_filter = _LeaveFilter(self.hide_crosshair, self)
        self.latency_plot.viewport().installEventFilter(self._leave_filter)

        self.log_scale_checkbox = QCheckBox("Log scale")
        self.log_scale_checkbox.setToolTip("Logarithmic latency axis")
        self.log_scale_checkbox.toggled.connect(self.set_log_scale)
        self.latency_plot.getPlotItem().ctrl.logYCheck.toggled.connect(self._on_menu_log_toggled)
        latency_page = QWidget()
        lay = QVBoxLayout(latency_page)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        bar = QHBoxLayout()
        bar.setContentsMargins(6, 2, 6, 0)
        hint = QLabel("Shaded: warm-up (not in the statistics) · dashed: median of measured calls")
        hint.setStyleSheet(f"color: {MUTED};")
        bar.addWidget(hint)
        bar.addStretch(1)
        bar.addWidget(self.log_scale_checkbox)
        lay.addLayout(bar)
        lay.addWidget(self.latency_plot, 1)
        self.addTab(latency_page, "Latency")

        # -- distribution tab -----------------------------------------------
        self.distribution_plot = pg.PlotWidget(background="w")
        _style_plot(self.distribution_plot, "% of measured calls", "latency (ms)")
        self._dist_legend = _make_legend(self.distribution_plot)
        self.addTab(self.distribution_plot, "Distribution")
        self._hist_timer = QTimer(self)
        self._hist_timer.setSingleShot(True)
        self._hist_timer.timeout.connect(self._update_distribution)

        # -- summary tab ------------------------------------------------------
        self.summary_plot = pg.PlotWidget(background="w")
        _style_plot(self.summary_plot, "median latency (ms), p5–p95", None)
        self.summary_plot.getPlotItem().showGrid(x=False, y=True, alpha=0.15)
        self._bar_items: list[pg.GraphicsObject] = []
        self._bar_texts: list[pg.TextItem] = []
        self.addTab(self.summary_plot, "Summary")

        self.currentChanged.connect(self._on_tab_changed)
        self._sync_legends()

    # -- series -----------------------------------------------------------
    def clear(self) -> None:
        """Remove every series and summary bar."""
        for s in self._series.values():
            for item in (s.measure_curve, s.warmup_curve, s.median_line, s.region):
                self.latency_plot.removeItem(item)
            self.distribution_plot.removeItem(s.hist_curve)
        self._series.clear()
        self._latency_legend.clear()
        self._dist_legend.clear()
        self._warm_legend_shown = False
        self._next_color = 0
        self._hist_dirty = False
        self._set_dist_note("")
        self.hide_crosshair()
        self.set_summary([])
        self._sync_legends()

    def _sync_legends(self) -> None:
        """An empty legend would draw an empty box: show each only when it lists something."""
        for legend in (self._latency_legend, self._dist_legend):
            legend.setVisible(bool(legend.items))

    def add_series(self, key: str, label: str) -> None:
        """Add an empty curve ``key`` named ``label`` (a new colour); relabels an existing one."""
        if key in self._series:
            s = self._series[key]
            s.label = label
            s.measure_curve.opts["name"] = label
            s.hist_curve.opts["name"] = label
            self._relabel(s)
            return
        s = _Series(key, label, series_color(self._next_color))
        self._next_color += 1
        self._series[key] = s
        self.latency_plot.addItem(s.region)
        self.latency_plot.addItem(s.warmup_curve)
        self.latency_plot.addItem(s.measure_curve)  # named: joins the legend
        self.latency_plot.addItem(s.median_line, ignoreBounds=True)
        self.distribution_plot.addItem(s.hist_curve)
        self._apply_log_to_curve(s)

    def series_keys(self) -> list[str]:
        """Keys of the series, in the order they were added."""
        return list(self._series)

    def series_color(self, key: str) -> QColor:
        """The colour of series ``key``."""
        return QColor(self._series[key].color)

    def append(self, key: str, iterations: np.ndarray, wall_ms: np.ndarray, phase: str) -> None:
        """Buffer samples of series ``key`` (``phase`` "warmup" or "measure"); draws nothing."""
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
        s = self._series[key]
        x = np.asarray(iterations, dtype=np.float64).ravel()
        y = np.asarray(wall_ms, dtype=np.float64).ravel()
        if x.shape != y.shape:
            raise ValueError(f"{len(x)} iterations but {len(y)} latencies")
        if not len(x):
            return
        warm = phase == "warmup"
        s.all.append(x, y, warm)
        if warm:
            s.warm.append(x, y)
            s.warm_lo = min(s.warm_lo, float(x.min()))
            s.warm_hi = max(s.warm_hi, float(x.max()))
        else:
            s.meas.append(x, y)
        s.dirty = True

    def series_data(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(iterations, wall_ms) of series ``key`` in arrival order, as appended (copies)."""
        s = self._series[key]
        return s.all.xs.copy(), s.all.ys.copy()

    def set_series_failed(self, key: str, failed: bool) -> None:
        """Draw series ``key`` dashed and mark it "(failed)" in the legends, or undo that."""
        s = self._series[key]
        if s.failed == failed:
            return
        s.failed = failed
        style = Qt.PenStyle.DashDotLine if failed else Qt.PenStyle.SolidLine
        s.measure_curve.setPen(pg.mkPen(s.color, width=1, style=style))
        s.warmup_curve.setPen(pg.mkPen(with_alpha(s.color, 80), width=1, style=style))
        s.hist_curve.setPen(pg.mkPen(s.color, width=1.5, style=style))
        self._relabel(s)

    def is_series_failed(self, key: str) -> bool:
        """Whether series ``key`` is marked failed."""
        return self._series[key].failed

    def legend_labels(self) -> list[str]:
        """The texts of the latency legend, top to bottom."""
        return [label.text for _, label in self._latency_legend.items]

    def _relabel(self, s: _Series) -> None:
        for legend, curve in ((self._latency_legend, s.measure_curve), (self._dist_legend, s.hist_curve)):
            label = legend.getLabel(curve)
            if label is not None:
                label.setText(s.legend_text())
                # Lay the legend out now, not in a posted event (one left pending when
                # Python exits makes PySide crash in its clean-up).
                legend.layout.activate()

    # -- what is drawn (for the window's status texts and for tests) -------
    def median_line_value(self, key: str) -> float | None:
        """The latency (ms) at which the dashed median line of ``key`` is drawn (None: none)."""
        s = self._series[key]
        return s.median if s.median_line.isVisible() else None

    def warmup_region(self, key: str) -> tuple[float, float] | None:
        """The shaded warm-up iteration span drawn for ``key`` (None when it has no warm-up)."""
        s = self._series[key]
        if s.warm.n == 0 or not s.region.scene():
            return None
        lo, hi = s.region.getRegion()
        return (float(lo), float(hi))

    def histogram_data(self, key: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(bin edges in ms, percent of its measured calls per bin) drawn for ``key``."""
        return self._series[key].hist

    def summary_texts(self) -> list[str]:
        """The speedup texts written on the summary bars, left to right."""
        return [t.toPlainText() for t in self._bar_texts]

    def summary_bars(self) -> list[SummaryBar]:
        """The bars of the summary tab, left to right."""
        return list(self._bars)

    def hover_text(self) -> str:
        """The crosshair's label text ("" when hidden)."""
        return self._hover_text if self._hover_label.isVisible() else ""

    def is_log_scale(self) -> bool:
        """Whether the latency axis is logarithmic."""
        return self._log_y

    def current_plot(self) -> pg.PlotWidget:
        """The plot of the visible tab."""
        return (self.latency_plot, self.distribution_plot, self.summary_plot)[max(0, self.currentIndex())]

    # -- drawing -----------------------------------------------------------
    def refresh(self) -> None:
        """Redraw what changed since the last call from the buffers (cheap when nothing did)."""
        self._sync_legends()
        changed = False
        for s in self._series.values():
            if not s.dirty:
                continue
            s.dirty = False
            changed = True
            s.warmup_curve.setData(s.warm.xs, s.warm.ys)
            s.measure_curve.setData(s.meas.xs, s.meas.ys)
            clip = self.latency_plot.getPlotItem().clipToViewMode()
            s.warmup_curve.setClipToView(clip and s.warm.monotonic)
            s.measure_curve.setClipToView(clip and s.meas.monotonic)
            if s.meas.n != s.median_n:
                s.median_n = s.meas.n
                s.median = float(np.median(s.meas.ys)) if s.meas.n else None
                self._place_median(s)
        if not changed:
            return
        self._place_regions()
        self._hist_dirty = True
        self._schedule_distribution()

    def _place_median(self, s: _Series) -> None:
        if s.median is None or (self._log_y and s.median <= 0):
            s.median_line.setVisible(False)
            return
        s.median_line.setPos(math.log10(s.median) if self._log_y else s.median)
        s.median_line.setVisible(True)

    def _place_regions(self) -> None:
        seen: set[tuple[float, float]] = set()
        for s in self._series.values():
            rng = s.warmup_range
            if rng is None:
                s.region.setVisible(False)
                continue
            span = (rng[0] - 0.5, rng[1] + 0.5)
            s.region.setRegion(span)
            # Runs of one config share their warm-up span: shade it once.
            s.region.setVisible(span not in seen)
            seen.add(span)
        if seen and not self._warm_legend_shown:
            self._latency_legend.addItem(self._warm_sample, "warm-up")
            self._warm_legend_shown = True

    def _schedule_distribution(self) -> None:
        wait = HISTOGRAM_MIN_INTERVAL_S - (time.monotonic() - self._hist_last)
        if wait <= 0:
            self._update_distribution()
        elif not self._hist_timer.isActive():
            self._hist_timer.start(int(wait * 1000) + 1)

    def _update_distribution(self) -> None:
        self._hist_timer.stop()
        if not self._hist_dirty:
            return
        self._hist_dirty = False
        self._hist_last = time.monotonic()
        data = {k: s.meas.ys for k, s in self._series.items() if s.meas.n}
        for k, s in self._series.items():
            if k not in data:
                s.hist = None
                s.hist_curve.setData([], [])
        if not data:
            self._set_dist_note("")
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
            frac = counts * (100.0 / len(values))
            s = self._series[k]
            s.hist = (edges, frac)
            s.hist_curve.setData(edges, frac)
        self._set_dist_note(f"{beyond} calls above {hi:.3g} ms not shown" if beyond else "")

    def _set_dist_note(self, text: str) -> None:
        self._hist_note = text
        plot = self.distribution_plot.getPlotItem()
        if text:
            plot.setTitle(text, color=MUTED, size="9pt")
        else:
            plot.setTitle(None)

    def distribution_note(self) -> str:
        """The distribution tab's note on calls beyond the shown range ("" when none)."""
        return self._hist_note

    def _on_tab_changed(self, index: int) -> None:
        self.hide_crosshair()
        if self.widget(index) is self.distribution_plot and self._hist_dirty:
            self._update_distribution()

    # -- log scale ---------------------------------------------------------
    def set_log_scale(self, on: bool) -> None:
        """Switch the latency axis between linear and logarithmic."""
        on = bool(on)
        if self.log_scale_checkbox.isChecked() != on:
            self.log_scale_checkbox.setChecked(on)  # re-enters through toggled
            return
        if on == self._log_y:
            return
        self._log_y = on
        self.latency_plot.getPlotItem().setLogMode(x=False, y=on)
        for s in self._series.values():
            self._apply_log_to_curve(s)
            self._place_median(s)
        self.hide_crosshair()

    def _apply_log_to_curve(self, s: _Series) -> None:
        for curve in (s.measure_curve, s.warmup_curve):
            curve.setLogMode(False, self._log_y)

    def _on_menu_log_toggled(self, on: bool) -> None:
        if on != self._log_y:
            self.set_log_scale(on)

    # -- crosshair -----------------------------------------------------------
    def _on_mouse_moved(self, args: tuple) -> None:
        pos = args[0]
        vb = self.latency_plot.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            self.hide_crosshair()
            return
        p = vb.mapSceneToView(pos)
        y = 10 ** p.y() if self._log_y else p.y()
        self.crosshair_at(p.x(), y)

    def crosshair_at(self, iteration: float, latency_ms: float) -> str | None:
        """Snap the crosshair to the sample nearest (iteration, latency_ms); its label text."""
        vb = self.latency_plot.getPlotItem().getViewBox()
        (x0, x1), (y0, y1) = vb.viewRange()
        sx = max(x1 - x0, 1e-12)
        sy = max(y1 - y0, 1e-12)
        ty = self._view_y(latency_ms)
        best: tuple[float, _Series, int] | None = None
        for s in self._series.values():
            b = s.all
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
                    best = (d, s, j)
        if best is None:
            self.hide_crosshair()
            return None
        _, s, j = best
        x, y = float(s.all.x[j]), float(s.all.y[j])
        phase = " (warm-up)" if s.all.flag[j] else ""
        text = f"{s.legend_text()}\niteration {x:g}{phase}\n{y:.4g} ms"
        self._hover_text = text
        vy = self._view_y(y)
        self._vline.setPos(x)
        self._hline.setPos(vy)
        self._hover_label.setText(text)
        self._hover_label.setColor(s.color)
        # Keep the label inside the view: flip to the left half / below as needed.
        ax = 1.0 if x > (x0 + x1) / 2 else 0.0
        ay = 0.0 if vy > (y0 + y1) / 2 else 1.0
        self._hover_label.setAnchor((ax, ay))
        self._hover_label.setPos(QPointF(x, vy))
        for item in (self._vline, self._hline, self._hover_label):
            item.setVisible(True)
        return text

    def _view_y(self, y_ms: float) -> float:
        if self._log_y:
            return math.log10(y_ms) if y_ms > 0 else -12.0
        return y_ms

    def hide_crosshair(self) -> None:
        """Hide the crosshair and its label."""
        for item in (self._vline, self._hline, self._hover_label):
            item.setVisible(False)

    # -- summary -----------------------------------------------------------
    def set_summary(self, rows: list[SummaryBar]) -> None:
        """Draw median bars with p5–p95 error bars and the speedup on each bar."""
        self._bars = [r for r in rows if r.median_ms is not None and math.isfinite(r.median_ms)]
        plot = self.summary_plot
        for item in self._bar_items + self._bar_texts:
            plot.removeItem(item)
        self._bar_items = []
        self._bar_texts = []
        axis = plot.getPlotItem().getAxis("bottom")
        if not self._bars:
            axis.setTicks([[]])
            return
        n = len(self._bars)
        x = np.arange(n, dtype=float)
        med = np.array([b.median_ms for b in self._bars])
        p5 = np.array([min(b.p5_ms, b.median_ms) for b in self._bars])
        p95 = np.array([max(b.p95_ms, b.median_ms) for b in self._bars])
        colors = []
        for i, b in enumerate(self._bars):
            s = self._series.get(b.key)
            colors.append(s.color if s is not None else series_color(i))
        bars = pg.BarGraphItem(
            x=x,
            height=med,
            width=0.6,
            brushes=[pg.mkBrush(with_alpha(c, 190)) for c in colors],
            pens=[pg.mkPen(c.darker(130), width=1) for c in colors],
        )
        errors = pg.ErrorBarItem(
            x=x, y=med, top=p95 - med, bottom=med - p5, beam=0.18, pen=pg.mkPen(FOREGROUND, width=1.3)
        )
        plot.addItem(bars)
        plot.addItem(errors)
        self._bar_items = [bars, errors]
        font = QFont()
        font.setPointSize(10)
        font.setBold(True)
        for i, b in enumerate(self._bars):
            text = pg.TextItem(format_speedup(b.speedup), color=FOREGROUND, anchor=(0.5, 1.0))
            text.setFont(font)
            text.setPos(float(x[i]), float(p95[i]))
            plot.addItem(text)
            self._bar_texts.append(text)
        axis.setTicks([[(float(x[i]), b.label) for i, b in enumerate(self._bars)]])
        top = float(p95.max()) if len(p95) else 1.0
        plot.getPlotItem().setXRange(-0.6, n - 0.4, padding=0)
        plot.getPlotItem().setYRange(0, top * 1.18 if top > 0 else 1.0, padding=0)

    # -- whole runs ----------------------------------------------------------
    def load_run(self, run: RunResult, key_prefix: str = "", label_prefix: str = "") -> None:
        """Add every variant of ``run`` as a series and merge its bars into the summary."""
        for name, v in run.variants.items():
            key = f"{key_prefix}{name}"
            self.add_series(key, f"{label_prefix}{name}")
            smp = v.samples
            it = np.asarray(smp.iteration, dtype=np.float64)
            ms = np.asarray(smp.wall_ms, dtype=np.float64)
            phases = smp.phase
            start = 0
            for i in range(1, len(phases) + 1):
                if i == len(phases) or phases[i] != phases[start]:
                    phase = phases[start] if phases[start] in PHASES else "measure"
                    self.append(key, it[start:i], ms[start:i], phase)
                    start = i
            self.set_series_failed(key, v.status == "failed")
        new_bars = []
        for row in summarize(run):
            if row.median_ms is None:
                continue
            new_bars.append(
                SummaryBar(
                    key=f"{key_prefix}{row.name}",
                    label=f"{label_prefix}{row.name}",
                    median_ms=row.median_ms,
                    p5_ms=row.p5_ms if row.p5_ms is not None else row.median_ms,
                    p95_ms=row.p95_ms if row.p95_ms is not None else row.median_ms,
                    speedup=row.speedup,
                )
            )
        keys = {b.key for b in new_bars}
        merged = [b for b in self._bars if b.key not in keys] + new_bars
        self.set_summary(merged)
        self.refresh()
