"""The Sweep view while a sweep runs: point by point, Stop, and no single run meanwhile."""

from __future__ import annotations

from compile_studio.config import BenchmarkConfig
from compile_studio.gui.main_window import MainWindow
from compile_studio.results.sweep_store import load_sweep
from compile_studio.sweep import SweepSpec

SWEEP_TIMEOUT_MS = 120_000


def test_a_sweep_from_the_window_updates_point_by_point_and_stops(qtbot):
    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.show()
    view = window.sweep_view
    base = BenchmarkConfig.from_dict(
        {"layers": "32,32,8", "device": "cpu", "iterations": 10, "warmup": 2, "rounds": 1,
         "warmup_min_ms": 0, "variants": ["eager"], "compile_timing": "in_run"}
    )
    window.config_panel.set_config(base)
    seen: list[tuple[str, ...]] = []

    def on_point(record, index):
        seen.append(tuple(p.status for p in record.points))

    assert view.start(SweepSpec.parse("batch_size", "2,8,32"), window.config_panel.config())
    view.sweep_thread.point_changed.connect(on_point)
    assert view.is_running() and view.stop_button.isEnabled() and not view.new_button.isEnabled()
    # no single run while the sweep runs
    window.start_run()
    assert "A sweep is running" in window.error_text and not window.is_running()

    def first_point_drawn():
        assert [m.index for m in view.plot.markers if m.plot == "latency"] == [0]

    qtbot.waitUntil(first_point_drawn, timeout=SWEEP_TIMEOUT_MS)
    assert "1 complete" in view.status.text()
    view.stop()
    assert not view.stop_button.isEnabled()
    qtbot.waitUntil(lambda: not view.is_running(), timeout=SWEEP_TIMEOUT_MS)
    record = load_sweep(view.folder.path)
    assert record.status == "stopped"
    assert record.points[0].status == "complete"
    assert {p.status for p in record.points[1:]} <= {"stopped", "pending"}
    assert ("complete", "running", "pending") in seen
    assert view.resume_button.isEnabled()
    assert "[stopped]" in view.status.text()


def test_the_new_sweep_dialog_checks_the_values_as_typed(qtbot):
    from PySide6.QtWidgets import QDialogButtonBox

    from compile_studio.gui.sweep_view import SweepDialog

    dialog = SweepDialog(BenchmarkConfig(layers="64,128,128,10"))
    qtbot.addWidget(dialog)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert dialog.param.currentText() == "batch_size" and dialog.values.text() == "1:1024:x2"
    assert ok.isEnabled() and dialog.problem_label.text().startswith("11 points: 1, 2, 4")
    dialog.values.setText("4,0")
    assert not ok.isEnabled() and "batch_size=0: must be at least 1" in dialog.problem_label.text()
    dialog.param.setCurrentText("hidden_width")
    dialog.values.setText("32,64")
    assert ok.isEnabled()
    assert dialog.spec().point_config(dialog.base, 32).layers == "64,32,32,10"
    assert "layer:3" in [dialog.param.itemText(k) for k in range(dialog.param.count())]
