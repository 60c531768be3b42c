"""Start-up cost in the window: Run ▸ Start-up cost… runs the job (its controller) and shows it (its view);
a saved job reopens."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QDialog

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.coldstart_view import ColdStartDialog
from compile_studio.results.records.coldstart_record import (
    ColdStartFolder,
    ColdStartPoint,
    ColdStartRecord,
)
from support.gui_helpers import open_window


def cells(view) -> list[list[str]]:
    t = view.table
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def saved_job(root) -> ColdStartFolder:
    config = BenchmarkConfig.from_dict({"layers": "32,32,8", "batch_size": 4, "device": "cpu",
                                        "variants": ["eager", "default"]})
    record = ColdStartRecord(sweep_id="", created="", config=config, rounds=1, status="complete")
    record.points = [
        ColdStartPoint("eager", "eager", 0, ready_s=3.0, first_result_s=3.1, first_fast_s=3.1, call_ms=1.0),
        ColdStartPoint("default", "cold", 0, ready_s=3.0, first_result_s=40.0, first_fast_s=40.1, first_call_s=37.0,
                       call_ms=0.5, phases={"Dynamo tracing": 0.5, "C++/Triton build": 30.0, "other": 6.5}),
        ColdStartPoint("default", "warm", 0, ready_s=3.0, first_result_s=8.0, first_fast_s=8.1, first_call_s=5.0,
                       call_ms=0.5, phases={"Dynamo tracing": 0.5, "cache load": 4.5}),
        ColdStartPoint("default", "carried", 0, ready_s=3.5, first_result_s=20.0, first_fast_s=20.1,
                       first_call_s=16.5, call_ms=0.5, loaded={"inductor": 1}, files_before_load=0,
                       phases={"Dynamo tracing": 0.5, "C++/Triton build": 15.0, "cache load": 1.0}),
    ]
    return ColdStartFolder.create(root, "mlp", record)


def test_the_window_reopens_a_saved_start_up_job_with_its_break_even_and_phase_bars(qtbot, tmp_path):
    folder = saved_job(tmp_path)
    window = open_window(qtbot)
    view = window.coldstart_view
    assert view.open_folder(folder.path)
    rows = {(r[0], r[1]): r for r in cells(view)}
    assert set(rows) == {("eager", "eager"), ("default", "cold"), ("default", "warm"), ("default", "carried")}
    # (40.1 - 3.1) s / (1.0 - 0.5) ms = 74,000 calls
    assert rows[("default", "cold")][-1] == "74,000 calls"
    assert rows[("default", "warm")][-1] == "10,000 calls"
    assert [label for label, _ in view.bars] == ["default cold", "default warm", "default carried"]
    assert view.bars[0][1]["other"] == 6.5
    assert not view.open_folder(tmp_path)  # not a job's folder: said, nothing changed
    assert len(cells(view)) == 4


def cpu_config() -> BenchmarkConfig:
    return BenchmarkConfig.from_dict({"layers": "32,32,8", "batch_size": 4, "device": "cpu",
                                      "variants": ["eager", "aot_eager"]})


def test_the_menu_item_runs_the_job_in_fresh_processes_and_shows_the_result(qtbot, tmp_path, monkeypatch):
    window = open_window(qtbot)
    view = window.coldstart_view
    jobs = view.jobs  # the controller runs the job, the view shows it
    jobs.root, jobs.base = tmp_path, cpu_config
    monkeypatch.setattr(ColdStartDialog, "exec", lambda self: QDialog.DialogCode.Accepted)
    monkeypatch.setattr(ColdStartDialog, "settings", lambda self: (1, ["cold"], 3))
    window.coldstart_action.trigger()
    assert view.dock.isVisible() and jobs.is_running()
    assert view.progress.isVisible() and view.stop_button.isEnabled()
    qtbot.waitUntil(lambda: jobs.last_outcome is not None and not jobs.is_running(), timeout=240_000)
    record = jobs.last_outcome.record
    assert record.status == "complete", (record.message, [p.error for p in record.points])
    assert {(p.variant, p.start) for p in record.points} == {("eager", "eager"), ("aot_eager", "cold")}
    assert {(r[0], r[1]) for r in cells(view)} == {("eager", "eager"), ("aot_eager", "cold")}
    assert (jobs.last_outcome.folder / "coldstart.json").is_file()
    assert view.bars and view.bars[0][0] == "aot_eager cold"
    qtbot.waitUntil(lambda: not view.progress.isVisible() and not view.stop_button.isEnabled(), timeout=5000)


def test_the_view_s_stop_button_stops_the_controller_s_job_and_keeps_it(qtbot, tmp_path):
    window = open_window(qtbot)
    view, jobs = window.coldstart_view, window.coldstart_view.jobs
    jobs.root, jobs.base = tmp_path, cpu_config
    assert jobs.start(1, ["cold"], 3)
    assert view.stop_button.isEnabled() and view.title.text().startswith("start-up cost")
    qtbot.waitUntil(lambda: jobs.job_thread.runner.hello is not None, timeout=120_000)
    view.stop_button.click()
    qtbot.waitUntil(lambda: jobs.last_outcome is not None and not jobs.is_running(), timeout=120_000)
    assert jobs.last_outcome.record.status == "stopped"
    qtbot.waitUntil(lambda: not view.stop_button.isEnabled() and "[stopped]" in view.title.text(), timeout=5000)


def test_closing_the_window_stops_a_running_start_up_job_and_keeps_it(qtbot, tmp_path, monkeypatch):
    window = open_window(qtbot)
    jobs = window.coldstart_view.jobs
    jobs.root, jobs.base = tmp_path, cpu_config
    assert jobs.start(1, ["cold"], 3)
    qtbot.waitUntil(lambda: jobs.job_thread.runner.hello is not None, timeout=120_000)
    window.close()
    assert not jobs.is_running()
    record = jobs.job_thread.runner.folder.snapshot()
    assert record.status == "stopped" and "window was closed" in record.message


def test_a_cache_file_from_the_window_is_asked_about_checked_and_refused_with_its_reason(qtbot, tmp_path):
    from compile_studio.results.records.cache_file import write_cache_file

    window = open_window(qtbot)
    jobs = window.coldstart_view.jobs
    jobs.root = tmp_path / "jobs"
    config = BenchmarkConfig.from_dict({"layers": "32,32,8", "batch_size": 4, "device": "cpu",
                                        "variants": ["eager", "default"]})
    jobs.base = lambda: config
    said: list[str] = []
    jobs.message.connect(said.append)
    made = tmp_path / "elsewhere.cache"
    write_cache_file(made, {"torch": "1.0.0", "device_type": "cpu"}, config.to_dict(),
                     {"default": (b"never unpickled", {"inductor": 1})})
    asked: list[Path] = []
    jobs.agree_cache = lambda path: asked.append(path) or False
    assert not jobs.start(1, ["carried"], 3, load_cache=made)
    assert asked == [made] and "not agreed" in said[-1] and not jobs.root.exists()
    damaged = tmp_path / "damaged.cache"
    damaged.write_bytes(made.read_bytes()[:-3])
    assert not jobs.start(1, ["carried"], 3, load_cache=damaged)
    assert "Cannot load the cache" in said[-1] and asked == [made]
    jobs.agree_cache = lambda path: True
    assert jobs.start(1, ["carried"], 3, load_cache=made)
    qtbot.waitUntil(lambda: jobs.last_outcome is not None and not jobs.is_running(), timeout=120_000)
    assert "elsewhere.cache will not help: made with torch 1.0.0" in said[-1]
    assert jobs.last_outcome.record.points == []
