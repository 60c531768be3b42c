"""The main window running real benchmarks in real worker processes (offscreen Qt)."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import psutil
from PySide6.QtGui import QGuiApplication

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.job_thread import JobThread, has_finished
from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.paths import runs_dir
from compile_studio.jobs.run_job import RunJob
from compile_studio.results import RunStore, load_run
from support.gui_helpers import RUN_TIMEOUT_MS, live_key, open_window, run_and_wait, series_data
from support.threads import leftover_threads


def wait_for_samples(qtbot, window: MainWindow, variant: str = "eager", n: int = 1) -> str:
    key = live_key(window, variant)
    qtbot.waitUntil(
        lambda: key in window.plots.series_keys() and len(series_data(window.plots, key)[0]) >= n,
        timeout=RUN_TIMEOUT_MS,
    )
    return key


def test_tiny_run_fills_table_and_curves_hold_exactly_the_samples(qtbot, tiny_config):
    window = open_window(qtbot)
    run = run_and_wait(qtbot, window, BenchmarkConfig(**tiny_config))

    assert run.status == "complete", run.message
    assert window.current_run is run
    assert window.last_error == ""
    assert not window.error_banner.isVisible()
    rows = window.table_model.rows()
    assert [r.row.name for r in rows] == ["eager", "aot_eager"]
    for i, r in enumerate(rows):
        assert r.row.median_ms is not None and r.row.median_ms > 0
        assert r.row.speedup is not None and r.row.speedup > 0
        assert window.table_model.cell_text(i, "median ms") not in ("", "–")
        assert window.table_model.cell_text(i, "status").startswith("done")
    assert "×" in window.table_model.cell_text(1, "speedup [95% CI]")
    assert "[" in window.table_model.cell_text(1, "speedup [95% CI]")
    assert "run" not in window.table_model.headers()

    # the run folder is in the data dir's store, and the curves hold exactly its samples
    folder = runs_dir() / run.run_id
    saved = load_run(folder)
    assert saved.status == "complete"
    for name in ("eager", "aot_eager"):
        its, ms = series_data(window.plots, f"{run.run_id}/{name}")
        s = saved.variants[name].samples
        assert len(s) == tiny_config["iterations"] + tiny_config["warmup"]
        np.testing.assert_array_equal(its, np.asarray(s.iteration, dtype=float))
        np.testing.assert_array_equal(ms, np.asarray(s.wall_ms))
        np.testing.assert_array_equal(ms, np.asarray(run.variants[name].samples.wall_ms))

    # the summary chart and the status bar follow the run
    assert {b.key for b in window.plots.summary_bars()} == {
        f"{run.run_id}/eager",
        f"{run.run_id}/aot_eager",
    }
    assert window.phase_label.text() == "done"
    assert window.run_button.isEnabled() and not window.stop_button.isEnabled()
    assert window.history.entry_for_run(run.run_id) is not None

    # copying the table gives TSV with the header and both variants
    window.table_view.selectAll()
    text = window.table_view.copy_selection()
    assert QGuiApplication.clipboard().text() == text
    lines = text.strip().split("\n")
    assert lines[0].split("\t")[:2] == ["variant", "status"]
    assert [ln.split("\t")[0] for ln in lines[1:]] == ["eager", "aot_eager"]


def test_stop_mid_run_keeps_partial_data_and_leaves_no_process(qtbot, tiny_config):
    window = open_window(qtbot)
    config = BenchmarkConfig(**{**tiny_config, "iterations": 200_000, "variants": ["eager"]})
    window.start_run(config)
    thread = window.live.benchmark_thread
    job = thread.runner
    assert thread is not None
    key = wait_for_samples(qtbot, window, n=20)
    pid = job.worker_pid
    assert pid is not None and psutil.pid_exists(pid)

    with qtbot.waitSignal(window.run_finished, timeout=3000) as blocker:
        t0 = time.monotonic()
        window.stop_run()
        assert time.monotonic() - t0 < 0.5  # returns at once
        assert not window.stop_button.isEnabled()
    assert time.monotonic() - t0 < 3.0
    run = blocker.args[0]

    assert run.status == "stopped"
    assert window.phase_label.text() == "stopped"
    assert has_finished(thread, 5000)
    assert not psutil.pid_exists(pid)
    kept = run.variants["eager"].samples
    assert 20 <= len(kept) < 200_000
    its, ms = series_data(window.plots, key)
    np.testing.assert_array_equal(ms, np.asarray(kept.wall_ms))
    saved = load_run(runs_dir() / run.run_id)
    assert saved.status == "stopped"
    assert len(saved.variants["eager"].samples) == len(kept)
    assert window.table_model.rows()[0].row.status == "stopped"


def test_worker_killed_marks_run_failed_and_keeps_samples(qtbot, tiny_config):
    window = open_window(qtbot)
    config = BenchmarkConfig(**{**tiny_config, "iterations": 200_000, "variants": ["eager"]})
    window.start_run(config)
    thread = window.live.benchmark_thread
    job = thread.runner
    wait_for_samples(qtbot, window, n=20)
    with qtbot.waitSignal(window.run_finished, timeout=10_000) as blocker:
        os.kill(job.worker_pid, signal.SIGKILL)
    run = blocker.args[0]
    assert run.status == "failed"
    assert "killed by SIGKILL" in run.message
    assert "killed by SIGKILL" in window.last_error
    assert window.error_banner.isVisible()
    assert "killed by SIGKILL" in window.error_label.text()
    assert len(run.variants["eager"].samples) >= 20
    row = window.table_model.rows()[0]
    assert row.row.status == "failed"
    assert "killed by SIGKILL" in window.table_model.cell_text(0, "status")
    saved = load_run(runs_dir() / run.run_id)
    assert saved.status == "failed"
    assert len(saved.variants["eager"].samples) == len(run.variants["eager"].samples)


def test_unavailable_device_is_reported_in_the_window(qtbot, tiny_config):
    # without the start-up probe the window cannot know; the worker says so
    window = open_window(qtbot)
    run = run_and_wait(qtbot, window, BenchmarkConfig(**{**tiny_config, "device": "cuda"}))
    assert run.status == "failed"
    assert "cuda" in window.last_error and "not available" in window.last_error
    assert window.error_banner.isVisible()
    assert window.error_text == window.error_label.text()
    # the worker's hello arrived: now the form knows and blocks the same config
    assert window.environment is not None
    window.config_panel.set_config(BenchmarkConfig(**{**tiny_config, "device": "cuda"}))
    assert not window.run_button.isEnabled()
    assert "not available" in window.run_blocker


def test_closing_the_window_mid_run_stops_the_worker(qtbot, tiny_config):
    window = open_window(qtbot)
    window.start_run(BenchmarkConfig(**{**tiny_config, "iterations": 200_000, "variants": ["eager"]}))
    thread = window.live.benchmark_thread
    job = thread.runner
    run_id = job.run_id
    wait_for_samples(qtbot, window, n=10)
    pid = job.worker_pid
    t0 = time.monotonic()
    window.close()
    assert time.monotonic() - t0 < 6.0
    assert has_finished(thread)
    assert not psutil.pid_exists(pid)
    saved = load_run(RunStore(runs_dir()).root / run_id)
    assert saved.status == "incomplete"
    assert len(saved.variants["eager"].samples) >= 10


def test_environment_probe_fills_devices_and_variants(qtbot):
    window = open_window(qtbot, probe=True)
    assert window.environment is None  # the window is up before the worker answers
    with qtbot.waitSignal(window.environment_changed, timeout=60_000):
        pass
    choices = window.config_panel.variant_choices()
    assert choices[0] == "eager"
    assert "aot_eager" in choices and "default" in choices
    devices = [window.config_panel.device_combo.itemText(i) for i in range(window.config_panel.device_combo.count())]
    assert devices[0] == "auto" and "cpu" in devices
    assert window.env_label.text().startswith("torch ")


def test_leftover_thread_check_sees_a_running_run_thread(qtbot, tiny_config):
    job = RunJob(BenchmarkConfig(**{**tiny_config, "iterations": 200_000, "variants": ["eager"]}), None)
    thread = JobThread(job)
    thread.start()
    try:
        assert thread in leftover_threads(grace_s=0.5)
    finally:
        thread.request_stop()
        assert thread.wait(10_000)
    assert leftover_threads(grace_s=0.0) == []
    assert job.result is not None and job.result.status == "stopped"
