"""The worker process with real torch: samples, compile time, correctness, files, stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from compile_studio.core import protocol
from compile_studio.launchers.supervisor import WorkerProcess, worker_command
from compile_studio.results import RunStore, load_run, summarize
from compile_studio.results.storage.recorder import RunRecorder
from support import worker_zygote

pytestmark = pytest.mark.long


def decode(line: str) -> dict | None:
    """One protocol line as its wire dict (None when not an event)."""
    event = protocol.decode(line)
    return protocol.to_dict(event) if event is not None else None


def run_through_worker(config: dict, store: RunStore, stop_when=None):
    """Run ``config`` in a real worker process; returns (recorder, events as dicts, worker)."""
    recorder = RunRecorder.in_store(store, config, "test")
    events = []
    worker = WorkerProcess()
    try:
        worker.send_config(config)
        for event in worker.events():
            events.append(protocol.to_dict(event))
            recorder.handle(event)
            if stop_when is not None and stop_when(events[-1], events):
                worker.request_stop()
                stop_when = None
        worker.wait(timeout=30)
    finally:
        worker.stop()
    return recorder, events, worker


@pytest.fixture(scope="module")
def inductor_run(tmp_path_factory, worker_fork_server):
    config = {
        "layers": "32,32,8",
        "batch_size": 4,
        "device": "cpu",
        "iterations": 40,
        "warmup": 6,
        "warmup_min_ms": 0,
        "variants": ["eager", "aot_eager", "default"],
    }
    store = RunStore(tmp_path_factory.mktemp("store"))
    # the worker forks from the test server, as conftest.py's ``forked_worker_starts`` has it do
    # for each test (a module-scoped fixture runs before it); its isolated first calls are
    # fresh processes still: the worker starts those itself
    with worker_zygote.forked_workers(worker_fork_server):
        return run_through_worker(config, store) + (config,)


@pytest.mark.inductor
def test_run_produces_planned_samples(inductor_run):
    recorder, events, worker, config = inductor_run
    assert events[0]["type"] == protocol.HELLO
    assert events[-1]["type"] == "done" and events[-1]["status"] == "complete"
    run = recorder.run
    assert run.status == "complete"
    assert list(run.variants) == config["variants"]
    for v in run.variants.values():
        assert v.status == "done"
        assert v.samples.count("measure") == config["iterations"]
        assert v.samples.count("warmup") == config["warmup"]
        assert v.samples.iteration == list(range(config["iterations"] + config["warmup"]))
        assert all(w > 0 for w in v.samples.wall_ms)
        assert v.allclose is True
        assert v.max_abs_error is not None and v.max_abs_error < 1e-4
    for name in ("aot_eager", "default"):
        v = run.variants[name]
        assert v.compile_s is not None and v.compile_s > 0
        assert v.compile_timing == "isolated"  # timed in a fresh process
        assert v.graphs == 1 and v.graph_breaks == 0
        assert v.recompiles_in_window == 0
    assert worker.proc.returncode == 0


@pytest.mark.inductor
def test_samples_are_batched_and_compile_time_apart(inductor_run):
    _, events, _, config = inductor_run
    batches = [e for e in events if e["type"] == protocol.SAMPLES]
    total = sum(len(b["wall_ms"]) for b in batches)
    assert total == 3 * (config["iterations"] + config["warmup"])
    assert len(batches) < total  # batched, not one event per sample
    compiled = [e for e in events if e["type"] == protocol.COMPILED]
    assert {e["variant"] for e in compiled} == {"aot_eager", "default"}
    # the compile call is not a sample: the largest sample is far below it
    for e in compiled:
        samples = [w for b in batches if b["variant"] == e["variant"] for w in b["wall_ms"]]
        assert max(samples) < e["first_call_ms"]


@pytest.mark.inductor
def test_summary_and_files_read_back_equal(inductor_run):
    recorder, _, _, _ = inductor_run
    folder = recorder.folder
    # beside the run's own files: its diagnostics (why.json, a trace per variant, output code)
    names = {p.name for p in folder.iterdir() if not p.name.startswith(("trace_", "code_"))}
    assert names == {"run.json", "samples.csv", "summary.csv", "why.json"}
    loaded = load_run(folder)
    assert loaded == recorder.run
    rows = summarize(loaded)
    eager = next(r for r in rows if r.name == "eager")
    assert eager.speedup == pytest.approx(1.0)
    for r in rows:
        assert r.median_ms > 0 and r.n == 40
        if r.name != "eager":
            assert r.speedup_lo <= r.speedup <= r.speedup_hi
    doc = json.loads((folder / "run.json").read_text())
    assert doc["status"] == "complete" and doc["environment"]["torch"]
    assert doc["config"]["variants"] == ["eager", "aot_eager", "default"]
    summary = (folder / "summary.csv").read_text().splitlines()
    assert len(summary) == 4 and summary[0].startswith("name,status,n,compile_s")


def _first_measure(event, events):
    return event["type"] == protocol.SAMPLES and event["phase"] == "measure"


def test_stop_mid_run_leaves_readable_stopped_run(tmp_path, tiny_config):
    tiny_config["iterations"] = 200_000
    store = RunStore(tmp_path)
    t0 = time.monotonic()
    recorder, events, worker = run_through_worker(tiny_config, store, stop_when=_first_measure)
    assert time.monotonic() - t0 < 60
    assert events[-1]["type"] == "done" and events[-1]["status"] == "stopped"
    loaded = load_run(recorder.folder)
    assert loaded.status == "stopped"
    eager = loaded.variants["eager"]
    assert 0 < eager.samples.count("measure") < 200_000
    assert loaded == recorder.run


@pytest.fixture
def start_worker(worker_fork_server) -> Iterator[Callable[..., subprocess.Popen]]:
    """Starts ``python -m compile_studio.worker ARGS`` with pipes to this test, its stderr read
    apart. The process forks from the test server when a fresh start would be the same process
    (conftest.py): the same worker code and protocol, less its import of torch. An environment
    with other import-time variables (``TORCH_LOGS``) starts it with Popen."""
    started: list = []

    def start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        popen = subprocess.Popen
        if worker_fork_server is not None and worker_fork_server.ready(timeout_s=120):
            popen = worker_zygote.PopenThroughZygote(worker_fork_server).Popen
        proc = popen(
            worker_command(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1, env=env,
        )
        started.append(proc)
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait(30)


def run_worker(proc, text: str, timeout: float = 120) -> tuple[int, str]:
    """``text`` to the worker's stdin, then end of input; its exit status and whole stdout."""
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    if text:
        proc.stdin.write(text)
    proc.stdin.close()
    reader.join(timeout)
    assert not reader.is_alive(), f"the worker wrote no end of output within {timeout} s"
    return proc.wait(timeout), out[0]


def _start_raw_worker(start_worker, config: dict) -> subprocess.Popen:
    proc = start_worker()
    proc.stdin.write(json.dumps(config) + "\n")
    proc.stdin.flush()
    return proc


def _read_until_measure(proc) -> list[dict]:
    events = []
    for line in proc.stdout:
        e = decode(line)
        events.append(e)
        if e["type"] == "samples" and e["phase"] == "measure":
            return events
    raise AssertionError(f"no measure samples: {events}")


@pytest.mark.parametrize("how", ["sigterm", "eof"])
def test_sigterm_or_end_of_stdin_stops_within_2s(start_worker, tiny_config, how):
    tiny_config["iterations"] = 200_000
    proc = _start_raw_worker(start_worker, tiny_config)
    try:
        _read_until_measure(proc)
        t0 = time.monotonic()
        if how == "sigterm":
            proc.send_signal(signal.SIGTERM)
        else:
            proc.stdin.close()
        rest = [decode(line) for line in proc.stdout]
        proc.wait(5)
        elapsed = time.monotonic() - t0
    finally:
        proc.kill()
    assert elapsed < 2.0
    assert rest[-1]["type"] == "done" and rest[-1]["status"] == "stopped"


def test_stop_during_compile_returns_quickly(start_worker, tiny_config):
    """A cold-cache Inductor compile takes seconds; stop must not wait for it."""
    tiny_config.update(variants=["eager", "default"], compile_cache="cold", layers="48,40,8")
    proc = _start_raw_worker(start_worker, tiny_config)
    try:
        for line in proc.stdout:
            e = decode(line)
            if e["type"] == "phase" and e["phase"] == "compile":
                break
        time.sleep(0.3)
        t0 = time.monotonic()
        proc.stdin.write("stop\n")
        proc.stdin.flush()
        rest = [decode(line) for line in proc.stdout]
        proc.wait(5)
        elapsed = time.monotonic() - t0
    finally:
        proc.kill()
    assert elapsed < 2.5
    assert rest[-1]["type"] == "done" and rest[-1]["status"] == "stopped"


def test_bad_config_reported_by_worker(start_worker, tiny_config):
    tiny_config["device"] = "cuda:7"
    _, stdout = run_worker(start_worker(), json.dumps(tiny_config) + "\n")
    events = [decode(line) for line in stdout.splitlines()]
    err = next(e for e in events if e["type"] == "error")
    assert err["kind"] == "device_unavailable"
    assert "cuda:7" in err["message"]
    assert events[-1]["status"] == "failed"


def test_a_stop_ahead_of_the_configuration_ends_the_worker_stopped(start_worker):
    """A stop can race the configuration to a worker started ahead: it is a stop, not a bad config."""
    returncode, stdout = run_worker(start_worker(), "stop\n")
    events = [decode(line) for line in stdout.splitlines()]
    assert not [e for e in events if e["type"] == "error"]
    assert events[-1]["type"] == "done" and events[-1]["status"] == "stopped"
    assert returncode == 0


def test_hello_lists_modes_from_torch(start_worker):
    proc = start_worker("--hello")
    assert proc.args == [sys.executable, "-m", "compile_studio.worker", "--hello"]
    _, out = run_worker(proc, "")
    hello = decode(out.splitlines()[0])
    env = hello["environment"]
    import torch._inductor

    assert env["compile_modes"][0] == "default"
    assert set(env["compile_modes"]) == set(torch._inductor.list_mode_options())
    assert "aot_eager" in env["compile_backends"]
    assert "cpu" in env["devices"]


def test_stray_prints_do_not_break_the_protocol(start_worker, tiny_config):
    """Compiler logs go to stderr; stdout carries protocol lines only. (``TORCH_LOGS`` is read
    when torch is imported: this worker is a fresh process, started with Popen.)"""
    tiny_config["iterations"] = 5
    env = dict(os.environ, TORCH_LOGS="graph_breaks")
    proc = start_worker(env=env)
    assert isinstance(proc, subprocess.Popen)
    _, stdout = run_worker(proc, json.dumps(tiny_config) + "\n")
    for line in stdout.splitlines():
        assert protocol.decode(line) is not None, line


def test_interleaved_blocks_alternate_and_count_no_false_recompiles(tmp_path, tiny_config):
    tiny_config.update(rounds=4, iterations=20)
    recorder, events, _ = run_through_worker(tiny_config, RunStore(tmp_path))
    # blocks alternate: eager, aot_eager, eager, ... (a block may reach us in several batches)
    order: list[tuple[int, str]] = []
    for e in events:
        if e["type"] == "samples" and e["phase"] == "measure":
            key = (e["round"], e["variant"])
            if not order or order[-1] != key:
                order.append(key)
    assert order == [(r, v) for r in range(4) for v in ("eager", "aot_eager")]
    run = recorder.run
    assert run.variants["aot_eager"].recompiles_in_window == 0
    for v in run.variants.values():
        assert v.samples.count("measure") == 20
        assert v.samples.iteration == list(range(25))
