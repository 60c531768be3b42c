"""Small things the window gets right (real widgets, offscreen): the banner about an unreachable
target goes with it, the report figure has no check box in it, counts say 1 call, 1 recompile,
the GPU tab names installs that work, and the profiler's probe lines stay out of the Log tab."""

from __future__ import annotations

import dataclasses
import re
import socket
import sys
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.log_panel import LogPanel
from compile_studio.gui.plots.gpu_state import NO_GPU_READINGS
from compile_studio.gui.plots.sweep_plot import point_text
from compile_studio.gui.summary_table import SummaryTableModel
from compile_studio.gui.sweep_view import SweepView
from compile_studio.launchers.targets import Target, save_targets
from compile_studio.results import RunResult, VariantResult, summarize
from compile_studio.results.records.sweep_record import PointVariant, SweepPoint
from support.gui_helpers import open_window

ROOT = Path(__file__).resolve().parent.parent


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run() -> RunResult:
    config = BenchmarkConfig(layers="32,32,8", batch_size=4, device="cpu", variants=["eager", "aot_eager"])
    run = RunResult(run_id="r1", created="2025-01-01T00:00:00", config=config, status="complete")
    rng = np.random.default_rng(1)
    for name, base in (("eager", 2.0), ("aot_eager", 1.0)):
        v = VariantResult(name=name, status="done")
        v.samples.extend(0, "warmup", list(rng.normal(base * 3, 0.1, 5)), None)
        v.samples.extend(5, "measure", list(rng.normal(base, 0.05, 60)), None)
        run.variants[name] = v
    return run


def test_the_banner_about_an_unreachable_target_goes_when_this_machine_is_chosen_again(qtbot):
    save_targets([Target(name="gone", kind="ssh", host="127.0.0.1", port=_closed_port(),
                         ssh_options=("-o", "ConnectTimeout=3"), python=sys.executable)])
    window = open_window(qtbot)
    chooser = window.target_chooser
    with qtbot.waitSignal(chooser.target_changed, timeout=5000):
        chooser.set_current("gone")
    qtbot.waitUntil(lambda: "cannot reach SSH target 'gone'" in window.error_text, timeout=30_000)
    with qtbot.waitSignal(chooser.target_changed, timeout=5000):
        chooser.set_current("local")
    assert window.error_text == ""
    assert not window.error_banner.isVisible()
    # a banner about something else stays when the target changes
    window.show_error("Cannot delete run x: busy")
    with qtbot.waitSignal(chooser.target_changed, timeout=5000):
        chooser.set_current("gone")
    assert window.error_text == "Cannot delete run x: busy"


def test_the_report_figure_holds_no_check_box(qtbot):
    window = open_window(qtbot)
    figure = window.exports.report_figure(_run())
    try:
        shown = [c.text() for c in figure.findChildren(QCheckBox) if c.isVisibleTo(figure)]
        assert shown == []
        assert window.plots.latency.legend_checkbox.isVisible()  # the window's own stays
    finally:
        figure.hide()
        figure.deleteLater()
    png = window.exports.report_figure_png(_run(), scale=1)
    assert png[:4] == b"\x89PNG"


def test_counts_of_one_are_singular_and_no_word_is_doubled(qtbot, tmp_path):
    one = PointVariant("aot_eager", "done", median_ms=1.0, speedup=2.0, speedup_lo=1.9, speedup_hi=2.1,
                       verdict="faster", compile_s=0.001, break_even_calls=0.4, recompiles=1, graph_breaks=1)
    text = point_text("batch_size", SweepPoint(0, 8, "done", variants=[one]), one)
    assert "\n1 recompile · 1 graph break\n" in text and "pays off after 1 call\n" in text
    two = PointVariant("aot_eager", "done", recompiles=2, graph_breaks=3)
    text = point_text("batch_size", SweepPoint(0, 8, "done", variants=[two]), two)
    assert "2 recompiles" in text and "3 graph breaks" in text
    assert not re.search(r"\b1 (recompiles|graph breaks|calls|samples)\b", text)

    sys.path.insert(0, str(Path(__file__).parent))
    from test_sweep_view import shape_folder

    view = SweepView(lambda: BenchmarkConfig(), tmp_path)
    qtbot.addWidget(view)
    assert view.open_sweep(shape_folder(tmp_path).path)
    assert re.search(r"aot_eager dynamic=false: 1 recompile\b(?!s)", view.status.text())
    assert "dynamic=auto: 0 recompiles" in view.status.text()
    title = view.title.text()
    assert title.startswith("Shape sweep: batch 1,2,4,8 · ")
    assert title.lower().count("shape sweep") == 1

    rows = summarize(_run())
    row = next(r for r in rows if r.name == "aot_eager")
    model = SummaryTableModel()
    model.set_runs([("run", [dataclasses.replace(row, recompiles_in_window=1)])])
    tip = model.data(model.index(0, model.headers().index("status")), Qt.ItemDataRole.ToolTipRole)
    assert "1 recompile inside the timed window" in tip and "(s)" not in tip


def test_the_gpu_tab_names_the_install_the_readme_gives_and_one_for_a_wheel():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = set(re.findall(r"pip install [^`]*\[nvml\][^`]*", readme))
    assert commands, "the README names how to install the nvml extra"
    for command in commands:
        assert command.strip() in NO_GPU_READINGS
    assert "pip install 'compile-studio[nvml]'" in NO_GPU_READINGS  # from a wheel
    assert "pip install nvidia-ml-py" in NO_GPU_READINGS  # either way


def test_profiler_probe_lines_stay_out_of_the_log_view_but_in_the_saved_log(qtbot, tmp_path):
    log = LogPanel()
    qtbot.addWidget(log)
    lines = [
        "compiling default…",
        "[W1203 10:00:00.123 4242 profiler_kineto.cpp:88] USDT probe libkineto:profiler_start fired",
        "USDT: profiler_stop at 0x7f00",
        "graph break: data-dependent branch",
    ]
    for line in lines:
        log.append_line(line)
    shown = log.text()
    assert "compiling default…" in shown and "graph break: data-dependent branch" in shown
    assert "USDT" not in shown and "profiler_start" not in shown
    assert log.hidden_lines == 2
    saved = log.save(tmp_path / "worker.log").read_text(encoding="utf-8")
    assert saved.splitlines() == lines
