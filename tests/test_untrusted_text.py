"""Text from run files shows as typed in the window: never as markup."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from compile_studio.gui.plots import PlotPanel

MARKUP = "<span style='font-size:60pt;color:red'>99x SPEEDUP</span> bs<64"


def test_legend_entries_are_plain_text(qtbot):
    panel = PlotPanel()
    qtbot.addWidget(panel)
    panel.add_series("run/eager", MARKUP)
    panel.append("run/eager", np.arange(3.0), np.array([1.0, 1.1, 0.9]), "measure")
    panel.refresh()
    legend = panel.latency.plot.getPlotItem().legend
    texts = [label.text for _, label in legend.items]
    assert texts and all("&lt;span" in t and "<span" not in t for t in texts)
    assert any("bs&lt;64" in t for t in texts)


def test_the_error_banner_shows_messages_as_typed(qtbot):
    from compile_studio.gui.main_window import MainWindow

    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.show_error(MARKUP)
    assert window.error_label.textFormat() == Qt.TextFormat.PlainText
    assert window.error_label.text() == MARKUP
