"""Timed calls come in blocks of about half a second; between two blocks the worker waits for
whoever draws (a window) to answer, at most a short cap (a CLI answers at once)."""

from __future__ import annotations

import json

import numpy as np

from compile_studio.cli import commands as cli
from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.engine.turns import ANSWER_CAP_S, BLOCK_S, SETTLE_S
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunStore
from compile_studio.results.report.turns_text import turns_line


def _eager_only(tiny_config: dict, iterations: int) -> BenchmarkConfig:
    return BenchmarkConfig.from_dict(
        {**tiny_config, "variants": ["eager"], "iterations": iterations, "warmup": 20,
         "rounds": 1, "diagnostics": False}
    )


def _run(tmp_path, config: BenchmarkConfig, turn_taker=None) -> tuple[RunSession, list]:
    events: list = []
    session = RunSession(config, RunStore(tmp_path / "runs"), on_event=events.append, turn_taker=turn_taker)
    outcome = session.run()
    assert outcome.run.status == "complete", outcome.run.message
    return session, events


def _calls(events: list) -> tuple[np.ndarray, np.ndarray]:
    """(start ns, end ns) of every timed call, from the samples' stamps."""
    starts, ends = [], []
    for e in events:
        if isinstance(e, protocol.SamplesEvent) and e.phase == protocol.Phase.MEASURE:
            assert e.starts_us is not None and len(e.starts_us) == len(e.wall_ms)
            s = e.clock_ns + np.asarray(e.starts_us, dtype=np.int64) * 1000
            starts.append(s)
            ends.append(s + (np.asarray(e.wall_ms) * 1e6).astype(np.int64))
    return np.concatenate(starts), np.concatenate(ends)


def _check_blocks(starts: np.ndarray, bounds: list[int]) -> None:
    """Between two bounds (pauses, or the last pause and the end) lies one block of timed calls,
    at least a block long and never longer: past BLOCK_S after its first call at most one starts."""
    gaps = np.diff(bounds[:-1]) / 1e9 if len(bounds) > 2 else np.array([])
    assert (gaps >= BLOCK_S).all(), gaps
    for lo, hi in zip(bounds, bounds[1:]):
        block = starts[(starts > lo) & (starts < hi)]
        assert block.size, "no empty block"
        assert int((block > block[0] + BLOCK_S * 1e9).sum()) <= 1


def test_a_short_run_is_one_block_between_a_pause_and_the_end(tmp_path, tiny_config):
    _, events = _run(tmp_path, _eager_only(tiny_config, 200))
    pauses = [e for e in events if isinstance(e, protocol.TurnEvent) and e.state == "pause"]
    ends = [e for e in events if isinstance(e, protocol.TurnEvent) and e.state == "end"]
    assert pauses and len(ends) == 1
    assert [p.block for p in pauses] == list(range(len(pauses)))
    starts, _ = _calls(events)
    assert starts.size == 200
    # every timed call is in a block: after a pause, before the end
    assert starts.min() > pauses[0].sent_ns and starts.max() < ends[0].sent_ns
    _check_blocks(starts, [p.sent_ns for p in pauses] + [ends[0].sent_ns])


def test_blocks_of_a_200000_call_run_last_about_half_a_second(tmp_path, tiny_config):
    """200,000 tiny calls would fill one block many times over: the worker still pauses every
    BLOCK_S. Six pauses show it; the run is then stopped (its calls so far are kept)."""
    config = _eager_only(tiny_config, 200_000)
    events: list = []
    session = None

    def answer(event: protocol.TurnEvent) -> None:
        events.append(event)
        if event.state == "pause":
            session.answer_turn(event.block, [])
            if event.block >= 6:
                session.request_stop()

    session = RunSession(config, RunStore(tmp_path / "runs"), on_event=events.append, turn_taker=answer)
    outcome = session.run()
    assert outcome.run.status == "stopped", outcome.run.message
    pauses = sorted({e.block: e for e in events if isinstance(e, protocol.TurnEvent)
                     and e.state == "pause"}.values(), key=lambda e: e.block)
    assert [p.block for p in pauses][:7] == list(range(7))
    starts, _ = _calls(events)
    assert 0 < starts.size < 200_000
    assert starts.min() > pauses[0].sent_ns
    # the six whole blocks between the first seven pauses
    _check_blocks(starts, [p.sent_ns for p in pauses[:7]])
    assert int(((starts > pauses[0].sent_ns) & (starts < pauses[6].sent_ns)).sum()) > 6


def test_a_variant_timed_only_in_blocks_another_opened_still_has_its_calls_counted(tmp_path, tiny_config):
    # rounds alternate the variants within one block: 2 × 200 tiny calls take far less than a block
    config = BenchmarkConfig.from_dict(
        {**tiny_config, "variants": ["eager", "eager-aa"], "iterations": 200, "warmup": 20,
         "rounds": 4, "diagnostics": False}
    )
    taken: list[protocol.TurnEvent] = []
    session = None

    def answer(event: protocol.TurnEvent) -> None:
        taken.append(event)
        if event.state == "pause":
            session.answer_turn(event.block, [])  # a window that drew nothing

    session = RunSession(config, RunStore(tmp_path / "runs"), on_event=lambda e: None, turn_taker=answer)
    assert session.run().run.status == "complete"
    turns = session.recorder.run.measurement["turns"]
    for v in config.variants:
        assert turns[v]["timed_calls_stamped"] == 200, turns
        assert turns[v]["overlapped_repaint"] == 0, turns
    line = turns_line(session.recorder.run)
    assert line is not None and "met a repaint of the window: 0 of 400" in line


def test_the_cli_answers_every_pause_at_once(tmp_path, tiny_config):
    # about 1.5 s of tiny calls on a quiet machine: three blocks or more
    config = _eager_only(tiny_config, 30_000)
    (tmp_path / "c.json").write_text(config.to_json())
    code = cli.main(["run", "--out", str(tmp_path / "cli"), "--quiet", "--config", str(tmp_path / "c.json")])
    assert code == cli.EXIT_OK
    folder = next((tmp_path / "cli").iterdir())
    turns = json.loads((folder / "run.json").read_text())["measurement"]["turns"]["eager"]
    assert turns["blocks"] >= 2
    # answered, not waited out: a worker nobody answers waits the cap at every pause (the next
    # test). A CLI descheduled past the cap by other work on a busy machine can miss one pause,
    # never most of them.
    assert turns["unanswered"] <= turns["blocks"] // 2, turns
    assert turns["waited_ms"] / turns["blocks"] < ANSWER_CAP_S * 1000 / 2, turns
    assert turns["overlapped_repaint"] is None, "no window drew"


def test_a_window_that_never_answers_does_not_stall_the_run_and_the_run_says_so(tmp_path, tiny_config):
    taken: list[protocol.TurnEvent] = []
    session, events = _run(tmp_path, _eager_only(tiny_config, 12_000), turn_taker=taken.append)
    pauses = [e for e in taken if e.state == "pause"]
    assert pauses, "the pauses went to the turn taker"
    turns = session.recorder.run.measurement["turns"]["eager"]
    assert turns["blocks"] == len(pauses)
    assert turns["unanswered"] == len(pauses), "none was answered"
    # the worker waited out the cap at each pause, and no longer
    assert turns["wait_max_ms"] >= ANSWER_CAP_S * 1000 * 0.95
    assert turns["wait_max_ms"] < ANSWER_CAP_S * 1000 + 2000
    line = turns_line(session.recorder.run)
    assert line is not None and f"{len(pauses)} pause" in line and "not answered" in line
    saved = json.loads((session.folder / "run.json").read_text())["measurement"]["turns"]["eager"]
    assert saved["unanswered"] == len(pauses)


def test_each_stretch_of_a_variant_after_another_starts_after_untimed_calls(tmp_path, tiny_config):
    """Rounds alternate the variants inside one block; the first calls after a switch run slower
    (tens of µs models: 2–5× the steady call), so each stretch starts with SETTLE_S of untimed
    calls, as a block after a pause does."""
    config = BenchmarkConfig.from_dict(
        {**tiny_config, "variants": ["eager", "aot_eager"], "iterations": 200, "warmup": 10,
         "rounds": 4, "diagnostics": False}
    )
    _, events = _run(tmp_path, config)
    calls = []
    for e in events:
        if isinstance(e, protocol.SamplesEvent) and e.phase == protocol.Phase.MEASURE:
            s = e.clock_ns + np.asarray(e.starts_us, dtype=np.int64) * 1000
            ends = s + (np.asarray(e.wall_ms) * 1e6).astype(np.int64)
            calls += [(int(a), int(b), e.variant) for a, b in zip(s, ends)]
    calls.sort()
    gaps = [nxt[0] - cur[1] for cur, nxt in zip(calls, calls[1:]) if nxt[2] != cur[2]]
    assert len(gaps) >= 7, "the rounds did not alternate the variants"
    assert min(gaps) >= SETTLE_S * 1e9, sorted(gaps)[:3]


def test_samples_handed_over_after_a_block_are_the_events_one_at_a_time_would_make():
    """The host-timed loop keeps its calls in two lists and hands them to the sink after the
    block: the events are those of handing each call over as it ends."""
    from compile_studio.engine.sink import MAX_SAMPLES_PER_EVENT, ListSink

    walls = [1000 + k for k in range(MAX_SAMPLES_PER_EVENT + 10)]
    starts = [10**12 + 5000 * k for k in range(len(walls))]
    one, bulk = ListSink(), ListSink()
    for sink in (one, bulk):
        sink.hold(True)
    for k, (w, s) in enumerate(zip(walls, starts)):
        one.sample("eager", "measure", 7 + k, w / 1e6, None, 2, s)
    bulk.samples("eager", "measure", 7, walls, 2, starts)
    for sink in (one, bulk):
        sink.hold(False)
    assert [e.__dict__ for e in bulk.events] == [e.__dict__ for e in one.events]
    assert len(bulk.events) == 2 and bulk.events[1].first_iteration == 7 + MAX_SAMPLES_PER_EVENT
