"""The run session: one way to drive a run, for the CLI and the window alike."""

from __future__ import annotations

import csv
import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

from compile_studio.cli import commands as cli
from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.session import Progress, RunSession
from compile_studio.launchers.supervisor import ProbeFailed, WorkerLauncher, probe_environment
from compile_studio.results import RunStore


def fake_worker(tmp_path: Path, version: int) -> WorkerLauncher:
    """A worker stand-in that says hello with ``version`` and then waits for stdin."""
    script = tmp_path / "other_worker.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, sys
            print(json.dumps({{"type": "hello", "protocol": {version}, "app_version": "9.9",
                              "pid": 1, "environment": {{"devices": ["cpu"]}}}}), flush=True)
            for line in sys.stdin:
                if line.strip() == "stop":
                    break
            """
        )
    )
    return WorkerLauncher(command=(sys.executable, str(script)))


def test_a_worker_of_another_protocol_version_is_refused(tmp_path, tiny_config):
    launcher = fake_worker(tmp_path, protocol.PROTOCOL_VERSION + 7)
    errors: list[protocol.ErrorEvent] = []
    session = RunSession(
        BenchmarkConfig.from_dict(tiny_config),
        RunStore(tmp_path / "runs"),
        launcher=launcher,
        on_event=lambda e: errors.append(e) if isinstance(e, protocol.ErrorEvent) else None,
    )
    outcome = session.run()
    assert outcome.status == protocol.RunStatus.FAILED
    words = f"protocol version {protocol.PROTOCOL_VERSION + 7}"
    ours = f"version {protocol.PROTOCOL_VERSION}"
    assert words in outcome.run.message and ours in outcome.run.message
    assert [e.kind for e in errors] == [protocol.ErrorKind.PROTOCOL]
    # the folder says so too
    doc = json.loads((outcome.folder / "run.json").read_text())
    assert doc["status"] == "failed" and words in doc["message"]
    # and the environment probe refuses it the same way
    with pytest.raises(protocol.ProtocolMismatch, match=words):
        probe_environment(launcher, timeout_s=30)


def test_a_worker_that_says_nothing_fails_the_probe_with_how_it_ended(tmp_path):
    script = tmp_path / "silent.py"
    script.write_text("import sys\nsys.stderr.write('no torch here\\n')\nsys.exit(4)\n")
    with pytest.raises(ProbeFailed, match="exited with code 4: no torch here"):
        probe_environment(WorkerLauncher(command=(sys.executable, str(script))), timeout_s=30)


def test_what_a_worker_wrote_just_before_it_ended_is_said_when_its_log_is_read_late(tmp_path, monkeypatch):
    """On a busy machine the thread that reads the worker's log may run only after the worker
    has ended: its last words still reach the message (the pipes close after the log is read)."""
    from compile_studio.launchers.supervisor import WorkerProcess

    read = WorkerProcess._read_stderr

    def late(self) -> None:
        time.sleep(0.5)
        read(self)

    monkeypatch.setattr(WorkerProcess, "_read_stderr", late)
    script = tmp_path / "silent.py"
    script.write_text("import sys\nsys.stderr.write('no torch here\\n')\nsys.exit(4)\n")
    with pytest.raises(ProbeFailed, match="exited with code 4: no torch here"):
        probe_environment(WorkerLauncher(command=(sys.executable, str(script))), timeout_s=30)


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_progress_eta_comes_from_the_calls_own_times_and_leaves_compiles_out():
    clock = FakeClock()
    config = BenchmarkConfig(variants=["eager", "default"], iterations=1000, warmup=20, warmup_min_ms=200)
    p = Progress(config, clock=clock)
    assert p.eta_s() is None and p.fraction() == 0.0 and p.compiles_left()
    # eager warms up: 20 calls of 5 ms (100 ms, under the 200 ms minimum)
    p.update(protocol.PhaseEvent(variant="eager", phase=protocol.Phase.WARMUP, iterations=20))
    clock.t += 0.1
    p.update(protocol.SamplesEvent("eager", protocol.Phase.WARMUP, 0, [5.0] * 20))
    # eager: 0.1 s of warm-up left + 1000 calls × 5 ms × 1.1; default guessed the same, 0.2 s warm-up
    assert p.eta_s() == pytest.approx(0.1 + 5.5 + 0.2 + 5.5)
    # the timed calls take 1 ms each, and the worker 1.25 ms per call
    for i in range(10):
        clock.t += 0.125
        p.update(protocol.SamplesEvent("eager", protocol.Phase.MEASURE, 20 + 100 * i, [1.0] * 100))
    assert p.overhead() == pytest.approx(1.25)
    assert p.eta_s() == pytest.approx(0.2 + 1000 * 0.001 * 1.25)  # default: guessed from eager
    assert p.compiles_left() and not p.after_timing()
    assert 0.0 < p.fraction() < 1.0
    p.update(protocol.PhaseEvent(variant="default", phase=protocol.Phase.COMPILE, iterations=1))
    clock.t += 30  # a 30 s compile does not change the estimate
    assert p.compile_elapsed_s() == pytest.approx(30.0)
    assert p.eta_s() == pytest.approx(0.2 + 1.25) and not p.compiles_left()
    p.update(protocol.PhaseEvent(variant="default", phase=protocol.Phase.WARMUP, iterations=20))
    assert p.compile_elapsed_s() is None and p.compile_spent_s == pytest.approx(30.0)
    p.update(protocol.SamplesEvent("default", protocol.Phase.MEASURE, 20, [0.5] * 1000))
    # every timed call is in: nothing is left to count, the run checks, profiles and saves
    assert p.after_timing() and p.eta_s() == 0.0 and p.fraction() == 1.0
    clock.t += 7
    assert p.after_timing_s() == pytest.approx(7.0)


def test_progress_during_a_long_time_based_warm_up_is_not_minutes_off():
    """Thousands of warm-up calls (a tiny model under a time-based warm-up), the first ones slow."""
    clock = FakeClock()
    config = BenchmarkConfig(variants=["eager", "aot_eager"], iterations=200, warmup=20, warmup_min_ms=3000)
    p = Progress(config, clock=clock)
    p.update(protocol.SamplesEvent("eager", protocol.Phase.WARMUP, 0, [400.0] + [0.05] * 2000))
    clock.t += 0.5
    for i in range(20):  # 2.5 s more of 0.05 ms calls
        clock.t += 0.125
        p.update(protocol.SamplesEvent("eager", protocol.Phase.WARMUP, 2001 + 2500 * i, [0.05] * 2500))
    eta = p.eta_s()
    # eager: its warm-up is done (3.0 s of calls); 200 × 0.05 ms each variant, 3 s of aot_eager's warm-up
    assert eta == pytest.approx(3.0 + 2 * 200 * 0.05e-3 * 1.1, rel=0.01)


# -- the same run through the CLI and through the window -----------------------------------

#: run.json keys and summary columns that hold timings, ids or the machine's state
_TIMING_KEYS = {
    "created", "run_id", "stats", "compile_s", "first_call_ms", "peak_memory_bytes",
    "max_abs_error", "max_rel_error", "median_ms", "mean_ms", "p5_ms", "p95_ms", "iqr_pct",
    "speedup", "speedup_lo", "speedup_hi", "break_even_calls", "throughput_per_s", "tflops",
    "noisy", "pid", "inductor_cache_dir", "device_memory", "harness_floor_ms", "pipelined_ms",
    "unpinned_ms",
    "load_before", "load_after",
    "clock",
    # the pauses between blocks of timed calls: how many depends on how fast the calls were
    "turns",
    # the diagnostics' profile figures (measurement.why)
    "wall_ms_per_call", "busy", "gemm_share", "device_ms_per_call",
    "gemm_share_of_ops", "gemm_share_of_ops_calls", "op_ms_calls", "op_spread",
}


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in _TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


#: summary columns that do not depend on how fast the calls were
_STABLE_SUMMARY = (
    "name", "status", "n", "allclose", "graphs", "graph_breaks", "recompiles",
    "recompiles_in_window", "rounds", "error",
)


def _folder_shape(folder: Path) -> dict:
    """What a run folder holds, timings and ids left out."""
    doc = json.loads((folder / "run.json").read_text())
    stored_summary = doc.pop("summary")
    with open(folder / "samples.csv", newline="") as fh:
        samples = [
            (r["variant"], r["iteration"], r["phase"], r["round"]) for r in csv.DictReader(fh)
        ]
    with open(folder / "summary.csv", newline="") as fh:
        summary = [{k: r[k] for k in _STABLE_SUMMARY if k in r} for r in csv.DictReader(fh)]
    assert [r["name"] for r in stored_summary] == [r["name"] for r in summary]
    return {
        "files": sorted(p.name for p in folder.iterdir()),
        "run.json": _without_timings(doc),
        "samples": samples,
        "summary": summary,
    }


def test_cli_and_window_drive_the_same_session_and_write_the_same_folder(
    qtbot, tmp_path, tiny_config, monkeypatch
):
    from compile_studio.gui.job_thread import JobThread
    from compile_studio.jobs.run_job import RunJob

    sessions: list[RunSession] = []
    original = RunSession.run

    def spy(self: RunSession):
        sessions.append(self)
        return original(self)

    monkeypatch.setattr(RunSession, "run", spy)
    tiny_config["label"] = "same run"
    config = BenchmarkConfig.from_dict(tiny_config)

    cli_store = tmp_path / "cli"
    args = ["run", "--out", str(cli_store), "--quiet", "--config", str(tmp_path / "c.json")]
    (tmp_path / "c.json").write_text(config.to_json())
    assert cli.main(args) == cli.EXIT_OK

    job = RunJob(config, RunStore(tmp_path / "gui"))
    thread = JobThread(job)
    with qtbot.waitSignal(thread.finished_job, timeout=120_000):
        thread.start()
    assert thread.wait(10_000)

    assert len(sessions) == 2 and all(type(s) is RunSession for s in sessions)
    cli_folder = next(cli_store.iterdir())
    gui_folder = job.folder
    assert cli_folder != gui_folder
    cli_shape, gui_shape = _folder_shape(cli_folder), _folder_shape(gui_folder)
    assert cli_shape["run.json"]["status"] == "complete"
    assert len(cli_shape["samples"]) == 2 * (tiny_config["iterations"] + tiny_config["warmup"])
    for folder in (cli_folder, gui_folder):  # both timed their calls in blocks, with pauses
        assert json.loads((folder / "run.json").read_text())["measurement"]["turns"]["eager"]["blocks"] >= 1
    for key in cli_shape["run.json"].keys() | gui_shape["run.json"].keys():
        assert cli_shape["run.json"].get(key) == gui_shape["run.json"].get(key), key
    assert cli_shape == gui_shape
