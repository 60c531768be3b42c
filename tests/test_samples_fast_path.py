"""The hot path of a run's samples (thousands a pause): the check of a samples event's numbers
and the samples.csv rows are done at once for what a well-behaved worker sends, with the same
result as item by item, and anything else still goes item by item (and is refused as before)."""

from __future__ import annotations

import random

import pytest

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.results.records.run_result import RunResult
from compile_studio.results.records.schema import Unfit, conform
from compile_studio.results.storage import run_files
from compile_studio.results.storage.run_files import RunWriter


def _item_by_item(value, hint):
    return [conform(v, hint) for v in value]


@pytest.mark.parametrize("hint, values", [
    (float, [random.Random(1).random() * 30 for _ in range(4096)]),
    (float, [1e-300, 5e-324, 1.7976931348623157e308, -0.0]),
    (int, list(range(-5, 4091))),
    (float | None, [None, 0.25, None, 1.0e-3]),
    (float | None, [None] * 100),
])
def test_plain_numbers_read_at_once_as_item_by_item(hint, values):
    assert conform(values, list[hint]) == _item_by_item(values, hint)
    assert conform(values, list[hint] | None) == _item_by_item(values, hint)


@pytest.mark.parametrize("hint, bad", [
    (float, [0.5, float("nan")]), (float, [0.5, float("-inf")]), (float, [0.5, True]),
    (float, [0.5, "1.0"]), (float, [0.5, [1.0]]), (int, [1, True]), (int, [1, 2**63]),
    (int, [1, 2.0]), (float | None, [None, float("inf")]), (float | None, [None, False]),
])
def test_anything_else_is_refused_as_before(hint, bad):
    with pytest.raises(Unfit):
        conform(bad, list[hint])
    with pytest.raises(Unfit):
        _item_by_item(bad, hint)


def test_a_samples_event_of_host_timed_calls_writes_the_rows_the_general_path_writes(tmp_path):
    run = RunResult(run_id="r", created="2026-12-07T00:00:00",
                    config=BenchmarkConfig(layers="8,4", batch_size=1, device="cpu"), environment={})
    rng = random.Random(3)
    wall = [rng.random() / 7 for _ in range(500)] + [1e-5, 123456.789, 0.1]
    for phase in (protocol.Phase.MEASURE, protocol.Phase.WARMUP):
        for round_index in (None, 0, 4):
            writer = RunWriter(tmp_path / f"{phase}-{round_index}", run)
            writer.append_samples('eager, "quoted"', 7, phase, wall, None, round_index)
            writer.append_samples('eager, "quoted"', 7 + len(wall), phase, wall[:3], [None] * 3, round_index)
            writer.close()
            written = (tmp_path / f"{phase}-{round_index}" / run_files.SAMPLES_CSV).read_text().splitlines()
            n = len(wall)
            general = run_files._sample_lines(
                'eager, "quoted"', list(range(7, 7 + n + 3)), [str(phase)] * (n + 3), wall + wall[:3],
                [None] * (n + 3), [round_index] * (n + 3),
            ).splitlines()
            assert written[1:] == general


class _Kept:
    """A BatchingSink that keeps what it would send."""

    def __init__(self):
        from compile_studio.engine.sink import BatchingSink

        class Sink(BatchingSink):
            def __init__(self):
                super().__init__(interval_s=1e9)
                self.sent = []

            def _write(self, event):
                self.sent.append(protocol.to_dict(event))

        self.sink = Sink()


@pytest.mark.parametrize("held", [True, False])
def test_a_blocks_calls_handed_over_at_once_send_what_one_by_one_sends(held):
    rng = random.Random(5)
    t = 10_000_000_000
    blocks = []
    for first, n in ((0, 7), (7, 5000), (5007, 1), (9000, 3)):  # the last one starts a new batch
        walls, starts = [], []
        for _ in range(n):
            w = rng.randrange(20_000, 90_000)
            starts.append(t)
            walls.append(w)
            t += w + rng.randrange(100, 900)
        blocks.append((first, walls, starts))
    at_once, one_by_one = _Kept().sink, _Kept().sink
    for sink in (at_once, one_by_one):
        sink.hold(held)
    for first, walls, starts in blocks:
        at_once.samples("eager", "measure", first, walls, 2, starts)
        for k, (w, s) in enumerate(zip(walls, starts)):
            one_by_one.sample("eager", "measure", first + k, w / 1e6, None, 2, s)
    assert at_once.last_sample == one_by_one.last_sample == ("eager", 9002)
    for sink in (at_once, one_by_one):
        sink.hold(False)
    assert at_once.sent == one_by_one.sent
    assert sum(len(e["wall_ms"]) for e in at_once.sent) == 5011
