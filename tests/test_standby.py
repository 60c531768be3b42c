"""A worker started ahead of the next run: real window, real worker processes, tiny MLP."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import psutil
import pytest

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.paths import runs_dir
from compile_studio.gui.standby import STANDBY_ENV
from compile_studio.jobs.session import RunSession, standby_launcher
from compile_studio.launchers.standby_worker import StandbyWorker
from compile_studio.results import RunStore
from support import worker_zygote
from support.gui_helpers import RUN_TIMEOUT_MS, open_window

pytestmark = pytest.mark.long

READY_TIMEOUT_MS = 60_000
#: a test of what happens while the worker started ahead still imports torch: a fresh process
#: (a forked one has imported it already); the others fork theirs (tests/support/worker_zygote.py)
IMPORTING = pytest.mark.fresh_worker


@pytest.fixture(autouse=True)
def standby_on(monkeypatch):
    monkeypatch.setenv(STANDBY_ENV, "1")


def gone(p: psutil.Process, within_s: float = 5.0) -> bool:
    """Whether ``p`` ends within ``within_s`` (a zombie not reaped yet counts): a SIGKILL
    takes effect when the process is next scheduled, a moment later on a busy machine."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def wait_ready(qtbot, window: MainWindow) -> int:
    """Wait until the window's worker started ahead is ready; its pid."""
    qtbot.waitUntil(
        lambda: window.live.standby.standby is not None and window.live.standby.standby.state == "ready",
        timeout=READY_TIMEOUT_MS,
    )
    return window.live.standby.standby.pid


def saved_measurement(run_id: str) -> dict:
    return json.loads((runs_dir() / run_id / "run.json").read_text())["measurement"]


def test_the_window_starts_a_worker_ahead_and_run_uses_it(qtbot, tiny_config):
    window = open_window(qtbot)
    qtbot.waitUntil(lambda: window.live.standby.standby is not None, timeout=5000)
    if window.live.standby.standby.state == "starting":
        assert window.phase_label.text() == "starting a worker: importing torch…"
    pid = wait_ready(qtbot, window)
    assert psutil.pid_exists(pid)
    # the state is set on the standby's thread; the label follows through a queued signal
    qtbot.waitUntil(lambda: window.phase_label.text().startswith("worker ready (torch "), timeout=5000)

    config = BenchmarkConfig(**tiny_config)
    with qtbot.waitSignal(window.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.start_run(config)
        thread = window.live.benchmark_thread
        job = thread.runner
        assert window.live.status_text() == "worker ready: starting the run…"
        # no worker is started ahead while the run goes on
        assert window.live.standby.standby is None
    run = blocker.args[0]
    assert run.status == "complete", run.message
    assert job.worker_pid == pid
    assert run.measurement["worker_prestarted"] is True
    assert saved_measurement(run.run_id)["worker_prestarted"] is True
    for name in ("eager", "aot_eager"):
        samples = run.variants[name].samples
        assert len(samples) == config.iterations + config.warmup
    rows = {r.row.name: r.row for r in window.table_model.rows()}
    assert rows["eager"].median_ms > 0 and rows["aot_eager"].median_ms > 0
    assert not window.error_banner.isVisible()
    assert window.phase_label.text() == "done"

    # once the run has ended, the next one is started ahead
    next_pid = wait_ready(qtbot, window)
    assert next_pid != pid and not psutil.pid_exists(pid)

    # a cold compile cache needs a process of its own: a new worker, the ready one is kept
    cold = BenchmarkConfig(**{**tiny_config, "variants": ["eager"], "compile_cache": "cold"})
    with qtbot.waitSignal(window.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.start_run(cold)
        thread = window.live.benchmark_thread
        job = thread.runner
    run = blocker.args[0]
    assert run.status == "complete", run.message
    assert job.worker_pid != next_pid
    assert run.measurement["worker_prestarted"] is False
    assert window.live.standby.standby is not None and window.live.standby.standby.pid == next_pid

    # closing the window ends it: no worker process is left
    ahead = psutil.Process(next_pid)
    window.close()
    assert gone(ahead)
    assert not worker_zygote.workers_left()


@IMPORTING
def test_run_pressed_while_the_worker_imports_torch_waits_for_that_worker(qtbot, tiny_config):
    window = open_window(qtbot)
    qtbot.waitUntil(
        lambda: window.live.standby.standby is not None and window.live.standby.standby.pid is not None,
        timeout=5000,
    )
    standby = window.live.standby.standby
    pid = standby.pid
    config = BenchmarkConfig(**{**tiny_config, "variants": ["eager"]})
    with qtbot.waitSignal(window.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.start_run(config)
        thread = window.live.benchmark_thread
        job = thread.runner
        text = window.live.status_text()  # read first: the hello may arrive at any moment
        if standby.hello is None:
            assert text == "starting a worker: importing torch…"
    run = blocker.args[0]
    assert run.status == "complete", run.message
    assert job.worker_pid == pid
    assert run.measurement["worker_prestarted"] is True


def test_a_worker_started_ahead_that_died_is_replaced_quietly(qtbot, tiny_config):
    window = open_window(qtbot)
    pid = wait_ready(qtbot, window)
    os.kill(pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: window.live.standby.standby is None, timeout=5000)
    assert window.phase_label.text() == ""

    config = BenchmarkConfig(**{**tiny_config, "variants": ["eager"]})
    with qtbot.waitSignal(window.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.start_run(config)
        thread = window.live.benchmark_thread
        job = thread.runner
    run = blocker.args[0]
    assert run.status == "complete", run.message
    assert job.worker_pid != pid
    assert run.measurement["worker_prestarted"] is False
    assert window.last_error == "" and not window.error_banner.isVisible()


@IMPORTING
def test_a_run_replaces_a_worker_started_ahead_that_ends_before_its_hello(tiny_config, tmp_path):
    standby = StandbyWorker(standby_launcher(), hello_timeout_s=60)
    standby.start()
    worker = standby.take()  # taken while it still imports torch
    assert worker is not None and standby.state == "taken"
    worker.kill()
    lines: list[str] = []
    session = RunSession(
        BenchmarkConfig(**{**tiny_config, "variants": ["eager"]}), RunStore(tmp_path),
        standby=standby, on_log=lines.append,
    )
    outcome = session.run()
    assert outcome.status == "complete", outcome.run.message
    assert session.worker_pid != worker.pid
    assert outcome.run.measurement["worker_prestarted"] is False
    assert any("the worker started ahead had ended" in line for line in lines), lines
    assert not psutil.pid_exists(worker.pid)


def test_the_cli_session_never_uses_a_worker_started_ahead(tiny_config, tmp_path):
    outcome = RunSession(BenchmarkConfig(**{**tiny_config, "variants": ["eager"]}), RunStore(tmp_path)).run()
    assert outcome.status == "complete", outcome.run.message
    assert outcome.run.measurement["worker_prestarted"] is False


@IMPORTING
def test_closing_the_window_while_the_worker_imports_torch_leaves_no_process(qtbot):
    window = open_window(qtbot)
    qtbot.waitUntil(
        lambda: window.live.standby.standby is not None and window.live.standby.standby.pid is not None,
        timeout=5000,
    )
    pid = window.live.standby.standby.pid
    qtbot.wait(300)  # long enough for the worker to start helpers of its own
    ahead = psutil.Process(pid)
    below = ahead.children(recursive=True)
    window.close()
    for p in [ahead, *below]:
        assert gone(p), p
    assert not worker_zygote.workers_left()


def test_turned_off_no_worker_is_started_ahead(qtbot, monkeypatch):
    monkeypatch.setenv(STANDBY_ENV, "0")
    window = open_window(qtbot)
    qtbot.wait(800)
    assert window.live.standby.standby is None
    assert not worker_zygote.workers_left()


def test_the_window_takes_its_environment_from_the_worker_started_ahead(qtbot):
    """One process imports torch at start-up, not two: no probe runs beside the standby."""
    window = open_window(qtbot, probe=True)
    qtbot.waitUntil(lambda: window.machine.hello is not None, timeout=READY_TIMEOUT_MS)
    standby = window.live.standby.standby
    assert window.machine.probe is None, "no start-up probe beside the worker started ahead"
    assert standby is not None and window.machine.hello.pid == standby.pid
    assert window.environment is not None and window.env_label.text().startswith("torch ")


def test_without_a_worker_started_ahead_the_probe_asks(qtbot, monkeypatch):
    monkeypatch.setenv("COMPILE_STUDIO_WORKER_PREFIX", "env")  # a wrapped command: started per run
    window = open_window(qtbot, probe=True)
    qtbot.waitUntil(lambda: window.machine.hello is not None, timeout=READY_TIMEOUT_MS)
    assert window.live.standby.standby is None
    assert window.machine.probe is not None


@IMPORTING
def test_a_sweep_ends_a_worker_still_importing_and_none_starts_while_it_runs(qtbot):
    from compile_studio.jobs.sweep_spec import SweepSpec

    window = open_window(qtbot)
    qtbot.waitUntil(lambda: window.live.standby.standby is not None, timeout=5000)
    starting = window.live.standby.standby
    base = BenchmarkConfig.from_dict(
        {"layers": "16,16,4", "device": "cpu", "iterations": 10, "warmup": 2, "rounds": 1,
         "warmup_min_ms": 0, "variants": ["eager"], "compile_timing": "in_run"}
    )
    view = window.sweep_view
    assert view.start(SweepSpec.parse("batch_size", "1,2"), base)
    if starting.state != "ready":  # still importing torch when the sweep began: ended
        assert window.live.standby.standby is None
    window.live.standby.start_now()
    assert window.live.standby.standby in (None, starting), "none started beside the sweep"
    qtbot.waitUntil(lambda: not view.is_running(), timeout=RUN_TIMEOUT_MS)
    qtbot.waitUntil(lambda: window.live.standby.standby is not None, timeout=5000)


def test_a_detached_listener_is_not_called_again_and_detach_waits_for_a_call_under_way():
    """The window detaches from its worker started ahead before it may be deleted: after
    ``detach`` returns, no call from the standby's thread is under way or comes later (one
    into a Qt object being deleted crashed the test process under load)."""
    entered, release, detached = threading.Event(), threading.Event(), threading.Event()
    calls: list[str] = []

    def listener() -> None:
        calls.append(threading.current_thread().name)
        entered.set()
        release.wait(30)

    standby = StandbyWorker(standby_launcher(), on_change=listener)  # never started: no process
    closing = threading.Thread(target=standby.close, name="closing")  # says "closed" to the listener
    closing.start()
    assert entered.wait(30)
    detaching = threading.Thread(target=lambda: (standby.detach(), detached.set()))
    detaching.start()
    assert not detached.wait(0.2)  # the listener is still running: detach cannot have returned
    release.set()
    assert detached.wait(30)
    closing.join(30)
    detaching.join(30)
    standby._end("a later change of state")
    assert calls == ["closing"]
