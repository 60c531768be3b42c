"""The single run as a job (jobs/run_job.py), without Qt: how a session that breaks ends, and
who answers the worker's pauses. The window runs it on gui/job_thread.JobThread like any job."""

from __future__ import annotations

import time

import pytest

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.job import Job, TakesTurns
from compile_studio.jobs.run_job import RunJob
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunStore
from compile_studio.results.storage.recorder import RunRecorder


class Reports:
    def __init__(self) -> None:
        self.events: list[protocol.Event] = []
        self.summaries: list[list] = []
        self.turns: list[protocol.TurnEvent] = []

    def job(self, config: BenchmarkConfig, store: RunStore | None) -> RunJob:
        return RunJob(config, store, on_event=self.events.append, on_summary=self.summaries.append,
                      on_turn=self.turns.append)


@pytest.fixture
def config(tiny_config) -> BenchmarkConfig:
    return BenchmarkConfig.from_dict(tiny_config)


def test_a_run_has_the_job_shape_and_takes_turns(config):
    job = RunJob(config, None)
    assert isinstance(job, Job) and isinstance(job, TakesTurns)
    assert job.fraction() == 0.0 and not job.stop_requested
    job.request_stop("enough")
    assert job.stop_requested


def test_a_session_that_breaks_mid_run_leaves_a_failed_run_said_as_an_internal_error(config, tmp_path, monkeypatch):
    def breaks(session: RunSession):
        session.recorder = RunRecorder(session.config, session.folder)
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(RunSession, "run", breaks)
    reports = Reports()
    job = reports.job(config, RunStore(tmp_path))
    run = job.run()
    assert run is job.result and run.status == "failed" and "the disk went away" in run.message
    (error,) = reports.events
    assert isinstance(error, protocol.ErrorEvent) and error.variant is None
    assert error.kind == protocol.ErrorKind.INTERNAL and error.message == "RuntimeError: the disk went away"
    assert len(reports.summaries) == 1  # the failed run's rows, for the table


def test_a_session_that_breaks_before_recording_anything_raises_after_saying_so(config, monkeypatch):
    def breaks(session: RunSession):
        raise OSError("no worker")

    monkeypatch.setattr(RunSession, "run", breaks)
    reports = Reports()
    job = reports.job(config, None)
    with pytest.raises(OSError, match="no worker"):
        job.run()
    assert [e.message for e in reports.events] == ["OSError: no worker"] and job.result is None


def test_pauses_go_out_only_while_turns_are_taken_else_they_are_answered_at_once(config, monkeypatch):
    reports = Reports()
    job = reports.job(config, None)
    answered: list[tuple[int, object]] = []
    monkeypatch.setattr(job.session, "answer_turn", lambda block, paints=None: answered.append((block, paints)))
    pause = protocol.TurnEvent(block=3, state="pause", variant="eager", sent_ns=time.monotonic_ns(), cap_ms=50.0)
    assert job.session.turn_taker is not None
    job.session.turn_taker(pause)
    assert answered == [(3, None)] and reports.turns == []  # nobody draws: answered at once
    job.take_turns(True)
    job.session.turn_taker(pause)
    assert reports.turns == [pause] and answered == [(3, None)]  # the window answers, once drawn
    job.answer_turn(3, [(1, 2)])
    assert answered == [(3, None), (3, [(1, 2)])]
    job.take_turns(False)
    job.session.turn_taker(protocol.TurnEvent(block=4, state="end", variant="eager", sent_ns=0))
    assert reports.turns == [pause] and answered[-1][0] == 3  # an end needs no answer
