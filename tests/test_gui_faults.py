"""Faults seen from the window: each one is said in words, the window stays up, no sample is lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.job_thread import has_finished
from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.paths import runs_dir
from compile_studio.gui.settings import AppSettings
from compile_studio.launchers.supervisor import probe_environment
from compile_studio.results import load_run
from compile_studio.results.storage.recorder import RunRecorder
from support import worker_zygote
from support.gui_helpers import (
    RUN_TIMEOUT_MS,
    is_series_failed,
    live_key,
    open_window,
    run_and_wait,
    series_data,
)

pytestmark = pytest.mark.long

LONG = {"iterations": 200_000, "variants": ["eager"]}


def wait_for_points(qtbot, window: MainWindow, variant: str, n: int) -> str:
    key = live_key(window, variant)
    qtbot.waitUntil(
        lambda: key in window.plots.series_keys() and len(series_data(window.plots, key)[0]) >= n,
        timeout=RUN_TIMEOUT_MS,
    )
    return key


def assert_curves_are_the_saved_samples(window: MainWindow, run_id: str, variants: list[str]) -> None:
    saved = load_run(runs_dir() / run_id)
    for name in variants:
        its, ms = series_data(window.plots, f"{run_id}/{name}")
        s = saved.variants[name].samples
        assert len(s) > 0, name
        np.testing.assert_array_equal(ms, np.asarray(s.wall_ms), err_msg=name)
        np.testing.assert_array_equal(its, np.asarray(s.iteration, dtype=float), err_msg=name)


# -- failures inside the worker ------------------------------------------------------------
@pytest.mark.inductor
@pytest.mark.fresh_worker  # the worker is given another C++ compiler (CXX): read at its start
def test_compiler_failure_names_the_variant_and_keeps_the_others(qtbot, tiny_config, monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/bin/g++")  # the worker inherits it
    window = open_window(qtbot)
    config = BenchmarkConfig(
        **{**tiny_config, "variants": ["eager", "aot_eager", "default"], "compile_cache": "cold"}
    )
    run = run_and_wait(qtbot, window, config)

    assert window.error_banner.isVisible()
    text = window.error_text
    assert text.startswith("default failed to compile:"), text
    assert "C++ compiler" in text
    rows = {r.row.name: (i, r.row) for i, r in enumerate(window.table_model.rows())}
    i, failed = rows["default"]
    assert failed.status == "failed"
    assert window.table_model.cell_text(i, "status").startswith("failed: ")
    assert "C++ compiler" in window.table_model.cell_text(i, "status")
    assert is_series_failed(window.plots, f"{run.run_id}/default")
    for name in ("eager", "aot_eager"):
        i, row = rows[name]
        assert row.status == "done" and row.median_ms and row.median_ms > 0
        assert window.table_model.cell_text(i, "median ms") not in ("", "–")
        its, _ = series_data(window.plots, f"{run.run_id}/{name}")
        assert len(its) == config.iterations + config.warmup
    assert_curves_are_the_saved_samples(window, run.run_id, ["eager", "aot_eager"])
    assert window.run_button.isEnabled()


def test_out_of_memory_says_so_with_the_size_and_keeps_the_others(qtbot, tiny_config, monkeypatch):
    monkeypatch.setenv("COMPILE_STUDIO_WORKER_MEMORY_LIMIT", str(420 << 20))
    window = open_window(qtbot)
    config = BenchmarkConfig(
        **{**tiny_config, "layers": "4096,4096,4096", "batch_size": 8, "rounds": 2,
           "variants": ["eager", "aot_eager", "default"], "iterations": 6, "warmup": 1}
    )
    run = run_and_wait(qtbot, window, config)

    text = window.error_text
    assert text.startswith("default ran out of memory: out of memory"), text
    assert "tried to allocate" in text and "MiB" in text
    rows = {r.row.name: r.row for r in window.table_model.rows()}
    assert rows["default"].status == "failed" and "out of memory" in rows["default"].error
    for name in ("eager", "aot_eager"):
        assert rows[name].n == 6 and rows[name].median_ms is not None
    assert_curves_are_the_saved_samples(window, run.run_id, ["eager", "aot_eager"])


def test_worker_killed_keeps_every_sample_and_the_next_run_works(qtbot, tiny_config):
    window = open_window(qtbot)
    window.start_run(BenchmarkConfig(**{**tiny_config, **LONG}))
    thread = window.live.benchmark_thread
    job = thread.runner
    run_id = job.run_id
    wait_for_points(qtbot, window, "eager", 30)
    with qtbot.waitSignal(window.run_finished, timeout=10_000) as blocker:
        os.kill(job.worker_pid, signal.SIGKILL)
    run = blocker.args[0]
    assert "the worker process died (killed by SIGKILL" in window.error_text
    # every sample that reached the window is on screen and on disk
    assert len(series_data(window.plots, f"{run_id}/eager")[0]) == len(run.variants["eager"].samples)
    assert_curves_are_the_saved_samples(window, run_id, ["eager"])
    assert window.run_button.isEnabled()

    again = run_and_wait(qtbot, window, BenchmarkConfig(**tiny_config))
    assert again.status == "complete", again.message
    assert again.run_id != run_id
    assert not window.error_banner.isVisible()
    assert [r.row.status for r in window.table_model.rows()] == ["done", "done"]
    assert not worker_zygote.workers_left()


GUI_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from PySide6.QtWidgets import QApplication
    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.gui.main_window import MainWindow

    app = QApplication([])
    window = MainWindow(store_root=Path(sys.argv[1]), probe=False)
    window.show()
    window.start_run(BenchmarkConfig(**json.loads(sys.argv[2])))
    app.exec()
    """
)


@pytest.mark.fresh_worker  # the window's worker is found as its child
def test_window_process_killed_the_worker_ends_itself_and_the_run_reopens(tiny_config, tmp_path):
    store = tmp_path / "store"
    script = tmp_path / "gui.py"
    script.write_text(GUI_SCRIPT)
    gui = subprocess.Popen(
        [sys.executable, str(script), str(store), json.dumps({**tiny_config, **LONG})],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        samples = None
        while time.monotonic() < deadline:
            found = list(store.glob("*/samples.csv"))
            if found and len(found[0].read_text().splitlines()) > 20:
                samples = found[0]
                break
            assert gui.poll() is None, gui.stderr.read().decode()[-2000:]
            time.sleep(0.1)
        assert samples is not None, "the window's run wrote no samples"
        workers = [
            p for p in psutil.Process(gui.pid).children(recursive=True)
            if "compile_studio.worker" in " ".join(p.cmdline())
        ]
        assert len(workers) == 1
        worker = workers[0]
        rows_before = len(samples.read_text().splitlines()) - 1

        gui.send_signal(signal.SIGKILL)
        gui.wait(10)
        # the worker sees the end of its stdin and leaves on its own
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                if worker.status() == psutil.STATUS_ZOMBIE:
                    break
            except psutil.NoSuchProcess:
                break
            time.sleep(0.05)
        else:
            worker.kill()
            pytest.fail("the worker outlived its window by more than 5 s")
    finally:
        if gui.poll() is None:
            gui.kill()
            gui.wait(10)

    run = load_run(samples.parent)
    assert run.status == "incomplete"
    assert len(run.variants["eager"].samples) >= rows_before


# -- damaged files in the run store ------------------------------------------------------------
def recorded_run(store: Path, name: str) -> Path:
    """A run folder written by the real recorder from a short synthetic event stream."""
    recorder = RunRecorder({"layers": "8,8", "variants": ["eager"], "label": name}, store / name)
    for event in (
        {"type": protocol.HELLO, "environment": {"torch": "x", "devices": ["cpu"]}},
        {"type": protocol.PHASE, "variant": "eager", "phase": "measure", "iterations": 40},
        {"type": protocol.SAMPLES, "variant": "eager", "phase": "measure", "first_iteration": 0,
         "wall_ms": [0.123456789 + k / 1000 for k in range(40)], "device_ms": None},
        {"type": protocol.VARIANT_DONE, "variant": "eager", "status": "done"},
        {"type": protocol.DONE, "status": "completed"},
    ):
        recorder.handle(protocol.from_dict(event))
    assert recorder.run.status == "complete"
    return store / name


def test_damaged_runs_are_listed_with_the_reason_and_the_others_load(qtbot):
    store = runs_dir()
    good = recorded_run(store, "20240105-000000_good")
    corrupt = recorded_run(store, "20240104-000000_corrupt-json")
    (corrupt / "run.json").write_text('{"config": {"layers": "8,8"}, "vari', encoding="utf-8")
    truncated = recorded_run(store, "20240103-000000_truncated-csv")
    data = (truncated / "samples.csv").read_bytes()
    (truncated / "samples.csv").write_bytes(data[: len(data) - 12])  # cut inside the last row
    empty = store / "20240102-000000_empty"
    empty.mkdir()

    window = open_window(qtbot)
    entries = {e.path.name: e for e in window.history.entries()}
    assert set(entries) == {p.name for p in (good, corrupt, truncated, empty)}
    assert not entries[good.name].damaged
    # a row cut short is skipped and counted; the rest of that run still opens
    assert not entries[truncated.name].damaged
    assert entries[truncated.name].run.load_problems == ["samples.csv: 1 unreadable rows skipped"]
    reasons = {
        corrupt.name: "run.json is damaged",
        empty.name: "run.json does not exist",
    }
    tree = window.history.tree
    items = {tree.topLevelItem(i).data(0, 256): tree.topLevelItem(i) for i in range(tree.topLevelItemCount())}
    for name, reason in reasons.items():
        entry = entries[name]
        assert entry.damaged and reason in entry.problem, entry.problem
        item = items[str(entry.path)]
        assert item.text(4) == "damaged"
        assert reason in item.toolTip(4)
    assert "2 runs, 2 damaged" == window.history.count_label.text()

    # the good run still loads and overlays
    window.history.set_checked(entries[good.name].run.run_id, True)
    its, ms = series_data(window.plots, f"{good.name}/eager")
    assert len(ms) == 40
    assert window.table_model.rowCount() == 1
    assert not window.error_banner.isVisible()


# -- stopping at any moment -------------------------------------------------------------------
def stop_and_check(qtbot, window: MainWindow, measured: list[str]) -> None:
    thread = window.live.benchmark_thread
    job = thread.runner
    run_id, pid = job.run_id, job.worker_pid
    t0 = time.monotonic()
    with qtbot.waitSignal(window.run_finished, timeout=3000):
        window.stop_run()
    assert time.monotonic() - t0 < 3.0
    assert not window.is_running()
    assert window.run_button.isEnabled() and not window.stop_button.isEnabled()
    assert window.config_panel.isEnabled()
    assert has_finished(thread, 3000)
    assert pid is not None and not psutil.pid_exists(pid)
    assert not worker_zygote.workers_left()
    saved = load_run(runs_dir() / run_id)
    assert saved.status == "stopped"
    assert_curves_are_the_saved_samples(window, run_id, measured)


@pytest.mark.inductor
def test_stop_during_a_cold_compile(qtbot, tiny_config):
    window = open_window(qtbot)
    window.start_run(
        BenchmarkConfig(
            **{**tiny_config, "layers": "48,40,8", "variants": ["eager", "default"], "compile_cache": "cold"}
        )
    )
    qtbot.waitUntil(lambda: window.live.compile_elapsed_s() is not None, timeout=RUN_TIMEOUT_MS)
    assert "default: compiling" in window.phase_label.text()
    # every variant compiles before any is timed (rounds start warm): nothing is measured yet
    stop_and_check(qtbot, window, [])
    saved = load_run(runs_dir() / window.current_run.run_id)
    assert all(len(v.samples) == 0 for v in saved.variants.values())
    assert window.table_model.rows()[1].row.status in ("stopped", "failed")


def test_stop_during_warm_up(qtbot, tiny_config):
    window = open_window(qtbot)
    window.start_run(BenchmarkConfig(**{**tiny_config, "warmup": 100_000, "variants": ["eager"]}))
    wait_for_points(qtbot, window, "eager", 50)
    assert "eager: warming up" in window.phase_label.text()
    stop_and_check(qtbot, window, ["eager"])
    s = load_run(runs_dir() / window.current_run.run_id).variants["eager"].samples
    assert set(s.phase) == {"warmup"}


def test_stop_while_measuring_a_compiled_variant(qtbot, tiny_config):
    window = open_window(qtbot)
    window.start_run(BenchmarkConfig(**{**tiny_config, "iterations": 200_000, "rounds": 1000}))
    wait_for_points(qtbot, window, "aot_eager", 50)
    stop_and_check(qtbot, window, ["eager", "aot_eager"])


# -- bad configuration, refused before any work -----------------------------------------------
@pytest.fixture(scope="module")
def hello(worker_fork_server) -> protocol.HelloEvent:
    """The environment a probe reports (only read here: its worker forks, as elsewhere)."""
    with worker_zygote.forked_workers(worker_fork_server):
        return probe_environment()


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"layers": "1024,100000,10"}, "layers", "beyond the limit"),
        ({"layers": "0,10"}, "layers", ""),
        ({"batch_size": 0}, "batch_size", "at least 1"),
        ({"iterations": 0}, "iterations", "at least 1"),
        ({"iterations": 10**9}, "iterations", "at most"),
        ({"warmup": 1, "variants": ["eager", "reduce-overhead"]}, "warmup", "reduce-overhead"),
        ({"dtype": "tf32"}, "dtype", "tf32 is not supported on cpu"),
        ({"device": "cuda:7"}, "device", "cuda:7 is not available"),
        (
            {"layers": "65536,65536,65536", "batch_size": 1_048_576},
            "batch_size",
            "model and batch need about",
        ),
    ],
)
def test_bad_configuration_is_refused_before_any_work(qtbot, tiny_config, hello, change, field, words):
    window = open_window(qtbot)
    window.set_hello(hello)
    window.start_run(BenchmarkConfig(**{**tiny_config, **change}))
    assert not window.is_running()
    text = window.error_text
    assert text.startswith("Cannot run: "), text
    assert f"{field}:" in text or f"{field} " in text, text
    assert words in text
    assert not runs_dir().exists() or not any(runs_dir().iterdir())
    assert not worker_zygote.workers_left()
    if field == "batch_size" and "need about" in words:
        assert "TiB" in text or "GiB" in text  # the estimate itself is shown


def test_saved_config_for_a_missing_gpu_is_flagged_once_the_probe_answers(qtbot, tiny_config):
    settings = AppSettings()
    settings.set_last_config(BenchmarkConfig(**{**tiny_config, "device": "cuda:7"}))
    settings.sync()
    window = open_window(qtbot, probe=True)
    assert window.config_panel.config().device == "cuda:7"
    if window.environment is None:
        with qtbot.waitSignal(window.environment_changed, timeout=60_000):
            pass
    assert "cuda:7" not in window.environment.devices
    assert window.config_panel.config().device == "cuda:7"  # kept, not silently replaced
    assert not window.run_button.isEnabled() and not window.run_action.isEnabled()
    assert "device" in window.run_blocker and "cuda:7 is not available" in window.run_blocker
    assert window.config_panel.error_labels["device"].isVisible()
    window.start_run()
    assert not window.is_running()
    assert "cuda:7 is not available" in window.error_text
    devices = [window.config_panel.device_combo.itemText(i) for i in range(window.config_panel.device_combo.count())]
    assert "cpu" in devices
    assert not runs_dir().exists() or not any(runs_dir().iterdir())
