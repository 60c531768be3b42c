"""The Sweep view while a sweep runs: point by point, Stop, and no single run meanwhile."""

from __future__ import annotations

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.main_window import MainWindow
from compile_studio.jobs.sweep_spec import SweepSpec
from compile_studio.results.records.sweep_load import load_sweep

SWEEP_TIMEOUT_MS = 120_000


def test_a_sweep_from_the_window_updates_point_by_point_and_stops(qtbot):
    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.show()
    view = window.sweep_view
    base = BenchmarkConfig.from_dict(
        {"layers": "32,32,8", "device": "cpu", "iterations": 20_000, "warmup": 2, "rounds": 1,
         "warmup_min_ms": 0, "variants": ["eager"], "compile_timing": "in_run"}
    )
    window.config_panel.set_config(base)
    seen: list[tuple[str, ...]] = []

    def on_point(record, index):
        seen.append(tuple(p.status for p in record.points))
        if seen[-1] == ("complete", "running", "pending"):
            view.stop()  # the second point is running: the stop reaches it, whatever the machine's pace

    assert view.start(SweepSpec.parse("batch_size", "2,8,32"), window.config_panel.config())
    view.jobs.sweep_thread.changed.connect(on_point)
    assert view.is_running() and view.stop_button.isEnabled() and not view.new_button.isEnabled()
    # no single run while the sweep runs
    window.start_run()
    assert "A sweep is running" in window.error_text and not window.is_running()

    def first_point_drawn():
        assert [m.index for m in view.plot.markers if m.plot == "latency"] == [0]

    qtbot.waitUntil(first_point_drawn, timeout=SWEEP_TIMEOUT_MS)
    qtbot.waitUntil(lambda: ("complete", "running", "pending") in seen, timeout=SWEEP_TIMEOUT_MS)
    assert not view.stop_button.isEnabled()
    qtbot.waitUntil(lambda: not view.is_running(), timeout=SWEEP_TIMEOUT_MS)
    record = load_sweep(view.folder.path)
    assert record.status == "stopped"
    assert [p.status for p in record.points] == ["complete", "stopped", "pending"]
    assert view.resume_button.isEnabled()
    assert "[stopped]" in view.status.text()


def test_the_new_sweep_dialog_checks_the_values_as_typed(qtbot):
    from PySide6.QtWidgets import QDialogButtonBox

    from compile_studio.gui.sweep_dialogs import SweepDialog

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


def shape_folder(root):
    """A saved shape sweep (written as a worker's points would be): dynamic=false hits the limit at 4."""
    from compile_studio.results.records.shape_record import ShapePoint, ShapeSweepRecord
    from compile_studio.results.storage.sweep_store import ShapeSweepFolder

    record = ShapeSweepRecord(
        sweep_id="", created="", config=BenchmarkConfig(device="cpu", variants=["eager", "aot_eager"]),
        batches=[1, 2, 4, 8], modes=["false", "auto", "true"], recompile_limit=2,
    )
    folder = ShapeSweepFolder.create(root, "mlp", record)
    for b in record.batches:
        folder.update(lambda r, b=b: r.add(ShapePoint("eager", "eager", b, 0.1, median_ms=0.05)))
    for mode in record.modes:
        for k, b in enumerate(record.batches):
            hit = mode == "false" and b == 4
            recompiles = (1 if mode == "false" and b == 2 else 0) if k else 0
            point = ShapePoint(
                "aot_eager", mode, b, first_call_ms=100.0 if k == 0 or recompiles else (150.0 if hit else 0.2),
                graphs=1 if k == 0 or recompiles else 0, recompiles=recompiles, limit_hit=hit,
                fell_back=mode == "false" and b >= 4, recompile_limit=2, median_ms=0.04, correct=True,
            )
            folder.update(lambda r, p=point: r.add(p))
    folder.update(lambda r: setattr(r, "status", "complete"))
    return folder


def test_the_sweep_view_shows_a_shape_sweep_with_the_limit_warning_and_exports_it(qtbot, tmp_path):
    from compile_studio.gui.sweep_view import SweepView
    from compile_studio.jobs.sweep import new_sweep

    view = SweepView(lambda: BenchmarkConfig(), tmp_path)
    qtbot.addWidget(view)
    view.show()
    messages: list[str] = []
    view.message.connect(messages.append)
    folder = shape_folder(tmp_path)
    assert view.open_sweep(folder.path), messages
    assert view.shape_plot.isVisible() and not view.plot.isVisible()
    assert view.title.text().startswith("Shape sweep:")
    assert view.warning.isVisible()
    assert "dynamic=false: Dynamo hit its recompile limit (2) at batch 4 and ran eager from there on" in (
        view.warning.text()
    )
    assert "aot_eager dynamic=false: 1 recompile" in view.status.text()
    drawn = view.shape_plot.drawn
    assert [(b, y) for plot, name, b, y in drawn if plot == "recompiles" and name == "dynamic=false"] == [
        (1, 0.0), (2, 1.0), (4, 0.0), (8, 0.0)]
    assert len([d for d in drawn if d[0] == "first_call"]) == 12
    assert view.png_button.isEnabled() and not view.resume_button.isEnabled()
    assert view.export(tmp_path / "shape.png") and (tmp_path / "shape.png").stat().st_size > 1000
    assert view.export(tmp_path / "shape.csv")
    assert len((tmp_path / "shape.csv").read_text().splitlines()) == 1 + 4 * 4
    # a point sweep opened after it takes the view back
    sweep = new_sweep(SweepSpec.parse("batch_size", "1,2"), BenchmarkConfig(device="cpu", variants=["eager"]),
                      tmp_path / "s")
    assert view.open_sweep(sweep.path)
    assert view.plot.isVisible() and not view.shape_plot.isVisible() and not view.warning.isVisible()
    assert view.title.text().startswith("Sweep:")
    # a damaged one is said in the banner
    (folder.path / "shape_sweep.json").write_text("{")
    assert not view.open_sweep(folder.path)
    assert "Cannot open the shape sweep" in messages[-1]


def test_a_shape_sweep_from_the_window_runs_in_one_worker_and_warns_of_the_limit(qtbot):
    from compile_studio.gui.sweep_dialogs import ShapeSweepDialog
    from compile_studio.results.records.sweep_load import load_shape_sweep

    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.show()
    view = window.sweep_view
    # warm-up by calls alone (not the default 200 ms more per point): the view is the subject
    base = BenchmarkConfig(layers="16,32,8", device="cpu", variants=["eager", "aot_eager"], warmup_min_ms=0)
    dialog = ShapeSweepDialog(base)
    qtbot.addWidget(dialog)
    dialog.values.setText("1,2,3")
    dialog.limit.setValue(2)
    assert dialog.check() and dialog.problem_label.text() == "3 batch sizes × 3 modes"
    request = dialog.request()
    dialog.values.setText("1,0")
    assert not dialog.check() and "batch 0" in dialog.problem_label.text()
    assert view.start_shape(request)
    assert view.is_running() and view.stop_button.isEnabled() and not view.new_button.isEnabled()
    window.start_run()
    assert "A sweep is running" in window.error_text and not window.is_running()
    qtbot.waitUntil(lambda: not view.is_running(), timeout=SWEEP_TIMEOUT_MS)
    record = view.shape_record
    assert record is not None and record.status == "complete", record and record.message
    assert load_shape_sweep(view.root / record.sweep_id).points == record.points
    assert not view.shape_plot.isHidden() and view.plot.isHidden() and "[complete]" in view.status.text()
    assert not view.warning.isHidden()
    assert "dynamic=false: Dynamo hit its recompile limit (2) at batch 3" in view.warning.text()
    assert [p.recompiles for p in record.points_of("aot_eager", "false")] == [0, 1, 0]


def test_a_running_point_s_events_show_its_phase_and_log_its_errors(qtbot, tmp_path):
    """What the job thread relays of a point's worker: its phase in the status, errors and
    warnings as log lines naming the point (no worker here: the events are handed in)."""
    from compile_studio.core import protocol
    from compile_studio.gui.job_thread import JobThread
    from compile_studio.jobs.sweep import SweepRunner, new_sweep

    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    view = window.sweep_view
    base = BenchmarkConfig.from_dict({"layers": "32,32,8", "device": "cpu", "variants": ["eager", "aot_eager"]})
    folder = new_sweep(SweepSpec.parse("batch_size", "2,8"), base, tmp_path)
    view.jobs.sweep_thread = JobThread(SweepRunner(folder))  # running, as the view sees it (never started)
    lines: list[str] = []
    view.log_line.connect(lines.append)
    view.show_record(folder.snapshot())
    view._on_event(1, protocol.PhaseEvent(variant="aot_eager", phase=protocol.Phase.COMPILE))
    assert view.status.text().endswith(" · batch_size=8: aot_eager compile")
    view._on_event(0, protocol.ErrorEvent(kind=protocol.ErrorKind.OOM, message="too big", variant="eager"))
    view._on_event(1, protocol.WarningEvent(message="slow"))
    assert lines == ["[point 1] error (oom) in eager: too big", "[point 2] warning: slow"]
    view.jobs.sweep_thread = None
