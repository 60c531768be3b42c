"""The history: a click shows a run; its context menu; newest first, opened runs by date."""

from __future__ import annotations

from datetime import datetime

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QFileDialog

from compile_studio.gui.history_panel import CHECK_COLUMN, COLUMNS
from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.paths import runs_dir
from compile_studio.results import RunStore
from test_daily_cli import record


@pytest.fixture
def window(qtbot):
    w = MainWindow(probe=False)
    qtbot.addWidget(w)
    w.show()
    return w


@pytest.fixture
def runs(tmp_path):
    """Two runs of the store (Dec 1 and Dec 3) and one saved elsewhere (Dec 2)."""
    store = RunStore(runs_dir())
    old = record(store, datetime(2026, 12, 1, 9), label="old", variants=("eager", "default"))
    new = record(store, datetime(2026, 12, 3, 9), label="new", variants=("eager", "aot_eager"), base=4.0)
    elsewhere = record(RunStore(tmp_path / "elsewhere"), datetime(2026, 12, 2, 9), label="outside")
    return old, new, elsewhere


def entry_named(window: MainWindow, label: str):
    return next(e for e in window.history.entries() if e.run is not None and e.run.label == label)


def menu_action(window: MainWindow, entry, text: str):
    menu = window.history.menu_for(entry)
    found = {a.text(): a for a in menu.actions() if a.text()}
    assert text in found, list(found)
    return found[text]


def test_runs_are_listed_newest_first_with_opened_ones_by_date(window, runs):
    old, new, elsewhere = runs
    window.history.refresh()
    window.history.open_run(elsewhere)
    labels = [e.run.label for e in window.history.entries()]
    assert labels == ["new", "outside", "old"]


def test_a_click_shows_that_run(qtbot, window, runs):
    window.history.refresh()
    entry = entry_named(window, "old")
    item = window.history.item_for(entry)
    tree = window.history.tree
    rect = tree.visualItemRect(item)
    x = tree.header().sectionPosition(COLUMNS.index("model")) + 60  # past the tick box
    qtbot.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, rect.center().y()))
    assert window.current_run is entry.run
    assert [r.row.name for r in window.table_model.rows()] == ["eager", "default"]
    assert set(window.plots.series_keys()) == {f"{entry.run.run_id}/eager", f"{entry.run.run_id}/default"}


def test_ticking_a_run_overlays_it_without_replacing_the_shown_one(window, runs):
    window.history.refresh()
    shown, other = entry_named(window, "old"), entry_named(window, "new")
    window.show_run(shown.run)
    item = window.history.item_for(other)
    item.setCheckState(CHECK_COLUMN, Qt.CheckState.Checked)
    window.history.tree.itemClicked.emit(item, CHECK_COLUMN)
    assert window.current_run is shown.run
    assert f"{other.run.run_id}/aot_eager" in window.plots.series_keys()
    assert f"{shown.run.run_id}/default" in window.plots.series_keys()


def test_context_menu_show_alone_overlay_and_load_config(window, runs):
    window.history.refresh()
    old, new = entry_named(window, "old"), entry_named(window, "new")
    menu_action(window, old, "Overlay").trigger()
    assert window.history.is_checked(old)
    assert menu_action(window, old, "Remove overlay") is not None
    menu_action(window, new, "Show alone").trigger()
    assert window.current_run is new.run
    assert window.history.checked_runs() == []
    assert {k.split("/")[0] for k in window.plots.series_keys()} == {new.run.run_id}

    menu_action(window, old, "Load its configuration").trigger()
    loaded = window.config_panel.config()
    assert loaded.label == "old" and loaded.variants == ["eager", "default"]
    assert loaded.layers == "8,8" and loaded.batch_size == 2


def test_context_menu_open_folder_export_and_delete(window, runs, tmp_path, monkeypatch):
    window.history.refresh()
    old = entry_named(window, "old")
    opened = []
    window.history.open_folder = lambda path: opened.append(path) or True
    menu_action(window, old, "Open folder").trigger()
    assert opened == [old.path]

    out = tmp_path / "export"
    out.mkdir()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(out))
    menu_action(window, old, "Export…").trigger()
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{old.run.run_id}_{n}" for n in ("run.json", "samples.csv", "summary.csv")
    )

    window.history.confirm_delete = lambda parent, text: True
    menu_action(window, old, "Delete…").trigger()
    assert not old.path.exists()
    assert [e.run.label for e in window.history.entries()] == ["new"]


def test_a_damaged_folder_offers_only_what_it_can(window, runs):
    (runs_dir() / "20261204-090000_broken").mkdir()
    (runs_dir() / "20261204-090000_broken" / "run.json").write_text("{")
    window.history.refresh()
    damaged = next(e for e in window.history.entries() if e.damaged)
    menu = window.history.menu_for(damaged)
    enabled = {a.text(): a.isEnabled() for a in menu.actions() if a.text()}
    assert enabled["Show"] is False and enabled["Load its configuration"] is False
    assert enabled["Open folder"] is True and enabled["Delete…"] is True
