"""Try it in the window (a real run, real widgets, offscreen): the "What to try" list heads the
Why tab (seen without scrolling), its result column is whole, and while a comparison runs the
status bar says what it is doing, not the last run's "done"."""

from __future__ import annotations

import threading

from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import QApplication

from compile_studio.core.config import BenchmarkConfig
from support.gui_helpers import RUN_TIMEOUT_MS, open_window, run_and_wait
from test_advice_try import factory_of


def test_try_it_heads_the_why_tab_and_the_status_bar_follows_the_comparison(qtbot, tiny_config):
    window = open_window(qtbot)
    window.resize(1280, 760)
    qtbot.waitExposed(window)
    run = run_and_wait(qtbot, window, BenchmarkConfig(**{**tiny_config, "rounds": 3}))
    assert run.status == "complete", run.message
    view = window.why_view
    window.bottom_tabs.setCurrentWidget(view)
    qtbot.waitUntil(lambda: view.try_table.rowCount() > 0, timeout=10_000)
    QApplication.processEvents()

    # first in the tab: above the evidence, seen with the tab scrolled to its top
    table = view.try_table
    assert table.mapTo(view._content, QPoint(0, 0)).y() < view.evidence.mapTo(view._content, QPoint(0, 0)).y()
    assert view.scroll_area.verticalScrollBar().value() == 0
    port = view.scroll_area.viewport()
    top = table.mapTo(port, QPoint(0, 0)).y()
    assert 0 <= top < port.height() - 20 and not table.visibleRegion().isEmpty()
    assert view.try_button.isVisible() and not view.try_button.visibleRegion().isEmpty()

    # each result whole: inside the table's width, its wrapped text within its row
    inner = table.viewport().width()
    for row in range(table.rowCount()):
        item = table.item(row, 3)
        rect = table.visualItemRect(item)
        assert rect.right() <= inner, (rect, inner)
        need = table.fontMetrics().boundingRect(
            QRect(0, 0, rect.width() - 8, 10_000), int(Qt.TextFlag.TextWordWrap), item.text()
        ).height()
        assert need <= rect.height(), (item.text(), need, rect.height())

    # a comparison going: the status bar says so, not "done"
    assert window.phase_label.text() == "done"
    release = threading.Event()
    view.trials.consent.ask = lambda refs, where: True
    view.trials.session_factory = factory_of(ms=lambda c, n: 1.0, during=lambda session: release.wait(30))
    tryable = next(r for r in range(table.rowCount()) if table.item(r, 2).text().startswith("config: "))
    table.selectRow(tryable)
    view.try_button.click()
    label = window.trial_status_label
    qtbot.waitUntil(lambda: label.isVisible() and label.text().startswith("Trying "), timeout=10_000)
    assert not window.phase_label.isVisible()
    shown = [w.text() for w in window.statusBar().findChildren(type(label)) if w.isVisible()]
    assert "done" not in shown, shown
    release.set()
    qtbot.waitUntil(lambda: view.trials.trial_thread is None, timeout=RUN_TIMEOUT_MS)
    assert not label.isVisible() and window.phase_label.isVisible()
