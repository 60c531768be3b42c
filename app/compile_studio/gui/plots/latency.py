"""The "Latency" tab: latency per iteration, medians (wide pale lines), log scale, crosshair.

Measured calls come first: a series' warm-up calls (thousands for a tiny model
under a time-based warm-up) are folded away once it has measured calls, until
"Show warm-up calls" (the plot's context menu) brings them back, shaded. The
y range is set by robust quantiles of the calls shown, not by their min and
max: a linear axis from 0 up to the highest quantile (p99 … p90) that keeps
95 % of each series' calls out of the bottom fifth of the plot (see
robust_range.py); calls beyond the range are marked at its edge (▲ above, ▼
below) and counted in a note inside the plot, which exports carry too. Zooming by hand keeps the range until "Fit measured calls".

Before anything is shown it says what Run will do instead of drawing empty axes.
What one series draws, and the span of its calls, is in latency_curves.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QGraphicsItem,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from ...results.report.formatting import plural
from .buffers import Series
from .hover import hover_label, track_mouse
from .latency_curves import LatencyCurves
from .robust_range import linear_range
from .style import (
    LEGEND_BRUSH,
    MUTED,
    PlainLogAxis,
    SideLegend,
    curve_pen,
    hover_pen,
    make_legend,
    plain_number,
    set_legend_text,
    style_plot_item,
    warmup_pen,
)
from .tab import PlotTab, TabSpec, register_tab

#: The caption above the latency plot (it wraps when the plot is narrow).
LATENCY_CAPTION = (
    "Shaded: warm-up (not in the statistics) · wide pale line: median of measured calls · "
    "dotted: a new round · ▲▼: calls beyond the range shown"
)
#: The caption while warm-up calls are folded away.
LATENCY_CAPTION_FOLDED = (
    "Measured calls (warm-up folded away: right-click › Show warm-up calls) · wide pale line: median · "
    "dotted: a new round · ▲▼: calls beyond the range shown"
)
#: Room added above and below the percentiles (a share of their span).
RANGE_PAD = 0.08
#: While a run is live: a range is kept while the calls fill at least this share of it …
STEADY_FILL = 0.6
#: … and a new one is this many times the calls' span (room to grow).
STEADY_GROWTH = 1.5


class LatencyTab(PlotTab):
    """Latency (ms) against iteration for every series; hover snaps a crosshair to a sample.

    The legend sits right of the plot (the "Legend" toggle hides it); with no
    series and a :meth:`set_hint` text, the tab shows that text instead of the plot.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.curves: dict[str, LatencyCurves] = {}
        self._log_y = False
        self._show_warmup = False
        #: whether the range follows the calls shown (off once the user zooms or pans)
        self._fit = True
        #: while a run is live the range grows in steps (:meth:`set_steady_range`)
        self._steady = False
        #: the calls beyond the y range shown: (above, below), counted from the points drawn
        self.beyond: tuple[int, int] = (0, 0)
        self._beyond_exact = True
        #: a series' calls spread too wide for the linear range (see robust_range)
        self._too_wide = False
        #: the user's choice of a log axis (None: chosen by the calls' spread)
        self._log_chosen: bool | None = None
        #: the axis is logarithmic because of the calls' spread (not chosen)
        self._auto_log = False
        self._build_plot()
        self._build_hover()
        self._build_note_and_menu()
        self._build_bar_and_stack()
        self.sync_legend()

    def _build_plot(self) -> None:
        """The plot, its axes, legend and drawing settings."""
        self.plot = pg.PlotWidget(background="w", axisItems={"left": PlainLogAxis("left")})
        item = self.plot.getPlotItem()
        style_plot_item(item, "latency (ms)", "iteration")
        # An axis draws its grid across the plot, so a new curve segment repaints it; from a
        # pixmap cache that is a copy, not its labels and lines drawn again (until its range moves).
        for side in ("left", "bottom"):
            item.getAxis(side).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.legend = make_legend(item, outside=True)
        # Applied by PlotItem.addItem to every curve added later (and kept in its menu).
        item.setDownsampling(auto=True, mode="peak")
        item.setClipToView(True)
        self._warm_sample = pg.PlotDataItem(
            [0], [0], pen=pg.mkPen(None), symbol="s", symbolSize=13,
            symbolBrush=pg.mkBrush(0, 0, 0, 40), symbolPen=pg.mkPen(None),
        )
        self._warm_legend_shown = False

    def _build_hover(self) -> None:
        """The crosshair and label that follow the mouse."""
        self._vline = pg.InfiniteLine(angle=90, movable=False, pen=hover_pen())
        self._hline = pg.InfiniteLine(angle=0, movable=False, pen=hover_pen())
        self.hover_label = hover_label(anchor=(0, 1))
        for hover_item in (self._vline, self._hline, self.hover_label):
            hover_item.setVisible(False)
            hover_item.setZValue(100)
            hover_item.exclude_from_export = True  # see gui.image_export
            self.plot.addItem(hover_item, ignoreBounds=True)
        self._mouse_proxy = track_mouse(self.plot, self._on_mouse_moved, self.hide_crosshair, self)

    def _build_note_and_menu(self) -> None:
        """The note inside the plot and the plot's context-menu entries."""
        item = self.plot.getPlotItem()
        vb = item.getViewBox()
        self._refitting = False
        #: what is folded away and what lies beyond the range, in words (inside the plot: exports show it)
        self.note = pg.TextItem("", color=MUTED, anchor=(0, 1), fill=pg.mkBrush(*LEGEND_BRUSH))
        self.note.setParentItem(vb)
        self.note.setZValue(70)
        self.note.setVisible(False)
        vb.sigResized.connect(self._place_note)
        vb.sigRangeChanged.connect(self._on_range_changed)
        vb.sigRangeChangedManually.connect(self._on_range_changed_by_hand)
        menu = vb.menu
        menu.viewAll.triggered.connect(self._on_range_changed_by_hand)
        menu.addSeparator()
        self.warmup_action = menu.addAction("Show warm-up calls")
        self.warmup_action.setCheckable(True)
        self.warmup_action.setToolTip("Draw the warm-up calls (shaded) before the measured ones")
        self.warmup_action.toggled.connect(self.set_warmup_shown)
        self.fit_action = menu.addAction("Fit measured calls")
        self.fit_action.setToolTip("Range from 0 over the calls shown (up to p99, or lower so spikes do not flatten them); calls beyond it are marked at its edge")
        self.fit_action.triggered.connect(self.fit_calls)


    def _build_bar_and_stack(self) -> None:
        """The caption and check boxes above the plot, and the hint shown in its place."""
        item = self.plot.getPlotItem()
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
        self.caption = QLabel(LATENCY_CAPTION_FOLDED)
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
        for marks in (c.marks_above, c.marks_below):
            self.plot.addItem(marks, ignoreBounds=True)
        c.apply_log(self._log_y)
        self._sync_hint()
        self._sync_warmup(c)

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
        self._fit = True
        self.beyond = (0, 0)
        self._too_wide = self._auto_log = False
        if self._log_chosen is None and self._log_y:
            self._apply_log(False)  # chosen by the calls that were shown
        self._set_note()
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
        """Draw the buffers of the ``changed`` series, their medians and the warm-up bands; refit the range."""
        clip = self.plot.getPlotItem().clipToViewMode()
        columns = self.plot.getPlotItem().getViewBox().width()
        for s in changed:
            c = self.curves[s.key]
            # more calls than pixel columns draw a band of strokes: smoothing their edges shows
            # nothing and costs most of the repaint
            c.warmup_curve.setData(s.warm.xs, s.warm.ys, antialias=s.warm.n <= columns)
            c.measure_curve.setData(s.meas.xs, s.meas.ys, antialias=s.meas.n <= columns)
            c.warmup_curve.setClipToView(clip and s.warm.monotonic)
            c.measure_curve.setClipToView(clip and s.meas.monotonic)
            for line in c.new_round_lines():
                self.plot.addItem(line, ignoreBounds=True)
            if s.meas.n != c.median_n:
                c.median_n = s.meas.n
                c.median = float(np.median(s.measured_values())) if s.meas.n else None
                c.place_median(self._log_y)
            self._sync_warmup(c)
        self._place_regions()
        self._refit()

    def _place_regions(self) -> None:
        seen: set[tuple[float, float]] = set()
        for c in self.curves.values():
            rng = c.series.warmup_range
            if rng is None:
                c.region.setVisible(False)
                continue
            span = (rng[0] - 0.5, rng[1] + 0.5)
            c.region.setRegion(span)
            if self.folded(c.series):
                c.region.setVisible(False)
                continue
            # Runs of one config share their warm-up span: shade it once.
            c.region.setVisible(span not in seen)
            seen.add(span)
        if seen and not self._warm_legend_shown:
            self.legend.addItem(self._warm_sample, "warm-up")
            self._warm_legend_shown = True
        elif not seen and self._warm_legend_shown:
            self.legend.removeItem(self._warm_sample)
            self._warm_legend_shown = False

    # -- warm-up calls -----------------------------------------------------------------------
    def folded(self, s: Series) -> bool:
        """Whether ``s``'s warm-up calls are folded away: not asked for, and it has measured calls to show."""
        return not self._show_warmup and s.meas.n > 0

    def warmup_shown(self) -> bool:
        """Whether warm-up calls are drawn ("Show warm-up calls" in the plot's context menu)."""
        return self._show_warmup

    def set_warmup_shown(self, on: bool) -> None:
        """Draw the warm-up calls (shaded, in the range) or fold them away behind the measured ones."""
        on = bool(on)
        if self.warmup_action.isChecked() != on:
            self.warmup_action.setChecked(on)  # re-enters through toggled
            return
        if on == self._show_warmup:
            return
        self._show_warmup = on
        for c in self.curves.values():
            self._sync_warmup(c)
        self._place_regions()
        self.hide_crosshair()
        self.sync_legend()
        self.fit_calls()

    def _sync_warmup(self, c: LatencyCurves) -> None:
        c.warmup_curve.setVisible(not self.folded(c.series))

    # -- the range ---------------------------------------------------------------------------
    def fit_calls(self) -> None:
        """Range over the calls shown (see robust_range) from now on, also as calls arrive."""
        self._fit = True
        self._refit()

    def fits_calls(self) -> bool:
        """Whether the range follows the calls shown (False once zoomed or panned by hand)."""
        return self._fit

    def _on_range_changed_by_hand(self, *args: object) -> None:
        self._fit = False

    def set_steady_range(self, on: bool) -> None:
        """While ``on`` (a run is live), a range that follows the calls grows in steps and is kept
        while the calls fit it well, so the axes are not redrawn at every refresh; off: fitted again."""
        on = bool(on)
        if on != self._steady:
            self._steady = on
            if not on:
                self._refit()

    def _steady_range(
        self, x: tuple[float, float], y: tuple[float, float]
    ) -> tuple[tuple[float, float], tuple[float, float]]:
        """The range to show for calls spanning ``x`` and ``y`` while it is steady: the one shown
        when they fill it well, else one with room to grow."""
        (vx0, vx1), (vy0, vy1) = self.plot.getPlotItem().getViewBox().viewRange()
        x0, x1 = x
        if not (abs(vx0 - x0) <= 0.5 and x1 <= vx1 and (x1 - x0) >= STEADY_FILL * (vx1 - vx0)):
            vx0, vx1 = x0, x0 + (x1 - x0) * STEADY_GROWTH
        y0, y1 = y
        if not (vy0 <= y0 and y1 <= vy1 and (y1 - y0) >= STEADY_FILL * (vy1 - vy0)):
            room = (y1 - y0) * (STEADY_GROWTH - 1) / 2
            vy0, vy1 = y0 - room, y1 + room
            if not self._log_y and y0 >= 0:
                vy0 = max(vy0, 0.0)
        return (vx0, vx1), (vy0, vy1)

    def _refit(self) -> None:
        """Set the range to the calls shown, while it follows them; the marks follow either way."""
        if not self._fit:
            self._mark_beyond()
            return
        extents = [
            e for c in self.curves.values() if (e := c.calls_extent(self.folded(c.series), self._log_y)) is not None
        ]
        if not extents:
            self._mark_beyond()
            return
        x0 = min(e[0] for e in extents) - 0.5
        x1 = max(e[1] for e in extents) + 0.5
        lo = min(e[2] for e in extents)
        hi = max(e[3] for e in extents)
        span = hi - lo
        if span <= 0:
            span = 0.1 if self._log_y else (abs(hi) * 0.1 or 1.0)
        y0, y1 = lo - RANGE_PAD * span, hi + RANGE_PAD * span
        choice = linear_range(
            [q for c in self.curves.values() if (q := c.calls_quantiles(self.folded(c.series)))],
            RANGE_PAD,
        )
        self._too_wide = choice is not None and choice.too_wide
        # the measured calls decide (a slow warm-up shown beside them is a known level of its own)
        measured = linear_range([q for c in self.curves.values() if (q := c.calls_quantiles(True))], RANGE_PAD)
        self._auto_log = measured is not None and measured.wants_log and self._log_chosen is None
        if self._auto_log and not self._log_y:
            self._apply_log(True)  # calls in levels far apart: the log axis shows them (refits)
            return
        if not self._log_y and choice is not None:
            y0, y1 = choice.bottom, choice.top
        x_range, y_range = (x0, x1 + 0.01 * (x1 - x0)), (y0, y1)
        if self._steady:
            x_range, y_range = self._steady_range(x_range, y_range)
        vb = self.plot.getPlotItem().getViewBox()
        self._refitting = True
        try:
            vb.setRange(xRange=x_range, yRange=y_range, padding=0)
        finally:
            self._refitting = False
        self._mark_beyond()

    def _on_range_changed(self, *args: object) -> None:
        if not self._refitting:
            self._mark_beyond()

    def _mark_beyond(self) -> None:
        """Mark each call drawn beyond the y range at the edge it lies past; count them in the note."""
        vb = self.plot.getPlotItem().getViewBox()
        (x0, x1), (y0, y1) = vb.viewRange()
        exact = True
        n_above = n_below = 0
        for c in self.curves.values():
            above, below, whole = c.mark_beyond(
                (x0, x1), (y0, y1), self.folded(c.series), self._log_y, columns=int(vb.width())
            )
            n_above, n_below, exact = n_above + above, n_below + below, exact and whole
        self._beyond_exact = exact
        self.beyond = (n_above, n_below)
        self._set_note(y0, y1)

    def _ms(self, y: float) -> float:
        return 10 ** y if self._log_y else y

    def _set_note(self, y0: float = 0.0, y1: float = 0.0) -> None:
        parts = []
        folded = sum(c.series.warm.count for c in self.curves.values() if self.folded(c.series))
        if folded:
            parts.append(f"{plural(folded, 'warm-up call')} folded away")
        above, below = self.beyond
        some = "" if self._beyond_exact else "at least "
        if above:
            parts.append(f"▲ {some}{plural(above, 'call')} above {plain_number(self._ms(y1))} ms")
        if below:
            parts.append(f"▼ {some}{plural(below, 'call')} below {plain_number(self._ms(y0))} ms")
        if self._too_wide and not self._log_y:
            parts.append("calls spread too wide for a linear axis: Log scale shows every call")
        elif self._auto_log and self._log_y:
            parts.append("log scale: the calls lie in levels too far apart for a linear axis")
        text = " · ".join(parts)
        self.note.setText(text)
        self.note.setVisible(bool(text))
        self._place_note()
        self.caption.setText(LATENCY_CAPTION_FOLDED if folded or not self._show_warmup else LATENCY_CAPTION)

    def note_text(self) -> str:
        """The note inside the plot: warm-up calls folded away, calls beyond the range ("" when none)."""
        return self.note.toPlainText() if self.note.isVisible() else ""

    def _place_note(self, *args: object) -> None:
        vb = self.plot.getPlotItem().getViewBox()
        self.note.setPos(2.0, vb.height() - 2.0)

    # -- log scale -----------------------------------------------------------------------
    def set_log_scale(self, on: bool | None) -> None:
        """Switch the latency axis between linear and logarithmic, as the user chose; None: chosen
        by the calls (logarithmic where no linear range shows them, see robust_range)."""
        self._log_chosen = None if on is None else bool(on)
        if on is None:
            self._refit()
            return
        self._apply_log(bool(on))

    def log_scale(self) -> bool:
        """Whether the latency axis is logarithmic now (chosen, or by the calls)."""
        return self._log_y

    def _apply_log(self, on: bool) -> None:
        if self.log_scale_checkbox.isChecked() != on:
            self.log_scale_checkbox.blockSignals(True)
            self.log_scale_checkbox.setChecked(on)
            self.log_scale_checkbox.blockSignals(False)
        if on == self._log_y:
            return
        self._log_y = on
        self.plot.getPlotItem().setLogMode(x=False, y=on)
        for c in self.curves.values():
            c.apply_log(self._log_y)
            c.place_median(self._log_y)
        self.hide_crosshair()
        self._refit()

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
            # warm-up calls folded away are not snapped to
            b = c.series.meas if self.folded(c.series) else c.series.all
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
        b = s.meas if self.folded(s) else s.all
        x, y = float(b.x[j]), float(b.y[j])
        phase = " (warm-up)" if b is s.all and s.all.flag[j] else ""
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
        "wide pale line = median of measured calls · dotted = a new round · shaded = warm-up (not in the statistics; "
        "folded away unless shown) · ▲▼ = calls beyond the range (0 to a high quantile of the calls shown) · one colour per variant",
    ),
))
