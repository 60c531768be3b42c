"""Export from the window (CSV + JSON, Markdown report), runs made by the CLI, reopening cut-short runs."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from PySide6.QtGui import QImage

from compile_studio.cli import commands as cli
from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.job_thread import has_finished
from compile_studio.gui.main_window import CLOSED_DURING_RUN, MainWindow
from compile_studio.gui.paths import runs_dir
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunResult, RunStore, load_run, summarize
from compile_studio.results.report.formatting import SUMMARY_HEADERS, summary_cells
from support.environment import TINY
from support.gui_helpers import RUN_TIMEOUT_MS, open_window, run_and_wait, series_data


@pytest.fixture(scope="module")
def saved_run_folder(tmp_path_factory, worker_fork_server) -> Path:
    """The folder of one finished tiny run (a real worker), for the tests that only export a run
    the window shows; the export of a run just finished in the window has a test of its own."""
    from support import worker_zygote

    config = BenchmarkConfig(**{**TINY, "variants": list(TINY["variants"]), "label": "report run"})
    with worker_zygote.forked_workers(worker_fork_server):
        outcome = RunSession(config, RunStore(tmp_path_factory.mktemp("store"))).run()
    assert outcome.run.status == "complete", outcome.run.message
    assert outcome.folder is not None
    return outcome.folder


def show_saved_run(qtbot, folder: Path) -> tuple[MainWindow, RunResult]:
    """A window showing the run saved in ``folder``, and that run."""
    window = open_window(qtbot)
    run = load_run(folder)
    assert window.show_run(run, alone=True)
    return window, run


def table_cells(window: MainWindow) -> list[list[str]]:
    model = window.table_model
    return [[model.cell_text(r, h) for h in SUMMARY_HEADERS] for r in range(model.rowCount())]


def test_exported_csv_and_json_reopen_to_the_run_shown(qtbot, tiny_config, tmp_path):
    window = open_window(qtbot)
    run = run_and_wait(qtbot, window, BenchmarkConfig(**tiny_config))
    assert run.status == "complete", run.message
    out = tmp_path / "export"
    out.mkdir()

    written = window.exports.export_run_to(out)
    prefix = f"{run.run_id}_"
    assert sorted(p.name for p in written) == sorted(
        prefix + n for n in ("samples.csv", "summary.csv", "run.json")
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in written)  # no temp files
    assert window.settings.export_folder() == out

    # the JSON and the CSV together are the whole run, equal to what the window shows
    reopened = load_run(out / f"{prefix}run.json")
    assert reopened == window.current_run
    assert load_run(out / f"{prefix}samples.csv") == reopened
    # and the table's numbers are those of the reopened run
    assert table_cells(window) == [summary_cells(r) for r in summarize(reopened)]
    summary_lines = (out / f"{prefix}summary.csv").read_text().splitlines()
    assert [ln.split(",")[0] for ln in summary_lines[1:]] == ["eager", "aot_eager"]


def test_markdown_report_has_the_table_and_a_real_plot_image(qtbot, saved_run_folder, tmp_path):
    window, run = show_saved_run(qtbot, saved_run_folder)
    assert window.exports.export_report_action.text() == "Export report (Markdown)…"
    assert window.exports.export_report_action in window.menuBar().actions()[0].menu().actions()

    written = window.exports.export_report_to(tmp_path)
    md = tmp_path / f"{run.run_id}_report.md"
    png = tmp_path / f"{run.run_id}_report.png"
    assert sorted(written) == sorted([md, png])
    text = md.read_text(encoding="utf-8")
    assert "| " + " | ".join(SUMMARY_HEADERS) + " |" in text
    for row in summarize(run):
        assert "| " + " | ".join(summary_cells(row)) + " |" in text
    assert f"![latency per iteration]({png.name})" in text
    image = QImage(str(png))
    assert not image.isNull()
    figure = window.exports.report_figure(run)
    scale = window.exports.png_scale()
    assert (image.width(), image.height()) == (figure.width() * scale, figure.height() * scale)
    figure.deleteLater()
    # not a blank picture: the curves put colour on it
    colours = {image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)}
    assert len(colours) > 5
    assert not window.error_banner.isVisible()


@pytest.mark.parametrize("where", ["under-a-file", "proc"])
def test_export_to_an_unwritable_place_shows_an_error_and_writes_nothing(qtbot, saved_run_folder, tmp_path, where):
    window, run = show_saved_run(qtbot, saved_run_folder)
    if where == "under-a-file":
        blocker = tmp_path / "a-file"
        blocker.write_text("not a folder")
        target = blocker / "sub"
    else:
        target = Path("/proc/self")  # a folder nobody can create files in
    before = sorted(p.name for p in tmp_path.iterdir())

    assert window.exports.export_report_to(target) == []
    assert "Cannot export the report" in window.last_error
    assert window.error_banner.isVisible()
    window.hide_error()
    assert window.exports.export_run_to(target) == []
    assert "Cannot export the run" in window.last_error
    assert window.error_banner.isVisible()
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    if where == "proc":
        assert not any(p.name.endswith((".md", ".png", ".csv", ".json", ".tmp")) for p in target.iterdir())
    assert window.is_running() is False and window.current_run is run


def test_a_cli_run_opens_in_the_window_with_the_numbers_the_cli_shows(qtbot, tiny_config, capsys):
    store = runs_dir()
    c = tiny_config
    # the CLI's own entry point (``python -m compile_studio.cli`` exits with what it returns)
    made = cli.main(
        ["run", "--layers", c["layers"], "--batch-size", str(c["batch_size"]),
         "--device", "cpu", "--iterations", str(c["iterations"]), "--warmup", str(c["warmup"]),
         "--variants", ",".join(c["variants"]), "--warmup-min-ms", str(c["warmup_min_ms"]),
         "--compile-timing", c["compile_timing"],
         "--label", "from cli", "--out", str(store), "--quiet"]
    )
    assert made == 0, capsys.readouterr().err[-2000:]
    (folder,) = store.iterdir()
    capsys.readouterr()
    code = cli.main(["show", str(folder)])
    shown = capsys.readouterr()
    assert code == 0, shown.err

    window = open_window(qtbot)
    [entry] = window.history.entries()
    assert entry.path == folder and entry.run is not None
    assert "from cli" in window.history.tree.topLevelItem(0).text(1)
    window.history.set_checked(entry.run.run_id, True)  # ticking it shows it
    cells = table_cells(window)
    assert [r[0] for r in cells] == ["eager", "aot_eager"]
    show_lines = shown.out.splitlines()
    for row in cells:
        line = next(ln for ln in show_lines if ln.strip().startswith(row[0] + " "))
        for text in row:
            if text:
                assert text in line, (text, line)
    for name in ("eager", "aot_eager"):
        its, ms = series_data(window.plots, f"{entry.run.run_id}/{name}")
        assert len(ms) == c["iterations"] + c["warmup"]

    # File → Open of its run.json shows the same numbers
    window.history.set_checked(entry.run.run_id, False)
    assert window.table_model.rowCount() == 0
    opened = window.history.open_run(folder / "run.json")
    assert opened is not None and opened.run_id == entry.run.run_id
    assert table_cells(window) == cells
    assert not window.error_banner.isVisible()


def test_window_closed_mid_run_leaves_an_incomplete_run_that_reopens(qtbot, tiny_config):
    window = open_window(qtbot)
    window.start_run(BenchmarkConfig(**{**tiny_config, "iterations": 200_000, "variants": ["eager"]}))
    thread = window.live.benchmark_thread
    job = thread.runner
    run_id = job.run_id
    key = f"{run_id}/eager"
    qtbot.waitUntil(
        lambda: key in window.plots.series_keys() and len(series_data(window.plots, key)[0]) >= 20,
        timeout=RUN_TIMEOUT_MS,
    )
    pid = job.worker_pid
    window.close()
    assert has_finished(thread)
    deadline = time.monotonic() + 3
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not psutil.pid_exists(pid)

    saved = load_run(runs_dir() / run_id)
    assert saved.status == "incomplete"
    assert saved.message == CLOSED_DURING_RUN
    assert "window was closed" in saved.message
    kept = saved.variants["eager"].samples
    assert len(kept) >= 20
    assert job.result is not None and job.result.status == "incomplete"
    assert len(job.result.variants["eager"].samples) == len(kept)

    # a new window lists it as incomplete; ticking it plots exactly its samples
    again = open_window(qtbot)
    entry = again.history.entry_for_run(run_id)
    assert entry is not None and not entry.damaged
    item = again.history.tree.topLevelItem(again.history.entries().index(entry))
    assert item.text(4) == "incomplete"
    assert "window was closed" in item.toolTip(0)
    again.history.set_checked(run_id, True)
    its, ms = series_data(again.plots, f"{run_id}/eager")
    np.testing.assert_array_equal(ms, np.asarray(kept.wall_ms))
    np.testing.assert_array_equal(its, np.asarray(kept.iteration, dtype=float))


@pytest.mark.parametrize("scale, transparent", [(1, False), (4, True)])
def test_plot_png_options_from_the_menu(qtbot, saved_run_folder, tmp_path, monkeypatch, scale, transparent):
    """File → PNG options: the chosen scale and background reach the saved file."""
    from PySide6.QtWidgets import QFileDialog

    window, _ = show_saved_run(qtbot, saved_run_folder)
    window.exports.png_scale_actions[scale].trigger()
    window.exports.png_transparent_action.setChecked(transparent)
    target = tmp_path / "plot.png"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    window.exports.save_plot_png_action.trigger()
    image = QImage(str(target))
    plot = window.plots.current_plot()
    assert (image.width(), image.height()) == (plot.width() * scale, plot.height() * scale)
    corner_alpha = image.pixelColor(0, 0).alpha()
    assert (corner_alpha < 255) if transparent else (corner_alpha == 255)
