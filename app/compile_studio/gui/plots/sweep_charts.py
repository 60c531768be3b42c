"""The sweep view's two charts, made when first needed: most windows never show a sweep."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QVBoxLayout, QWidget

from .sweep_plot import ShapeSweepPlot, SweepPlot


class SweepCharts(QWidget):
    """A sweep's chart and a shape sweep's (shown instead of it), each made on first use.

    Building both costs about a third of the main window's start; the empty
    sweep chart appears when this widget is first shown.
    """

    def __init__(self, on_point: Callable[[Any], object], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._on_point = on_point
        self._plot: SweepPlot | None = None
        self._shape_plot: ShapeSweepPlot | None = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)

    @property
    def plot(self) -> SweepPlot:
        """The sweep's chart."""
        if self._plot is None:
            self._plot = SweepPlot()
            self._plot.point_activated.connect(self._on_point)
            self._plot.set_record(None)
            self._layout.insertWidget(0, self._plot, 1)
        return self._plot

    @property
    def shape_plot(self) -> ShapeSweepPlot:
        """A shape sweep's chart (hidden until one is shown)."""
        if self._shape_plot is None:
            self._shape_plot = ShapeSweepPlot()
            self._shape_plot.hide()
            self._layout.addWidget(self._shape_plot, 1)
        return self._shape_plot

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's name
        if self._shape_plot is None or self._shape_plot.isHidden():
            self.plot.show()
        super().showEvent(event)
