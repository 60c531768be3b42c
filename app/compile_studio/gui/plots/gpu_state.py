"""The "GPU" tab: SM clock, temperature and power over time, with where each variant starts."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QStackedWidget, QVBoxLayout, QWidget

from .buffers import GPU_QUANTITIES, GpuReadings
from .hover import hover_label, track_mouse
from .style import (
    GPU_RUN_COLORS,
    MUTED,
    CaptionedLayoutView,
    hover_pen,
    make_legend,
    style_plot_item,
    with_alpha,
)
from .tab import PlotTab, TabSpec, register_tab

#: Shown on the GPU tab while no run shown has GPU readings.
NO_GPU_READINGS = (
    "No GPU readings: they are recorded on CUDA runs with nvidia-ml-py installed where the worker "
    "runs: pip install nvidia-ml-py (the nvml extra: pip install -e '.[nvml]' in a source "
    "checkout, pip install 'compile-studio[nvml]' with the wheel)."
)
#: A run with more variant segments than this (interleaved blocks) gets its boundary
#: lines and bands but no name labels, which would overlap; the hover text names them.
GPU_MAX_LABELLED_SEGMENTS = 16
#: Width (px) of the GPU plots' left axes, equal so that the stacked plots line up.
GPU_AXIS_WIDTH = 62
_UNITS = ("MHz", "°C", "W")


class GpuRun:
    """The readings of one run and the curves and markers drawn from them."""

    def __init__(self, key: str, label: str, color: QColor) -> None:
        self.key = key
        self.label = label
        self.color = color
        self.readings = GpuReadings()
        self.dirty = False
        self.curves: dict[str, pg.PlotDataItem] = {}
        for q, _ in GPU_QUANTITIES:
            # Named only in the top plot: the legend lists each run once.
            self.curves[q] = pg.PlotDataItem(
                name=label if q == GPU_QUANTITIES[0][0] else None,
                pen=pg.mkPen(color, width=1),
                connect="finite",  # a missing reading (None → NaN) leaves a gap
                antialias=True,
            )
        #: marker items per plot (rebuilt when boundaries change) and the top plot's lines
        self.markers: list[tuple[pg.PlotItem, pg.GraphicsObject]] = []
        self.lines: list[tuple[pg.InfiniteLine, str]] = []
        self.last_bands: list[pg.LinearRegionItem] = []
        self.labels: set[tuple[float, str]] = set()  # (t, variant) named by a label
        self.drawn: tuple[int, bool] | None = None  # (boundaries drawn, shaded)


class _GpuViewBox(pg.ViewBox):
    """A view box padded on y (curves clear the frame) but barely on time, the shared x axis."""

    def suggestPadding(self, axis: int) -> float:  # noqa: N802 (pyqtgraph API)
        return 0.005 if axis == 0 else super().suggestPadding(axis)


class GpuStateTab(PlotTab):
    """Three stacked plots sharing the time axis, one curve per run; a note while there are none.

    ``variant_color(run_key, variant)`` gives the latency-curve colour of a
    variant (None when it has no curve): a lone run's variants are shaded in it.
    """

    def __init__(
        self, variant_color: Callable[[str, str], QColor | None], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._variant_color_of = variant_color
        self.runs: dict[str, GpuRun] = {}
        self._has_data = False
        #: the three plots in one view (one export holds them all, under its caption)
        self.plot = CaptionedLayoutView()
        self.plot.ci.setSpacing(4)
        self.plots: dict[str, pg.PlotItem] = {}
        last = GPU_QUANTITIES[-1][0]
        for row, (q, axis_label) in enumerate(GPU_QUANTITIES):
            plot = self.plot.addPlot(row=row + 1, col=0, viewBox=_GpuViewBox())
            style_plot_item(plot, axis_label, "seconds since GPU sampling started" if q == last else None)
            plot.getAxis("left").setWidth(GPU_AXIS_WIDTH)
            plot.setClipToView(True)
            plot.getViewBox().setDefaultPadding(0.1)
            if q != last:
                plot.getAxis("bottom").setStyle(showValues=False)
                plot.getAxis("bottom").setHeight(6)
            if self.plots:
                plot.setXLink(self.top_plot)
            self.plots[q] = plot
        self.legend = make_legend(self.top_plot)
        self.legend.setVisible(False)

        self._vlines: list[pg.InfiniteLine] = []
        for plot in self.plots.values():
            line = pg.InfiniteLine(angle=90, movable=False, pen=hover_pen())
            line.setVisible(False)
            line.setZValue(100)
            line.exclude_from_export = True  # see gui.image_export
            plot.addItem(line, ignoreBounds=True)
            self._vlines.append(line)
        self.hover_label = hover_label(anchor=(0, 0), alpha=230)
        self.hover_label.setZValue(101)
        self.top_plot.addItem(self.hover_label, ignoreBounds=True)
        self._mouse_proxy = track_mouse(self.plot, self._on_mouse_moved, self.hide_hover, self)

        self.note = QLabel(NO_GPU_READINGS)
        self.note.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.note.setWordWrap(True)
        self.note.setMargin(24)
        self.note.setStyleSheet(f"color: {MUTED}; background: white;")
        self.note.setAutoFillBackground(True)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.plot)
        self.stack.addWidget(self.note)
        self.stack.setCurrentWidget(self.note)

        self._hint = QLabel("Dashed lines: where a variant starts · hover for the reading at a time")
        self._hint.setStyleSheet(f"color: {MUTED};")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        bar = QHBoxLayout()
        bar.setContentsMargins(6, 2, 6, 0)
        bar.addWidget(self._hint)
        bar.addStretch(1)
        lay.addLayout(bar)
        lay.addWidget(self.stack, 1)
        self._hint.setVisible(False)

    @property
    def top_plot(self) -> pg.PlotItem:
        return self.plots[GPU_QUANTITIES[0][0]]

    def current_plot(self) -> QWidget:
        """The three plots, or the note shown instead of them."""
        shown = self.stack.currentWidget()
        return shown if shown is not None else self.note

    # -- data ----------------------------------------------------------------------------
    def append(self, run_key: str, label: str, rows: list[dict]) -> None:
        """Buffer readings of run ``run_key`` (a new key gets a colour and ``label``); draws nothing."""
        r = self.runs.get(run_key)
        if r is None:
            color = QColor(GPU_RUN_COLORS[len(self.runs) % len(GPU_RUN_COLORS)])
            r = GpuRun(run_key, label, color)
            self.runs[run_key] = r
            for q, curve in r.curves.items():
                self.plots[q].addItem(curve)
        r.readings.append(list(rows))
        if rows:
            r.dirty = True

    def clear(self) -> None:
        for r in self.runs.values():
            for q, curve in r.curves.items():
                self.plots[q].removeItem(curve)
            self._remove_markers(r)
        self.runs.clear()
        self.legend.clear()
        self.legend.setVisible(False)
        self.hide_hover()
        self._show_data(False)

    def _show_data(self, on: bool) -> None:
        self._has_data = on
        self.stack.setCurrentWidget(self.plot if on else self.note)
        self._hint.setVisible(on)

    # -- drawing -------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Draw the readings that came since the last call (nothing when none did)."""
        changed = False
        for r in self.runs.values():
            if not r.dirty:
                continue
            r.dirty = False
            changed = True
            t = r.readings.column("t_s")
            for q, curve in r.curves.items():
                curve.setClipToView(r.readings.monotonic)
                curve.setData(t, r.readings.column(q))
        if not changed:
            return
        with_data = [r for r in self.runs.values() if r.readings.n]
        shade = len(with_data) == 1
        for r in with_data:
            if r.drawn != (len(r.readings.boundaries), shade):
                self._draw_markers(r, shade)
            elif r.last_bands:
                segs = r.readings.segments()
                for band in r.last_bands:
                    band.setRegion(segs[-1][:2])
        self.legend.setVisible(len(with_data) > 1)
        if with_data:
            self.legend.layout.activate()
        if bool(with_data) != self._has_data:
            self._show_data(bool(with_data))

    def _remove_markers(self, r: GpuRun) -> None:
        for plot, item in r.markers:
            plot.removeItem(item)
        r.markers = []
        r.lines = []
        r.last_bands = []
        r.labels = set()
        r.drawn = None

    def _draw_markers(self, r: GpuRun, shade: bool) -> None:
        """Dashed lines (and, for a lone run, bands in the variants' latency colours)."""
        self._remove_markers(r)
        segs = r.readings.segments()
        labelled = len(segs) <= GPU_MAX_LABELLED_SEGMENTS
        # A boundary another run already names (runs of one config start alike) is not
        # named twice on top of itself.
        named = {pair for other in self.runs.values() if other is not r for pair in other.labels}
        top_name = GPU_QUANTITIES[0][0]
        line_pen = pg.mkPen(with_alpha(r.color, 170), width=1, style=Qt.PenStyle.DashLine)
        for i, (t0, t1, tag) in enumerate(segs):
            variant_color = self._variant_color(r.key, tag, i)
            for q, plot in self.plots.items():
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
        r.drawn = (len(r.readings.boundaries), shade)

    def _variant_color(self, run_key: str, variant: str, index: int) -> QColor:
        """The latency-curve colour of (run, variant), or a grey alternating by segment."""
        color = self._variant_color_of(run_key, variant)
        if color is not None:
            return color
        return QColor(MUTED) if index % 2 == 0 else QColor("#BBBBBB")

    # -- hover -------------------------------------------------------------------------------------
    def _on_mouse_moved(self, args: tuple) -> None:
        pos = args[0]
        for plot in self.plots.values():
            vb = plot.getViewBox()
            if vb.sceneBoundingRect().contains(pos):
                self.hover_at(vb.mapSceneToView(pos).x())
                return
        self.hide_hover()

    def hover_at(self, t_s: float) -> str | None:
        """Mark the reading nearest ``t_s`` of each run; its label text (None: no readings)."""
        lines = []
        snap: float | None = None
        for r in self.runs.values():
            readings = r.readings
            if readings.n == 0:
                continue
            t = readings.column("t_s")
            dist = np.abs(t - t_s)
            if not np.isfinite(dist).any():
                continue
            j = int(np.nanargmin(dist))
            if snap is None:
                snap = float(t[j])
            values = [readings.column(q)[j] for q, _ in GPU_QUANTITIES]
            text = " · ".join(
                "–" if not math.isfinite(v) else f"{v:.0f} {u}" for v, u in zip(values, _UNITS)
            )
            it = readings.column("iteration")[j]
            where = readings.variants[j] or "before the first call"
            if math.isfinite(it):
                where += f", iteration {it:.0f}"
            head = f"{r.label}: " if len(self.runs) > 1 else ""
            lines.append(f"{head}t {t[j]:.1f} s · {where}\n{text}")
        if snap is None:
            self.hide_hover()
            return None
        label_text = "\n".join(lines)
        for line in self._vlines:
            line.setPos(snap)
            line.setVisible(True)
        (x0, x1), (y0, _) = self.top_plot.getViewBox().viewRange()
        self.hover_label.setText(label_text)
        self.hover_label.setAnchor((1.0 if snap > (x0 + x1) / 2 else 0.0, 1.0))
        self.hover_label.setPos(QPointF(snap, y0))
        self.hover_label.setVisible(True)
        return label_text

    def hide_hover(self) -> None:
        """Hide the hover line and label."""
        for line in self._vlines:
            line.setVisible(False)
        self.hover_label.setVisible(False)

    def tick(self) -> None:
        self.refresh()

    def hidden(self) -> None:
        self.hide_hover()


register_tab(TabSpec(
    key="gpu", title="GPU", order=40,
    make=lambda panel: GpuStateTab(lambda run_key, variant: panel.color_of(f"{run_key}/{variant}")),
    tooltip="SM clock, temperature and power read from the GPU (NVML) during the run",
    caption=(
        "GPU state during the run",
        "dashed = where a variant starts · shaded = its span (one run shown) · "
        "SM clock, temperature and power read through NVML",
    ),
))
