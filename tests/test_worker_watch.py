"""A frozen worker is noticed: a warning soon after the heartbeat stops, the run stopped at the
limit as incomplete with its samples kept; a live worker that stops sending samples is noticed too."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.core.protocol import RunStatus
from compile_studio.jobs.session import RunSession
from compile_studio.jobs.worker_watch import WatchLimits, WorkerWatch
from compile_studio.results import RunStore

pytestmark = pytest.mark.waits  # mostly waits for a service: see tests/support/markers.py


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def _watch(limits=None):
    clock = Clock()
    said: list[tuple[str, str]] = []
    watch = WorkerWatch(
        warn=lambda m: said.append(("warn", m)),
        stop=lambda m: said.append(("stop", m)),
        recovered=lambda m: said.append(("back", m)),
        limits=limits or WatchLimits(silence_warn_s=5, silence_stop_s=60, sample_grace_s=5, stall_stop_s=120,
                                     compile_warn_s=600, compile_stop_s=3600),
        clock=clock,
    )
    return watch, clock, said


def _samples(ms=1.0):
    return protocol.SamplesEvent(variant="eager", phase=protocol.Phase.MEASURE, first_iteration=0,
                                 wall_ms=[ms] * 10, device_ms=None)


def test_silence_warns_once_then_stops_at_the_limit():
    watch, clock, said = _watch()
    watch.saw(protocol.HeartbeatEvent(t_s=0))
    watch.saw(protocol.PhaseEvent(variant="eager", phase=protocol.Phase.MEASURE))
    clock.t += 4.9
    watch.check()
    assert said == []
    clock.t += 0.2
    watch.check()
    watch.check()
    assert [k for k, _ in said] == ["warn"] and "sent nothing" in said[0][1]
    clock.t += 60
    watch.check()
    assert [k for k, _ in said] == ["warn", "stop"] and watch.stopped
    watch.check()
    assert len(said) == 2


def test_a_worker_that_speaks_again_withdraws_the_warning():
    watch, clock, said = _watch()
    watch.saw(protocol.HeartbeatEvent(t_s=0))
    clock.t += 6
    watch.check()
    watch.saw(protocol.HeartbeatEvent(t_s=6))
    assert [k for k, _ in said] == ["warn", "back"]
    clock.t += 3
    watch.check()
    assert len(said) == 2


def test_no_samples_while_beating_is_a_stall_in_a_timed_phase_only():
    watch, clock, said = _watch()
    watch.saw(protocol.PhaseEvent(variant="eager", phase=protocol.Phase.MEASURE))
    watch.saw(_samples(ms=2.0))
    for _ in range(6):  # heartbeats keep coming, samples do not
        clock.t += 1
        watch.saw(protocol.HeartbeatEvent(t_s=clock.t))
        watch.check()
    assert [k for k, _ in said] == ["warn"] and "no sample" in said[0][1]
    said.clear()
    watch.saw(protocol.PhaseEvent(variant="eager", phase=protocol.Phase.BUILD))  # no samples expected here
    assert [k for k, _ in said] == ["back"]
    said.clear()
    for _ in range(300):
        clock.t += 1
        watch.saw(protocol.HeartbeatEvent(t_s=clock.t))
        watch.check()
    assert said == []


def test_once_every_planned_call_is_measured_checks_may_take_their_time():
    watch, clock, said = _watch()
    watch.iterations = 20
    watch.saw(protocol.PhaseEvent(variant="eager", phase=protocol.Phase.MEASURE))
    watch.saw(_samples())
    watch.saw(_samples())  # 20 measured: the correctness checks and diagnostics follow
    for _ in range(60):
        clock.t += 1
        watch.saw(protocol.HeartbeatEvent(t_s=clock.t))
        watch.check()
    assert said == []


def test_a_compile_gets_its_own_budget():
    watch, clock, said = _watch()
    watch.saw(protocol.PhaseEvent(variant="default", phase=protocol.Phase.COMPILE))
    for _ in range(599):
        clock.t += 1
        watch.saw(protocol.HeartbeatEvent(t_s=clock.t))
        watch.check()
    assert said == []
    clock.t += 2
    watch.saw(protocol.HeartbeatEvent(t_s=clock.t))
    watch.check()
    assert [k for k, _ in said] == ["warn"] and "compile" in said[0][1]


def test_the_slowest_recent_call_sets_the_expected_gap():
    watch, clock, said = _watch()
    watch.saw(protocol.PhaseEvent(variant="eager", phase=protocol.Phase.MEASURE))
    watch.saw(_samples(ms=3000.0))  # 3 s calls: 6 s without a sample is not yet a stall
    for _ in range(6):
        clock.t += 1
        watch.saw(protocol.HeartbeatEvent(t_s=clock.t))
        watch.check()
    assert said == []
    assert watch.expected_gap_s() == pytest.approx(3.0 + protocol.SAMPLE_BATCH_S)


#: a SIGSTOPped worker is warned about after 5 s of silence (five heartbeats) and stopped a
#: second later: the stop limit is only reached once the worker is frozen
SILENCE_STOP_S = 6


needs_sigstop = pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP")


def resume(pid: int | None) -> None:
    """SIGCONT a worker the test stopped (if it is still there)."""
    if pid:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


@needs_sigstop
def test_a_worker_stopped_by_sigstop_is_warned_about_then_stopped_keeping_its_samples(tiny_config, tmp_path):
    config = BenchmarkConfig.from_dict({**tiny_config, "variants": ["eager"], "iterations": 1_000_000,
                                        "rounds": 1, "diagnostics": False})
    events: list[tuple[float, protocol.Event]] = []
    measuring = threading.Event()

    def on_event(event):
        events.append((time.monotonic(), event))
        if isinstance(event, protocol.SamplesEvent) and event.phase == protocol.Phase.MEASURE:
            measuring.set()

    limits = WatchLimits(silence_warn_s=5, silence_stop_s=SILENCE_STOP_S)
    session = RunSession(config, RunStore(tmp_path / "runs"), on_event=on_event, watch_limits=limits)
    outcome: list = []
    runner = threading.Thread(target=lambda: outcome.append(session.run()), daemon=True)
    runner.start()
    pid = None
    try:
        assert measuring.wait(120), "the run never reached its timed calls"
        pid = session.worker_pid
        assert pid
        os.kill(pid, signal.SIGSTOP)
        stopped_at = time.monotonic()
        last_sample = max(t for t, e in events if isinstance(e, protocol.SamplesEvent))
        deadline = time.monotonic() + 30
        warning = None
        while warning is None and time.monotonic() < deadline:
            warning = next((t for t, e in events if isinstance(e, protocol.WarningEvent)
                            and "sent nothing" in e.message), None)
            time.sleep(0.1)
        assert warning is not None, "no warning about the silent worker"
        # the expected next sample was due ~50 ms after the last one
        assert warning - last_sample <= 10.0 + 0.5
        runner.join(60)
        assert not runner.is_alive(), "the run did not end at the watch's limit"
    finally:
        resume(pid)
    result = outcome[0]
    assert result.status == RunStatus.INCOMPLETE
    assert "sent nothing" in result.run.message
    assert len(result.run.variants["eager"].samples) > 0
    assert time.monotonic() - stopped_at < SILENCE_STOP_S + 20


@needs_sigstop
def test_a_shape_sweep_worker_stopped_by_sigstop_is_warned_about_then_stopped_keeping_its_points(
    tiny_config, tmp_path
):
    from compile_studio.jobs.shape_sweep_run import ShapeSweepRun, new_shape_sweep, shape_request

    config = BenchmarkConfig.from_dict({**tiny_config, "variants": ["eager", "aot_eager"]})
    folder = new_shape_sweep(shape_request(config, list(range(1, 65)), repeats=200), tmp_path / "sweeps")
    first_point = threading.Event()
    limits = WatchLimits(silence_warn_s=5, silence_stop_s=SILENCE_STOP_S)
    run = ShapeSweepRun(folder, on_point=lambda record: first_point.set(), watch_limits=limits)
    outcome: list = []
    runner = threading.Thread(target=lambda: outcome.append(run.run()), daemon=True)
    runner.start()
    pid = None
    try:
        assert first_point.wait(120), "no shape point came"
        pid = run._worker.pid
        os.kill(pid, signal.SIGSTOP)
        stopped_at = time.monotonic()
        deadline = stopped_at + 30
        while not run.watch_warnings and time.monotonic() < deadline:
            time.sleep(0.1)
        assert run.watch_warnings and "sent nothing" in run.watch_warnings[0]
        assert time.monotonic() - stopped_at <= 10.0 + 0.5
        runner.join(60)
        assert not runner.is_alive(), "the shape sweep did not end at the watch's limit"
    finally:
        resume(pid)
    (result,) = outcome
    assert result.record.status == "stopped" and "sent nothing" in result.record.message
    assert result.record.points, "the points measured before the stop are kept"
