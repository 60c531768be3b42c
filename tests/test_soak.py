"""Soak test for the PySide6/pyqtgraph pair: thousands of repaints must not leak None.

PySide6 6.12.0 dropped one reference to None on every Python override of a Qt
virtual that returned None (pyqtgraph's ``paint()``, a model's ``data()``); after
a few thousand repaints None's reference count reached zero and the process
died. Both kinds of override are exercised here and None's count is read
before and after: 600 repaints make over 6,000 ``data()`` calls that return
None, so that bug would move the count twenty times past the slack allowed.
"""

from __future__ import annotations

import gc
import sys
import time

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QEvent, QModelIndex, QObject, Qt
from PySide6.QtWidgets import QTableView

from compile_studio.gui.plots import PlotPanel
from support.gui_helpers import series_data

REPAINTS = 600
#: None's count moves a little with ordinary allocation; the bug moves it by thousands.
NONE_REFCOUNT_SLACK = 300


class SparseModel(QAbstractTableModel):
    """A small table whose data() answers only DisplayRole and returns None otherwise."""

    def __init__(self, rows: int = 6, cols: int = 4) -> None:
        super().__init__()
        self._rows, self._cols = rows, cols
        self.calls = 0
        self.tick = 0

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else self._rows

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else self._cols

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        self.calls += 1
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{index.row()}·{index.column()}·{self.tick}"
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if role == Qt.ItemDataRole.DisplayRole:
            return f"h{section}"
        return None


class PaintCounter(QObject):
    """Counts Paint events reaching the watched widget."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.Paint:
            self.count += 1
        return False


def test_thousands_of_repaints_keep_none_alive(qtbot, qapp):
    panel = PlotPanel()
    qtbot.addWidget(panel)
    panel.resize(420, 260)
    panel.add_series("eager", "eager")
    panel.add_series("default", "default")
    model = SparseModel()
    table = QTableView()
    qtbot.addWidget(table)
    table.setModel(model)
    table.resize(360, 200)
    panel.show()
    table.show()
    qtbot.waitExposed(panel)
    qtbot.waitExposed(table)

    plot_paints = PaintCounter()
    table_paints = PaintCounter()
    panel.latency_plot.viewport().installEventFilter(plot_paints)
    table.viewport().installEventFilter(table_paints)

    rng = np.random.default_rng(7)
    for _ in range(50):  # settle caches and lazily created objects before the baseline
        panel.latency_plot.viewport().repaint()
        table.viewport().repaint()
    qapp.processEvents()
    plot_paints.count = table_paints.count = 0
    calls_before = model.calls
    # both readings after a full collection: garbage from earlier tests (a window collects on a
    # timer, gui/gc_guard.py) freed during the loop would look like a leak of None
    gc.collect()
    none_before = sys.getrefcount(None)

    t0 = time.perf_counter()
    for i in range(REPAINTS):
        it = np.arange(i * 4, i * 4 + 4)
        panel.append("eager", it, rng.gamma(2.0, 0.2, 4) + 1.0, "warmup" if i < 10 else "measure")
        panel.append("default", it, rng.gamma(2.0, 0.1, 4) + 0.6, "warmup" if i < 10 else "measure")
        panel.refresh()
        panel.latency_plot.viewport().repaint()
        model.tick = i
        table.viewport().repaint()
        if i % 100 == 0:
            qapp.processEvents()
    qapp.processEvents()
    elapsed = time.perf_counter() - t0
    gc.collect()
    none_after = sys.getrefcount(None)

    print(
        f"\n{plot_paints.count} plot and {table_paints.count} table repaints, "
        f"{model.calls - calls_before} data() calls in {elapsed:.1f} s; "
        f"None refcount {none_before} -> {none_after}"
    )
    assert plot_paints.count >= REPAINTS
    assert table_paints.count >= REPAINTS
    assert model.calls - calls_before > REPAINTS * 10  # data() really was called, mostly → None
    assert len(series_data(panel, "eager")[0]) == REPAINTS * 4
    assert none_before - none_after < NONE_REFCOUNT_SLACK, "None's refcount is leaking"
