"""The run history: runs from the window and from elsewhere, overlays, open, delete."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.paths import runs_dir
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunStore
from support.gui_helpers import legend_labels, run_and_wait, series_data


def headless_run(config: BenchmarkConfig, label: str):
    """A run made without the window: a RunSession into the store."""
    config = BenchmarkConfig.from_dict({**config.to_dict(), "label": label})
    outcome = RunSession(config, RunStore(runs_dir())).run()
    assert outcome.run.status == "complete", outcome.run.message
    return outcome.run


@pytest.fixture
def window(qtbot):
    w = MainWindow(probe=False)
    qtbot.addWidget(w)
    w.show()
    return w


def test_history_lists_window_and_headless_runs_and_overlays_both(qtbot, window, tiny_config):
    config = BenchmarkConfig(**tiny_config)
    other = headless_run(config, "headless")
    window.history.refresh()
    assert [e.run.run_id for e in window.history.entries()] == [other.run_id]

    mine = run_and_wait(qtbot, window, BenchmarkConfig(**{**tiny_config, "label": "from window"}))
    assert mine.status == "complete"
    entries = window.history.entries()
    assert {e.run.run_id for e in entries} == {mine.run_id, other.run_id}
    tree = window.history.tree
    texts = [[tree.topLevelItem(i).text(c) for c in range(6)] for i in range(tree.topLevelItemCount())]
    for row in texts:
        assert row[4] == "complete"
        assert row[3] == "eager, aot_eager"
        # the best verdict, with the speedup where it is one
        assert re.fullmatch(r"(faster|slower) \d+\.\d\d×|cannot tell|incorrect|failed", row[5]), row[5]
        assert row[2].startswith("cpu")
    assert any("headless" in row[1] for row in texts)
    assert any("from window" in row[1] for row in texts)

    # tick both: both sets of curves are plotted, and the table names the runs
    window.history.set_checked(other.run_id, True)
    window.history.set_checked(mine.run_id, True)
    keys = set(window.plots.series_keys())
    expected = {f"{r.run_id}/{v}" for r in (mine, other) for v in ("eager", "aot_eager")}
    assert keys == expected
    its, ms = series_data(window.plots, f"{other.run_id}/aot_eager")
    np.testing.assert_array_equal(ms, np.asarray(other.variants["aot_eager"].samples.wall_ms))
    labels = " ".join(legend_labels(window.plots))
    assert "headless · eager" in labels and "from window · aot_eager" in labels
    assert window.table_model.headers()[0] == "run"
    run_names = {r.run_name for r in window.table_model.rows()}
    assert run_names == {"headless", "from window"}
    assert len(window.table_model.rows()) == 4
    tsv = window.table_view.copy_all()
    assert tsv.split("\n")[0].startswith("run\tvariant")

    # untick the other run: only this run's curves remain
    window.history.set_checked(other.run_id, False)
    assert set(window.plots.series_keys()) == {f"{mine.run_id}/eager", f"{mine.run_id}/aot_eager"}
    assert "run" not in window.table_model.headers()


def test_delete_asks_first_and_removes_the_folder(qtbot, window, tiny_config):
    run = headless_run(BenchmarkConfig(**tiny_config), "to delete")
    window.history.refresh()
    entry = window.history.entry_for_run(run.run_id)
    folder = entry.path
    assert folder.is_dir()
    asked: list[str] = []

    window.history.confirm_delete = lambda parent, text: asked.append(text) or False
    window.history.select(entry)
    assert window.history.delete_button.isEnabled()
    window.history.delete_button.click()
    assert asked and folder.name in asked[0]
    assert folder.is_dir()

    window.history.confirm_delete = lambda parent, text: True
    window.history.set_checked(run.run_id, True)
    assert window.plots.series_keys()
    window.history.select(window.history.entry_for_run(run.run_id))
    window.history.delete_button.click()
    assert not folder.exists()
    assert window.history.entries() == []
    assert window.plots.series_keys() == []  # the overlay went with it


def test_damaged_runs_are_listed_with_the_reason(qtbot, window):
    bad = runs_dir() / "20240101-000000_broken"
    bad.mkdir(parents=True)
    (bad / "run.json").write_text("{ not json", encoding="utf-8")
    window.history.refresh()
    [entry] = window.history.entries()
    assert entry.damaged
    item = window.history.tree.topLevelItem(0)
    assert item.text(4) == "damaged"
    assert "run.json is damaged" in item.toolTip(0)
    assert "1 damaged" in window.history.count_label.text()


def test_open_a_bare_samples_csv_overlays_it(qtbot, window, tiny_config, tmp_path):
    run = headless_run(BenchmarkConfig(**tiny_config), "elsewhere")
    csv_path = tmp_path / "cli-samples.csv"
    shutil.copy(runs_dir() / run.run_id / "samples.csv", csv_path)

    opened = window.history.open_run(csv_path)
    assert opened is not None
    assert set(opened.variants) == {"eager", "aot_eager"}
    assert f"{opened.run_id}/eager" in window.plots.series_keys()
    external = [e for e in window.history.entries() if e.external]
    assert [e.path for e in external] == [csv_path]

    bad = tmp_path / "empty.csv"
    bad.write_text("", encoding="utf-8")
    assert window.history.open_run(bad) is None
    assert "Cannot open empty.csv" in window.last_error
    assert window.error_banner.isVisible()


def test_export_to_an_unwritable_folder_shows_an_error(qtbot, window, tiny_config, tmp_path):
    run = headless_run(BenchmarkConfig(**tiny_config), "export me")
    window.history.refresh()
    window.history.set_checked(run.run_id, True)
    written = window.exports.export_run_to(tmp_path)
    assert {p.name for p in written} == {
        f"{run.run_id}_samples.csv",
        f"{run.run_id}_summary.csv",
        f"{run.run_id}_run.json",
    }
    assert window.exports.export_run_to(tmp_path / "missing" / "folder") == []
    assert "Cannot export the run" in window.last_error
    assert window.error_banner.isVisible()


def test_screenshot_and_plot_files_and_failures_in_the_window(qtbot, window, tmp_path):
    png = tmp_path / "window.png"
    assert window.exports.save_screenshot(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = tmp_path / "plot.svg"
    assert window.exports.save_plot(svg)
    assert b"<svg" in svg.read_bytes()
    assert window.settings.export_folder() == tmp_path
    assert not window.exports.save_screenshot(tmp_path / "no" / "such" / "folder" / "x.png")
    assert "Cannot save the screenshot" in window.last_error
    assert window.error_banner.isVisible()


def _saved_run(folder_name: str, calls: int) -> None:
    """A complete run folder as a run writes it (run.json, samples.csv), made without a worker."""
    from compile_studio.core.protocol import RunStatus, VariantStatus
    from compile_studio.results.records.run_result import RunResult
    from compile_studio.results.storage.run_files import RunWriter

    config = BenchmarkConfig(layers="8,4", batch_size=1, device="cpu", variants=["eager"], iterations=calls)
    run = RunResult(run_id=folder_name, created="2026-12-07T04:00:00", config=config,
                    environment={"torch": "2.x", "devices": ["cpu"], "device": "cpu"})
    writer = RunWriter(runs_dir() / folder_name, run)
    v = run.variant("eager")
    v.status = VariantStatus.DONE
    wall = [0.01 + 1e-6 * k for k in range(calls)]
    v.samples.extend(0, "measure", wall, None, 0)
    writer.append_samples("eager", 0, "measure", wall, None, 0)
    run.status = RunStatus.COMPLETE
    writer.finish()


def test_the_ticked_runs_are_found_without_reading_the_samples_of_the_others(qtbot, window):
    """After every run the window asks for the ticked runs: only theirs are read from disk, not
    every run's in the history (which froze the window longer the longer the history)."""
    for k in range(4):
        _saved_run(f"2026120{k + 1}-040000_mlp8-4_b1_fp32_cpu_eager", 2_000)
    window.history.refresh()
    entries = window.history.entries()
    assert len(entries) == 4 and not any(e.listed.samples_loaded for e in entries)
    assert window.history.checked_runs() == []
    assert not any(e.listed.samples_loaded for e in entries), "no samples read for runs not ticked"
    window.history.set_checked(entries[2], True)
    [ticked] = window.history.checked_runs()
    assert ticked.run_id == entries[2].listed.run_id and len(ticked.variants["eager"].samples) == 2_000
    assert [e.listed.samples_loaded for e in entries] == [False, False, True, False]
