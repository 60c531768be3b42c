"""The window over a run store full of damaged folders: it starts, lists, overlays and shows."""

from __future__ import annotations

import pytest

from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.paths import runs_dir
from support.untrusted_helpers import DAMAGES, saved_run


@pytest.fixture
def store_with_every_damage():
    root = runs_dir()
    root.mkdir(parents=True, exist_ok=True)
    good = saved_run(root, "good")
    for name, damage in DAMAGES.items():
        damage(saved_run(root, name))
    return root, good


def test_every_damaged_folder_is_listed_and_the_window_still_works(qtbot, store_with_every_damage):
    root, good = store_with_every_damage
    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.show()
    entries = window.history.entries()
    assert len(entries) == len(DAMAGES) + 1
    # each damaged folder is either readable with its problems named, or listed as damaged
    for entry in entries:
        assert entry.damaged or entry.run is not None
    assert any(e.damaged for e in entries)
    # tick every readable run: overlays and the table build, the good run is in them
    readable = [e for e in entries if e.run is not None]
    for entry in readable:
        window.history.set_checked(entry, True)
    qtbot.wait(50)
    assert len(window.history.checked_runs()) == len(readable)
    good_entry = next(e for e in entries if e.path == good)
    assert window.show_run(good_entry.run, alone=True)
    assert window.table_view.model().rowCount() > 0


def test_a_run_read_with_problems_says_so_when_shown(qtbot, store_with_every_damage):
    root, _ = store_with_every_damage
    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.show()
    partial = next(e for e in window.history.entries() if "ff_byte" in e.path.name)
    assert partial.run is not None and partial.run.load_problems
    assert window.show_run(partial.run, alone=True)
    assert "read with problems: samples.csv: 1 unreadable rows skipped" in window.statusBar().currentMessage()
    assert "was read with problems" in window.log.text()


def test_the_run_in_progress_cannot_be_deleted_from_the_history(qtbot, tiny_config):
    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.gui.history_panel import HistoryEntry

    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.show()
    window.history.confirm_delete = lambda *_: True
    config = BenchmarkConfig.from_dict({**tiny_config, "variants": ["eager"], "iterations": 200_000, "rounds": 1})
    window.start_run(config)
    qtbot.waitUntil(lambda: window.live.run_job is not None and window.live.run_job.folder is not None, timeout=30_000)
    folder = window.live.run_job.folder
    entry = HistoryEntry(folder, None)
    messages: list[str] = []
    window.history.message.connect(messages.append)
    assert window.history.delete_entry(entry) is False
    assert folder.is_dir()
    assert messages and "is the run in progress: stop it before deleting it" in messages[-1]
    menu = window.history.menu_for(entry)
    delete = next(a for a in menu.actions() if a.text() == "Delete…")
    assert not delete.isEnabled()
    with qtbot.waitSignal(window.run_finished, timeout=60_000):
        window.stop_run()
    assert window.history.delete_entry(HistoryEntry(folder, None)) is True
    assert not folder.exists()
