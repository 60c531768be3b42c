"""The plot panel: live latency per iteration, latency distribution, summary bars, GPU state.

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
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ..results import RunResult, SummaryRow, summarize
from .colors import FOREGROUND, MUTED, WARMUP_SHADE, series_color, with_alpha

PHASES = ("warmup", "measure")

#: Minimum seconds between two histogram recomputations during a live run.
HISTOGRAM_MIN_INTERVAL_S = 0.2
#: Rate limit of the crosshair (mouse move events per second).
CROSSHAIR_RATE_HZ = 30

#: The GPU tab's quantities (keys of the readings) with their axis labels, top to bottom.
GPU_QUANTITIES: tuple[tuple[str, str], ...] = (
    ("sm_clock_mhz", "SM clock (MHz)"),
    ("temperature_c", "temperature (°C)"),
    ("power_w", "power (W)"),
)
#: Shown on the GPU tab while no run shown has GPU readings.
NO_GPU_READINGS = (
    "No GPU readings: they are recorded on CUDA runs with nvidia-ml-py installed "
    "(pip install 'compile-studio[nvml]')."
)
#: Curve colours of the runs on the GPU tab (one per run; the first is neutral, so the
#: variant bands behind a single run keep the colours of the latency curves).
GPU_RUN_COLORS: tuple[str, ...] = (
    "#333333", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
)
#: A run with more variant segments than this (interleaved blocks) gets its boundary
#: lines and bands but no name labels, which would overlap; the hover text names them.
GPU_MAX_LABELLED_SEGMENTS = 16
#: Width (px) of the GPU plots' left axes, equal so that the stacked plots line up.
GPU_AXIS_WIDTH = 62


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


class _GpuRun:
    """The GPU readings of one run: growable columns and the curves drawn from them."""

    COLUMNS = ("t_s", "iteration") + tuple(q for q, _ in GPU_QUANTITIES)

    def __init__(self, key: str, label: str, color: QColor) -> None:
        self.key = key
        self.label = label
        self.color = color
        self.n = 0
        self.cols = {c: np.empty(256, dtype=np.float64) for c in self.COLUMNS}
        self.variants: list[str | None] = []
        #: (t, variant) where the variant tag changes (the first tagged reading included)
        self.boundaries: list[tuple[float, str]] = []
        self._last_tag: str | None = None
        self.monotonic = True
        self.dirty = False
        self.curves: dict[str, pg.PlotDataItem] = {}
        for q, _ in GPU_QUANTITIES:
            # Named only in the top plot: the legend lists each run once.
            curve = pg.PlotDataItem(
                name=label if q == GPU_QUANTITIES[0][0] else None,
                pen=pg.mkPen(color, width=1),
                connect="finite",  # a missing reading (None → NaN) leaves a gap
                antialias=True,
            )
            self.curves[q] = curve
        #: marker items per plot (rebuilt when boundaries change) and the top-plot lines
        self.markers: list[tuple[pg.PlotItem, pg.GraphicsObject]] = []
        self.lines: list[tuple[pg.InfiniteLine, str]] = []
        self.last_bands: list[pg.LinearRegionItem] = []
        self.labels: set[tuple[float, str]] = set()  # (t, variant) named by a label
        self.drawn: tuple[int, bool] | None = None  # (boundaries drawn, shaded)

    def append(self, rows: list[dict]) -> None:
        m = len(rows)
        if m == 0:
            return
        need = self.n + m
        cap = len(self.cols["t_s"])
        if need > cap:
            while cap < need:
                cap *= 2
            for c, old in self.cols.items():
                new = np.empty(cap, dtype=np.float64)
                new[: self.n] = old[: self.n]
                self.cols[c] = new
        for c in self.COLUMNS:
            self.cols[c][self.n : need] = [_as_float(row.get(c)) for row in rows]
        t = self.cols["t_s"][self.n : need]
        if self.monotonic:
            prev = self.cols["t_s"][self.n - 1] if self.n else -math.inf
            if np.any(np.diff(np.concatenate(([prev], t))) < 0):
                self.monotonic = False
        for i, row in enumerate(rows):
            tag = row.get("variant")
            tag = None if tag is None else str(tag)
            self.variants.append(tag)
            if tag is not None and tag != self._last_tag:
                if math.isfinite(t[i]):
                    self.boundaries.append((float(t[i]), tag))
                self._last_tag = tag
        self.n = need
        self.dirty = True

    def column(self, name: str) -> np.ndarray:
        return self.cols[name][: self.n]

    def segments(self) -> list[tuple[float, float, str]]:
        """(start t, end t, variant) of each stretch of readings with one variant tag."""
        if not self.boundaries:
            return []
        t = self.column("t_s")
        finite = t[np.isfinite(t)]
        end = float(finite.max()) if len(finite) else self.boundaries[-1][0]
        out = []
        for i, (t0, tag) in enumerate(self.boundaries):
            t1 = self.boundaries[i + 1][0] if i + 1 < len(self.boundaries) else max(end, t0)
            out.append((t0, t1, tag))
        return out


class _GpuViewBox(pg.ViewBox):
    """A view box padded on y (curves clear the frame) but barely on time, the shared x axis."""

    def suggestPadding(self, axis: int) -> float:  # noqa: N802 (pyqtgraph API)
        return 0.005 if axis == 0 else super().suggestPadding(axis)


def _as_float(value: object) -> float:
    """A reading as a float; None (or anything unreadable) as NaN."""
    if value is None:
        return math.nan
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


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
    _style_plot_item(plot.getPlotItem(), left, bottom)


def _style_plot_item(item: pg.PlotItem, left: str, bottom: str | None) -> None:
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
    """Tabs "Latency", "Distribution", "Summary" and "GPU" over the series of one or more runs."""

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

        # -- GPU tab ------------------------------------------------------------
        self._build_gpu_tab()

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
        self._clear_gpu()
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

    def current_plot(self) -> QWidget:
        """The plot of the visible tab (on the GPU tab: its three plots, or the note shown instead)."""
        index = max(0, self.currentIndex())
        if self.widget(index) is self._gpu_page:
            return self._gpu_stack.currentWidget()
        return (self.latency_plot, self.distribution_plot, self.summary_plot)[index]

    # -- drawing -----------------------------------------------------------
    def refresh(self) -> None:
        """Redraw what changed since the last call from the buffers (cheap when nothing did)."""
        self._sync_legends()
        self._refresh_gpu()
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
        self.hide_gpu_hover()
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
        bars = (
            SummaryBar.from_row(row, f"{key_prefix}{row.name}", f"{label_prefix}{row.name}")
            for row in summarize(run)
        )
        new_bars = [b for b in bars if b is not None]
        keys = {b.key for b in new_bars}
        merged = [b for b in self._bars if b.key not in keys] + new_bars
        self.set_summary(merged)
        if run.gpu_state:
            run_key = key_prefix.rstrip("/") or run.run_id
            label = label_prefix.strip().rstrip("·").strip()
            self.append_gpu_state(run_key, label or run.config.get("label") or run.run_id, run.gpu_state)
        self.refresh()

    # -- GPU state -------------------------------------------------------------
    def _build_gpu_tab(self) -> None:
        self._gpu_runs: dict[str, _GpuRun] = {}
        self._gpu_has_data = False
        self._gpu_hover_text = ""
        self.gpu_plot = pg.GraphicsLayoutWidget()
        self.gpu_plot.setBackground("w")
        self.gpu_plot.ci.setSpacing(4)
        self.gpu_plots: dict[str, pg.PlotItem] = {}
        top: pg.PlotItem | None = None
        last = GPU_QUANTITIES[-1][0]
        for row, (q, axis_label) in enumerate(GPU_QUANTITIES):
            plot = self.gpu_plot.addPlot(row=row, col=0, viewBox=_GpuViewBox())
            _style_plot_item(plot, axis_label, "seconds since GPU sampling started" if q == last else None)
            plot.getAxis("left").setWidth(GPU_AXIS_WIDTH)
            plot.setClipToView(True)
            plot.getViewBox().setDefaultPadding(0.1)
            if q != last:
                plot.getAxis("bottom").setStyle(showValues=False)
                plot.getAxis("bottom").setHeight(6)
            if top is None:
                top = plot
            else:
                plot.setXLink(top)
            self.gpu_plots[q] = plot
        assert top is not None
        self._gpu_legend = top.addLegend(
            offset=(-10, 10),
            brush=pg.mkBrush(255, 255, 255, 215),
            pen=pg.mkPen(200, 200, 200),
            labelTextColor=FOREGROUND,
            labelTextSize="9pt",
        )
        self._gpu_legend.setVisible(False)

        hover_pen = pg.mkPen(MUTED, width=1, style=Qt.PenStyle.DotLine)
        self._gpu_vlines: list[pg.InfiniteLine] = []
        for plot in self.gpu_plots.values():
            line = pg.InfiniteLine(angle=90, movable=False, pen=hover_pen)
            line.setVisible(False)
            line.setZValue(100)
            line.exclude_from_export = True  # see gui.export
            plot.addItem(line, ignoreBounds=True)
            self._gpu_vlines.append(line)
        self._gpu_hover_label = pg.TextItem(
            "", color=FOREGROUND, anchor=(0, 0), fill=pg.mkBrush(255, 255, 255, 230),
            border=pg.mkPen(180, 180, 180),
        )
        self._gpu_hover_label.setVisible(False)
        self._gpu_hover_label.setZValue(101)
        self._gpu_hover_label.exclude_from_export = True
        top.addItem(self._gpu_hover_label, ignoreBounds=True)
        self._gpu_mouse_proxy = pg.SignalProxy(
            self.gpu_plot.scene().sigMouseMoved, rateLimit=CROSSHAIR_RATE_HZ, slot=self._on_gpu_mouse_moved
        )
        self._gpu_leave_filter = _LeaveFilter(self.hide_gpu_hover, self)
        self.gpu_plot.viewport().installEventFilter(self._gpu_leave_filter)

        self.gpu_note = QLabel(NO_GPU_READINGS)
        self.gpu_note.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.gpu_note.setWordWrap(True)
        self.gpu_note.setMargin(24)
        self.gpu_note.setStyleSheet(f"color: {MUTED}; background: white;")
        self.gpu_note.setAutoFillBackground(True)
        self._gpu_stack = QStackedWidget()
        self._gpu_stack.addWidget(self.gpu_plot)
        self._gpu_stack.addWidget(self.gpu_note)
        self._gpu_stack.setCurrentWidget(self.gpu_note)

        self._gpu_hint = QLabel(
            "Dashed lines: where a variant starts · hover for the reading at a time"
        )
        self._gpu_hint.setStyleSheet(f"color: {MUTED};")
        page = QWidget()
        lay = QVBoxLayout(page)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        bar = QHBoxLayout()
        bar.setContentsMargins(6, 2, 6, 0)
        bar.addWidget(self._gpu_hint)
        bar.addStretch(1)
        lay.addLayout(bar)
        lay.addWidget(self._gpu_stack, 1)
        self._gpu_hint.setVisible(False)
        self._gpu_page = page
        index = self.addTab(page, "GPU")
        self.setTabToolTip(index, "SM clock, temperature and power read from the GPU (NVML) during the run")

    def append_gpu_state(self, run_key: str, label: str, rows: list[dict]) -> None:
        """Buffer GPU readings of run ``run_key`` (dicts as in ``gpu_state.csv``); draws nothing.

        A new ``run_key`` gets its own colour and ``label`` (in the legend and hover text).
        """
        r = self._gpu_runs.get(run_key)
        if r is None:
            color = QColor(GPU_RUN_COLORS[len(self._gpu_runs) % len(GPU_RUN_COLORS)])
            r = _GpuRun(run_key, label, color)
            self._gpu_runs[run_key] = r
            for q, curve in r.curves.items():
                self.gpu_plots[q].addItem(curve)
        r.append(list(rows))

    def gpu_run_keys(self) -> list[str]:
        """Keys of the runs on the GPU tab, in the order they were added."""
        return list(self._gpu_runs)

    def gpu_state_data(self, run_key: str) -> dict[str, np.ndarray]:
        """Columns ``t_s``, ``iteration`` and the quantities of run ``run_key`` (NaN for None), copies."""
        r = self._gpu_runs[run_key]
        return {c: r.column(c).copy() for c in _GpuRun.COLUMNS}

    def gpu_variant_boundaries(self, run_key: str) -> list[tuple[float, str]]:
        """(t, variant) of the dashed lines drawn where run ``run_key`` starts a variant."""
        return [(float(line.value()), tag) for line, tag in self._gpu_runs[run_key].lines]

    def gpu_variant_bands(self, run_key: str) -> list[tuple[float, float, str]]:
        """(start, end, variant) of the shaded bands drawn for ``run_key`` (only one run: shaded)."""
        r = self._gpu_runs[run_key]
        plot = self.gpu_plots[GPU_QUANTITIES[0][0]]
        out = []
        for owner, item in r.markers:
            if owner is plot and isinstance(item, pg.LinearRegionItem):
                lo, hi = item.getRegion()
                out.append((float(lo), float(hi), str(item.variant)))
        return out

    def gpu_note_shown(self) -> bool:
        """Whether the GPU tab shows its "no readings" note instead of the plots."""
        return self._gpu_stack.currentWidget() is self.gpu_note

    def gpu_legend_labels(self) -> list[str]:
        """The texts of the GPU legend (empty while it is hidden: one run or none)."""
        if not self._gpu_legend.isVisible():
            return []
        return [label.text for _, label in self._gpu_legend.items]

    def _clear_gpu(self) -> None:
        for r in self._gpu_runs.values():
            for q, curve in r.curves.items():
                self.gpu_plots[q].removeItem(curve)
            self._remove_markers(r)
        self._gpu_runs.clear()
        self._gpu_legend.clear()
        self._gpu_legend.setVisible(False)
        self.hide_gpu_hover()
        self._show_gpu_data(False)

    def _show_gpu_data(self, on: bool) -> None:
        self._gpu_has_data = on
        self._gpu_stack.setCurrentWidget(self.gpu_plot if on else self.gpu_note)
        self._gpu_hint.setVisible(on)

    def _refresh_gpu(self) -> None:
        changed = False
        for r in self._gpu_runs.values():
            if not r.dirty:
                continue
            r.dirty = False
            changed = True
            t = r.column("t_s")
            for q, curve in r.curves.items():
                curve.setClipToView(r.monotonic)
                curve.setData(t, r.column(q))
        if not changed:
            return
        with_data = [r for r in self._gpu_runs.values() if r.n]
        shade = len(with_data) == 1
        for r in with_data:
            if r.drawn != (len(r.boundaries), shade):
                self._draw_markers(r, shade)
            elif r.last_bands:
                segs = r.segments()
                for band in r.last_bands:
                    band.setRegion(segs[-1][:2])
        self._gpu_legend.setVisible(len(with_data) > 1)
        if with_data:
            self._gpu_legend.layout.activate()
        if bool(with_data) != self._gpu_has_data:
            self._show_gpu_data(bool(with_data))

    def _remove_markers(self, r: _GpuRun) -> None:
        for plot, item in r.markers:
            plot.removeItem(item)
        r.markers = []
        r.lines = []
        r.last_bands = []
        r.labels = set()
        r.drawn = None

    def _draw_markers(self, r: _GpuRun, shade: bool) -> None:
        """Dashed lines (and, for a lone run, bands in the variants' latency colours)."""
        self._remove_markers(r)
        segs = r.segments()
        labelled = len(segs) <= GPU_MAX_LABELLED_SEGMENTS
        # A boundary another run already names (runs of one config start alike) is not
        # named twice on top of itself.
        named = {pair for other in self._gpu_runs.values() if other is not r for pair in other.labels}
        top_name = GPU_QUANTITIES[0][0]
        line_pen = pg.mkPen(with_alpha(r.color, 170), width=1, style=Qt.PenStyle.DashLine)
        for i, (t0, t1, tag) in enumerate(segs):
            variant_color = self._variant_color(r.key, tag, i)
            for q, plot in self.gpu_plots.items():
                opts = {}
                if q == top_name and labelled and (t0, tag) not in named:
                    opts = {
                        "label": tag.replace("{", "{{").replace("}", "}}"),
                        "labelOpts": {
                            "position": 0.97,
                            "anchors": [(0, 0), (0, 0)],
                            "color": variant_color.darker(170) if shade else r.color,
                            "fill": pg.mkBrush(255, 255, 255, 225),
                        },
                    }
                line = pg.InfiniteLine(pos=t0, angle=90, movable=False, pen=line_pen, **opts)
                if opts:
                    r.labels.add((t0, tag))
                line.setZValue(-5)
                plot.addItem(line, ignoreBounds=True)
                r.markers.append((plot, line))
                if q == top_name:
                    r.lines.append((line, tag))
                if shade:
                    band = pg.LinearRegionItem(
                        values=(t0, t1), orientation="vertical", movable=False,
                        brush=pg.mkBrush(with_alpha(variant_color, 30)), pen=pg.mkPen(None),
                    )
                    band.variant = tag
                    band.setZValue(-10)
                    plot.addItem(band, ignoreBounds=True)
                    r.markers.append((plot, band))
                    if i == len(segs) - 1:
                        r.last_bands.append(band)
        r.drawn = (len(r.boundaries), shade)

    def _variant_color(self, run_key: str, variant: str, index: int) -> QColor:
        """The latency-curve colour of (run, variant), or a grey alternating by segment."""
        s = self._series.get(f"{run_key}/{variant}")
        if s is not None:
            return QColor(s.color)
        return QColor(MUTED) if index % 2 == 0 else QColor("#BBBBBB")

    def _on_gpu_mouse_moved(self, args: tuple) -> None:
        pos = args[0]
        for plot in self.gpu_plots.values():
            vb = plot.getViewBox()
            if vb.sceneBoundingRect().contains(pos):
                self.gpu_hover_at(vb.mapSceneToView(pos).x())
                return
        self.hide_gpu_hover()

    def gpu_hover_at(self, t_s: float) -> str | None:
        """Mark the reading nearest ``t_s`` of each run; its label text (None: no readings)."""
        lines = []
        snap: float | None = None
        for r in self._gpu_runs.values():
            if r.n == 0:
                continue
            t = r.column("t_s")
            dist = np.abs(t - t_s)
            if not np.isfinite(dist).any():
                continue
            j = int(np.nanargmin(dist))
            if snap is None:
                snap = float(t[j])
            values = [r.column(q)[j] for q, _ in GPU_QUANTITIES]
            units = ("MHz", "°C", "W")
            readings = " · ".join(
                "–" if not math.isfinite(v) else f"{v:.0f} {u}" for v, u in zip(values, units)
            )
            it = r.column("iteration")[j]
            where = r.variants[j] or "before the first call"
            if math.isfinite(it):
                where += f", iteration {it:.0f}"
            head = f"{r.label}: " if len(self._gpu_runs) > 1 else ""
            lines.append(f"{head}t {t[j]:.1f} s · {where}\n{readings}")
        if snap is None:
            self.hide_gpu_hover()
            return None
        text = "\n".join(lines)
        self._gpu_hover_text = text
        for line in self._gpu_vlines:
            line.setPos(snap)
            line.setVisible(True)
        top = self.gpu_plots[GPU_QUANTITIES[0][0]]
        (x0, x1), (y0, y1) = top.getViewBox().viewRange()
        self._gpu_hover_label.setText(text)
        self._gpu_hover_label.setAnchor((1.0 if snap > (x0 + x1) / 2 else 0.0, 1.0))
        self._gpu_hover_label.setPos(QPointF(snap, y0))
        self._gpu_hover_label.setVisible(True)
        return text

    def gpu_hover_text(self) -> str:
        """The GPU tab's hover label text ("" when hidden)."""
        return self._gpu_hover_text if self._gpu_hover_label.isVisible() else ""

    def hide_gpu_hover(self) -> None:
        """Hide the GPU tab's hover line and label."""
        for line in self._gpu_vlines:
            line.setVisible(False)
        self._gpu_hover_label.setVisible(False)
