"""A new plot tab is one class and one registration: the panel, the export and the caption follow."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtWidgets import QVBoxLayout

from compile_studio.gui.plots import PlotPanel
from compile_studio.gui.plots.tab import (
    PlotTab,
    TabSpec,
    register_tab,
    registered_tabs,
    unregister_tab,
)
from support.gui_helpers import open_window


class CallCountTab(PlotTab):
    """A bar per series: how many calls it has (made up for this test)."""

    def __init__(self) -> None:
        super().__init__()
        self.plot = pg.PlotWidget(background="w")
        layout = QVBoxLayout(self)
        layout.addWidget(self.plot)
        self.added: list[str] = []
        self.redrawn: list[str] = []
        self.shown_count = 0
        self.cleared = 0

    def add(self, series, run_style: int = 0) -> None:
        self.added.append(series.key)

    def redraw(self, changed) -> None:
        self.redrawn += [s.key for s in changed]

    def shown(self) -> None:
        self.shown_count += 1

    def clear(self) -> None:
        self.cleared += 1


@pytest.fixture
def call_count_tab():
    spec = TabSpec(
        key="calls", title="Calls", make=lambda panel: CallCountTab(), order=25,
        caption=("Calls per variant", "bar = calls measured"), tooltip="how many calls each variant made",
    )
    register_tab(spec)
    yield spec
    unregister_tab("calls")


def test_a_registered_tab_is_shown_in_its_place_and_fed_every_series(qtbot, call_count_tab):
    panel = PlotPanel()
    qtbot.addWidget(panel)
    titles = [panel.tabText(i) for i in range(panel.count())]
    assert titles == ["Latency", "Distribution", "Calls", "Summary", "GPU"]
    assert panel.tabToolTip(2) == "how many calls each variant made"
    tab = panel.tabs["calls"]
    panel.add_series("r1/eager", "eager")
    panel.append("r1/eager", np.arange(4.0), np.ones(4), "measure")
    panel.refresh()
    assert tab.added == ["r1/eager"] and tab.redrawn == ["r1/eager"]
    panel.setCurrentWidget(tab)
    assert tab.shown_count == 1
    assert panel.current_plot() is tab.plot and panel.current_spec().caption[0] == "Calls per variant"
    panel.clear()
    assert tab.cleared == 1


def test_the_window_exports_a_registered_tab_with_its_caption(qtbot, call_count_tab, tmp_path):
    window = open_window(qtbot)
    tab = window.plots.tabs["calls"]
    window.plots.setCurrentWidget(tab)
    lines = window.exports.plot_caption_lines()
    assert lines[0].startswith("Calls per variant")
    assert "bar = calls measured" in lines[-1]


def test_unregistered_tabs_are_gone_from_new_panels(qtbot):
    assert "calls" not in [spec.key for spec in registered_tabs()]
    panel = PlotPanel()
    qtbot.addWidget(panel)
    assert "calls" not in panel.tabs
