"""The Markdown report's figure shows exactly the reported run, at the chosen PNG scale."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtGui import QImage
from PySide6.QtWidgets import QLabel

from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.paths import runs_dir
from compile_studio.gui.plots import PlotPanel
from compile_studio.results import RunStore, load_run
from compile_studio.results.report.formatting import verdict_lines
from support.gui_helpers import legend_labels
from test_daily_cli import record

LOAD = {
    "load_average": [1.5, 1.0, 0.5], "cpu_count": 16, "cpu_percent": 12.0,
    "busiest": [{"pid": 1, "name": "Xorg", "cpu_percent": 7.0}],
}


def test_report_figure_is_the_reported_run_alone_at_the_chosen_scale(qtbot, tmp_path):
    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.show()
    store = RunStore(runs_dir())
    reported = record(store, datetime(2026, 12, 1, 9), label="reported", variants=("eager", "default"))
    other = record(store, datetime(2026, 12, 2, 9), label="second-run-label", variants=("eager", "aot_eager"))
    run = load_run(reported)
    run.measurement["load_before"] = LOAD
    run.measurement["torch_threads"] = 8
    run.environment.update({"device": "cpu", "cpu": "Test CPU 3000"})
    window.history.refresh()
    window.show_run(run)
    window.history.set_checked(load_run(other).run_id, True)
    assert len(legend_labels(window.plots)) == 4  # the window shows both runs

    window.exports.png_scale_actions[4].setChecked(True)
    figure = window.exports.report_figure(run)
    panel = figure.findChild(PlotPanel)
    assert set(panel.series_keys()) == {f"{run.run_id}/eager", f"{run.run_id}/default"}
    assert legend_labels(panel) == ["eager", "default"]
    caption = figure.findChild(QLabel, "reportCaption").text()
    for line in verdict_lines(run):
        assert line.split(";")[0].split(" [")[0] in caption
    assert "Test CPU 3000" in caption and "load average 1.5 on 16 CPUs" in caption
    assert "torch threads: 8" in caption
    size = figure.size()
    figure.deleteLater()

    written = window.exports.export_report_to(tmp_path, run)
    png = tmp_path / f"{run.run_id}_report.png"
    assert png in written
    image = QImage(str(png))
    assert (image.width(), image.height()) == (size.width() * 4, size.height() * 4)
    text = (tmp_path / f"{run.run_id}_report.md").read_text(encoding="utf-8")
    assert "load before the run: load average 1.5 on 16 CPUs" in text
    assert "torch threads: 8" in text
    assert "pays off after" in text
    assert "second-run-label" not in text and load_run(other).run_id not in text
