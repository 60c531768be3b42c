"""The shape sweep: a real worker calls aot_eager at batch 1…5 for dynamic=false, auto and true."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import pytest

from compile_studio.cli import commands as cli
from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig, ConfigError
from compile_studio.jobs.shape_sweep_run import parse_batches, shape_request
from compile_studio.results.records.shape_record import (
    SHAPE_CSV,
    SHAPE_CSV_COLUMNS,
    SHAPE_JSON,
    ShapePoint,
    ShapeSweepRecord,
    shape_speedup_text,
    times_text,
)
from compile_studio.results.records.sweep_load import load_shape_sweep
from compile_studio.results.records.sweep_record import SweepDamaged
from compile_studio.results.report.formatting import rough_speedup_header
from support import worker_zygote

BATCHES = [1, 2, 3, 4, 5]
LIMIT = 3
#: warm-up: the default 20 calls, and at least 20 ms instead of the default 200 ms (the time
#: still ends some points' warm-up after more calls than 20), a tenth of the cost per point
RUN_FLAGS = ["--layers", "16,32,8", "--device", "cpu", "--variants", "eager,aot_eager", "--seed", "1",
             "--warmup-min-ms", "20"]


@pytest.fixture(scope="module")
def shape_sweep(tmp_path_factory, worker_fork_server):
    """One CLI shape sweep (a real worker): batch 1…5, the recompile limit lowered to 3."""
    out = tmp_path_factory.mktemp("shape")
    mp = pytest.MonkeyPatch()
    mp.setenv("COMPILE_STUDIO_DATA_DIR", str(out / "data"))
    try:
        stdout, stderr = io.StringIO(), io.StringIO()
        with (
            worker_zygote.forked_workers(worker_fork_server),
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(stderr),
        ):
            code = cli.main(
                ["sweep", "--shape", "--values", ",".join(map(str, BATCHES)), "--recompile-limit", str(LIMIT),
                 "--repeats", "3", "--out", str(out), *RUN_FLAGS]
            )
    finally:
        mp.undo()
    folders = [p for p in out.iterdir() if (p / SHAPE_JSON).is_file()]
    assert len(folders) == 1, (code, stdout.getvalue(), stderr.getvalue())
    return code, stdout.getvalue(), stderr.getvalue(), folders[0]


def series(record: ShapeSweepRecord, mode: str) -> list[ShapePoint]:
    points = record.points_of("aot_eager", mode)
    assert [p.batch for p in points] == BATCHES
    return points


def test_cli_shape_sweep_exit_0_with_a_table_per_mode_and_the_limit_warning(shape_sweep):
    code, out, err, folder = shape_sweep
    assert code == 0, err
    for mode in protocol.SHAPE_MODES:
        assert f"aot_eager · dynamic={mode}" in out
    assert (
        f"warning: dynamic=false: Dynamo hit its recompile limit ({LIMIT}) at batch 4 and ran eager from there on"
        in out
    )
    assert "dynamic=auto: Dynamo hit" not in out and "dynamic=true: Dynamo hit" not in out
    assert f"saved: {folder}" in out


def test_dynamic_false_recompiles_at_each_new_batch_until_the_limit_then_runs_eager(shape_sweep):
    record = load_shape_sweep(shape_sweep[3])
    points = series(record, "false")
    assert [p.graphs for p in points] == [1, 1, 1, 0, 0]
    assert [p.recompiles for p in points] == [0, 1, 1, 0, 0]
    assert [p.limit_hit for p in points] == [False, False, False, True, False]
    assert [p.fell_back for p in points] == [False, False, False, True, True]
    assert all(p.recompile_limit == LIMIT for p in points)


def test_each_recompile_keeps_dynamos_guard_failure_reason(shape_sweep):
    record = load_shape_sweep(shape_sweep[3])
    points = series(record, "false")
    assert points[0].recompile_reasons == []  # the first compile is no recompile
    # batch 2 and 3 recompiled, batch 4 was refused at the limit: each says which guard failed
    for p, now in zip(points[1:4], [2, 3, 4]):
        assert p.recompile_reasons, p
        assert len(p.recompile_reasons) <= 3 and all(len(r) <= 300 for r in p.recompile_reasons)
        assert any("size mismatch at index 0" in r and f"actual {now}" in r for r in p.recompile_reasons), p
    # the app's renamed copy of forward is not shown
    assert not any("aot_eager_false" in r for p in record.points for r in p.recompile_reasons)
    doc = json.loads((shape_sweep[3] / SHAPE_JSON).read_text())
    assert all("recompile_reasons" in p for p in doc["points"])
    with open(shape_sweep[3] / SHAPE_CSV, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["mode"] == "false"]
    assert "size mismatch" in rows[1]["recompile_reasons"] and rows[0]["recompile_reasons"] == ""


def test_a_shape_sweep_file_without_recompile_reasons_still_loads(shape_sweep, tmp_path):
    doc = json.loads((shape_sweep[3] / SHAPE_JSON).read_text())
    for p in doc["points"]:
        p.pop("recompile_reasons", None)
    doc["points"][0]["recompile_reasons"] = ["x" * 5000, 7, "second", "third", "fourth"]
    folder = tmp_path / "older"
    folder.mkdir()
    (folder / SHAPE_JSON).write_text(json.dumps(doc))
    record = load_shape_sweep(folder)
    assert len(record.points) == len(doc["points"])
    assert all(p.recompile_reasons == [] for p in record.points[1:])
    kept = record.points[0].recompile_reasons
    assert len(kept) <= 3 and all(isinstance(r, str) and len(r) <= 300 for r in kept)


def test_dynamic_true_compiles_once_plus_the_batch_1_specialisation(shape_sweep):
    record = load_shape_sweep(shape_sweep[3])
    for mode in ("true", "auto"):
        points = series(record, mode)
        # batch 1 is specialised (size 0/1): batch 2 compiles the shape-generic graph, which serves 3, 4 and 5
        assert [p.graphs for p in points] == [1, 1, 0, 0, 0], mode
        assert [p.recompiles for p in points] == [0, 1, 0, 0, 0], mode
        assert not any(p.limit_hit or p.fell_back for p in points), mode


def test_every_point_is_timed_checked_and_has_its_speedup(shape_sweep):
    record = load_shape_sweep(shape_sweep[3])
    assert record.status == "complete"
    assert len(record.points) == len(BATCHES) * 4
    for p in record.points:
        assert p.error is None
        assert p.first_call_ms is not None and p.first_call_ms > 0
        assert p.median_ms is not None and p.median_ms > 0
        assert p.correct is True, p
        assert p.eager_ms is not None and p.speedup == pytest.approx(p.eager_ms / p.median_ms)
    assert record.environment.get("torch")


def test_eager_and_compiled_points_are_warmed_up_and_timed_alike_at_the_same_moment(shape_sweep):
    record = load_shape_sweep(shape_sweep[3])
    warmup = BenchmarkConfig().warmup  # the sweep leaves the run's warm-up as it is
    for batch in BATCHES:
        compiled = [p for p in record.points if p.batch == batch and p.mode != "eager"]
        (eager,) = [p for p in record.points if p.batch == batch and p.mode == "eager"]
        assert len(compiled) == 3
        for p in compiled:
            # eager's calls alternated with the variant's: the same warm-up each, GC off, eager timed beside it
            assert p.warmup_calls == p.eager_warmup_calls and p.warmup_calls >= warmup, p
            assert p.gc_off is True and p.timed_calls == 3, p
            assert p.eager_ms is not None and p.speedup == pytest.approx(p.eager_ms / p.median_ms)
        # eager's own point pools those calls: its median lies among the eager medians beside each variant
        assert eager.gc_off is True and eager.warmup_calls is not None and eager.warmup_calls >= warmup
        assert eager.timed_calls == sum(p.timed_calls or 0 for p in compiled)
        beside = [p.eager_ms for p in compiled if p.eager_ms is not None]
        assert min(beside) - 1e-9 <= eager.median_ms <= max(beside) + 1e-9
        assert eager.device_median_ms is None  # no device clock on a CPU
    with open(shape_sweep[3] / SHAPE_CSV, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["gc_off"] for r in rows} == {"yes"}
    assert all(r["warmup_calls"] == r["eager_warmup_calls"] for r in rows)


def test_warm_up_takes_the_calls_and_the_time_capped_for_a_sweep():
    from compile_studio.engine.shape_sweep import SWEEP_WARMUP_MAX_MS, warmed_up

    config = BenchmarkConfig(device="cpu", warmup=20, warmup_min_ms=1000)
    assert not warmed_up(19, 5000.0, config)  # the calls first
    assert not warmed_up(20, 199.0, config)
    assert warmed_up(20, SWEEP_WARMUP_MAX_MS, config)  # a second of warm-up is capped at 200 ms
    short = BenchmarkConfig(device="cpu", warmup=2, warmup_min_ms=50)
    assert not warmed_up(2, 49.0, short) and warmed_up(2, 50.0, short)
    assert warmed_up(0, 0.0, BenchmarkConfig(device="cpu", warmup=0, warmup_min_ms=0))


def test_shape_speedups_say_they_are_rough_and_never_show_0_00(shape_sweep):
    out = shape_sweep[1]
    assert "speedup (rough, 3 calls)" in out and "≈" in out
    assert "0.00×" not in out
    assert rough_speedup_header(1) == "speedup (rough, 1 call)"


def test_a_compiled_point_keeps_the_eager_time_measured_beside_it():
    record = ShapeSweepRecord(sweep_id="s", created="", config=BenchmarkConfig(device="cpu"), batches=[4, 8],
                              modes=["true"])
    record.add(ShapePoint(variant="aot_eager", mode="true", batch=4, median_ms=1.0, eager_ms=2.0))
    record.add(ShapePoint(variant="aot_eager", mode="true", batch=8, median_ms=2.0))  # an older worker's
    record.add(ShapePoint(variant="eager", mode="eager", batch=4, median_ms=3.0))
    record.add(ShapePoint(variant="eager", mode="eager", batch=8, median_ms=3.0))
    first, second = record.points_of("aot_eager", "true")
    assert (first.eager_ms, first.speedup) == (2.0, 2.0)
    assert (second.eager_ms, second.speedup) == (3.0, 1.5)


def test_csv_has_a_row_per_mode_batch_and_variant(shape_sweep):
    with open(shape_sweep[3] / SHAPE_CSV, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == SHAPE_CSV_COLUMNS
    assert len(rows) == len(BATCHES) * 4
    assert {r["mode"] for r in rows} == {"eager", "false", "auto", "true"}
    false_rows = [r for r in rows if r["mode"] == "false"]
    assert [r["fell_back_to_eager"] for r in false_rows] == ["no", "no", "no", "yes", "yes"]
    assert {r["correct"] for r in rows} == {"yes"}
    doc = json.loads((shape_sweep[3] / SHAPE_JSON).read_text())
    assert doc["kind"] == "compile-studio-shape-sweep" and len(doc["warnings"]) == 1


def test_show_prints_a_saved_shape_sweep(shape_sweep, capsys):
    assert cli.main(["show", str(shape_sweep[3])]) == 0
    out = capsys.readouterr().out
    assert "Shape sweep:" in out and "aot_eager · dynamic=true" in out
    assert "recompile limit (3) at batch 4" in out
    assert cli.main(["compare", str(shape_sweep[3])]) == 2


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--values", "0,2"], "batch 0"),
        (["--values", "2,2"], "listed twice"),
        (["--values", "1,2", "--modes", "fast"], "--modes"),
        (["--values", "1,2", "--recompile-limit", "-1"], "--recompile-limit"),
        (["--values", "1,2", "--variants", "eager"], "compiled variant"),
        (["--values", "1,2", "--param", "batch_size"], "--param"),
        (["--range", "1:4", "--concurrency", "2"], "one worker"),
        (["--values", "x"], "not a whole number"),
    ],
)
def test_cli_bad_shape_sweeps_exit_2_saying_why(tmp_path, capsys, args, words):
    flags = ["--layers", "16,32,8", "--device", "cpu"]
    if "--variants" not in args:
        flags += ["--variants", "eager,aot_eager"]
    code = cli.main(["sweep", "--shape", *args, *flags, "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert code == 2
    assert words in err and "Traceback" not in err
    assert not (tmp_path / "s").exists()


def test_shape_flags_without_shape_exit_2(capsys):
    assert cli.main(["sweep", "--param", "batch_size", "--values", "1", "--recompile-limit", "2"]) == 2
    assert "go with --shape" in capsys.readouterr().err


def test_request_and_event_round_trip_and_checks():
    config = BenchmarkConfig(device="cpu", variants=["eager", "aot_eager"])
    request = shape_request(config, [1, 8], recompile_limit=2)
    again = protocol.ShapeSweepRequest.from_json(request.to_json())
    assert again == request and not again.problems()
    assert protocol.ShapeSweepRequest(config={}, batches=[], modes=["x"]).problems()
    with pytest.raises(ValueError, match="unknown keys"):
        protocol.ShapeSweepRequest.from_json(json.dumps({"config": {}, "batches": [1], "evil": 1}))
    event = protocol.ShapePointEvent(variant="aot_eager", mode="false", batch=4, graphs=1, limit_hit=True,
                                     recompile_reasons=["0/0: tensor 'x' size mismatch at index 0"])
    assert protocol.decode(protocol.encode(event)) == event
    older = json.loads(protocol.encode(event))
    del older["recompile_reasons"]
    assert protocol.decode(json.dumps(older)).recompile_reasons == []
    assert parse_batches(range_text="1:16:x2") == [1, 2, 4, 8, 16]
    with pytest.raises(ConfigError):
        shape_request(config, [1], modes=["auto", "auto"])


def test_a_damaged_shape_sweep_json_says_what_is_wrong(tmp_path, capsys):
    folder = tmp_path / "20260101-000000_shape_x"
    folder.mkdir()
    (folder / SHAPE_JSON).write_text('{"kind": "compile-studio-shape-sweep", "points": [], "config": 7}')
    with pytest.raises(SweepDamaged, match="configuration is missing"):
        load_shape_sweep(folder)
    assert cli.main(["show", str(folder)]) == 3
    assert "configuration is missing" in capsys.readouterr().err


def test_a_shape_sweep_left_running_by_a_dead_process_reads_as_stopped(shape_sweep, tmp_path):
    doc = json.loads((shape_sweep[3] / SHAPE_JSON).read_text())
    doc.update(status="running", owner_pid=2**22 + 12345)
    folder = tmp_path / "left"
    folder.mkdir()
    (folder / SHAPE_JSON).write_text(json.dumps(doc))
    record = load_shape_sweep(Path(folder))
    assert record.status == "stopped" and "interrupted" in record.message


def test_resume_of_a_shape_sweep_takes_no_flags(shape_sweep, capsys):
    assert cli.main(["sweep", "--resume", str(shape_sweep[3]), "--layers", "8,8"]) == 2
    assert "--resume runs the shape sweep as it was made" in capsys.readouterr().err


def test_each_point_keeps_the_spread_of_its_few_calls(shape_sweep):
    record = load_shape_sweep(shape_sweep[3])
    for p in record.points:
        assert p.min_ms is not None and p.max_ms is not None and p.median_ms is not None
        assert p.min_ms <= p.median_ms <= p.max_ms, p
        assert p.eager_min_ms is not None and p.eager_max_ms is not None and p.eager_ms is not None
        assert p.eager_min_ms <= p.eager_ms <= p.eager_max_ms, p
        if p.mode == "eager":
            assert p.speedup_lo is None and p.speedup_hi is None  # no pairs: eager against itself
            continue
        # the ratio of medians lies within the lowest and highest ratio of a pair of calls
        assert p.speedup_lo is not None and p.speedup_hi is not None and p.speedup is not None
        assert p.speedup_lo - 1e-9 <= p.speedup <= p.speedup_hi + 1e-9, p
        text = shape_speedup_text(p, record.repeats)
        assert text.startswith("≈") and "(3 calls, " in text and text.endswith("×)"), text
    with open(shape_sweep[3] / SHAPE_CSV, newline="") as fh:
        rows = list(csv.DictReader(fh))
    compiled = [r for r in rows if r["mode"] != "eager"]
    assert all(float(r["speedup_lo"]) <= float(r["speedup"]) <= float(r["speedup_hi"]) for r in compiled)
    assert all(r["speedup_lo"] == "" and r["min_ms"] for r in rows if r["mode"] == "eager")


def test_pair_speedups_are_the_lowest_and_highest_ratio_of_a_pair():
    from compile_studio.engine.shape_sweep import pair_speedups

    assert pair_speedups([2.0, 3.0, 4.0], [1.0, 1.0, 8.0]) == (0.5, 3.0)
    assert pair_speedups([1.0, 0.0], [0.0, 2.0]) == (None, None)  # a time of 0 has no ratio
    assert pair_speedups([], []) == (None, None)


def test_an_older_shape_sweep_without_spreads_reads_and_says_rough(shape_sweep, tmp_path):
    doc = json.loads((shape_sweep[3] / SHAPE_JSON).read_text())
    for p in doc["points"]:
        for key in ("min_ms", "max_ms", "eager_min_ms", "eager_max_ms", "speedup_lo", "speedup_hi"):
            p.pop(key)
    folder = tmp_path / "older"
    folder.mkdir()
    (folder / SHAPE_JSON).write_text(json.dumps(doc))
    record = load_shape_sweep(folder)
    assert not record.load_problems
    compiled = [p for p in record.points if p.mode != "eager"]
    assert all(p.speedup_lo is None and p.min_ms is None for p in record.points)
    for p in compiled:
        text = shape_speedup_text(p, record.repeats)
        assert text.startswith("≈") and text.endswith("(3 calls)"), text


def test_a_speedup_is_never_a_bare_zero_and_says_why_it_is_missing():
    def point(batch: int = 8, **kw) -> ShapePoint:
        return ShapePoint(variant="aot_eager", mode="true", batch=batch, **kw)

    assert shape_speedup_text(point(median_ms=0.5, eager_ms=0.65, speedup=1.3, timed_calls=5)) == "≈1.3× (5 calls)"
    assert shape_speedup_text(point(median_ms=0.1, eager_ms=0.72, speedup=7.18, timed_calls=5, speedup_lo=6.9,
                                    speedup_hi=7.4)) == "≈7.2× (5 calls, 6.9–7.4×)"
    # a range whose ends read alike is one figure, as the plot's label writes it
    assert shape_speedup_text(point(median_ms=0.1, eager_ms=0.041, speedup=0.41, timed_calls=3, speedup_lo=0.4091,
                                    speedup_hi=0.4149)) == "≈0.41× (3 calls, 0.41×)"
    tiny = shape_speedup_text(point(median_ms=25.0, eager_ms=0.1, speedup=0.004), 5)
    assert tiny == "≈0.004× (5 calls)" and "0.00×" not in tiny
    # a point made with an eager time of 0 ms (a coarse timer) once read "0.00×"
    record = ShapeSweepRecord(sweep_id="s", created="", config=BenchmarkConfig(device="cpu"), batches=[4],
                              modes=["true"])
    record.add(point(batch=4, median_ms=0.2, timed_calls=5))
    record.add(ShapePoint(variant="eager", mode="eager", batch=4, median_ms=0.0))
    zero = record.points_of("aot_eager", "true")[0]
    assert zero.speedup == 0.0
    assert shape_speedup_text(zero) == "– (eager's time is 0 ms, below the timer's resolution)"
    assert shape_speedup_text(point(median_ms=0.0, eager_ms=1.0, speedup=None)).startswith("– (its time is 0 ms")
    assert shape_speedup_text(point(median_ms=None)) == "– (not timed)"
    assert shape_speedup_text(point(error="boom")) == "– (failed)"
    assert shape_speedup_text(point(median_ms=1.0)) == "– (eager was not timed at this batch size)"


def test_the_window_labels_a_real_sweeps_speedups_as_rough(shape_sweep, qtbot):
    from compile_studio.gui.plots.sweep_plot import ShapeSweepPlot
    from compile_studio.gui.sweep_view import shape_speedups_text

    record = load_shape_sweep(shape_sweep[3])
    plot = ShapeSweepPlot()
    qtbot.addWidget(plot)
    plot.resize(900, 600)
    plot.show()
    plot.set_record(record)
    texts = plot.speedup_texts
    assert set(texts) == {(f"dynamic={m}", b) for m in protocol.SHAPE_MODES for b in BATCHES}
    assert all(t.startswith("≈") and "(3 calls, " in t for t in texts.values()), texts
    # a point's label is the range its few calls give, not a ratio of medians as if measured
    assert [lab.toPlainText() for lab in plot.speedup_labels] == [
        t.split(", ")[1].rstrip(")") for t in texts.values()
    ]
    assert not any(lab.toPlainText().startswith("≈") for lab in plot.speedup_labels)
    assert "rough" in plot.plots["speedup"].titleLabel.text and "3 calls" in plot.plots["speedup"].titleLabel.text
    assert len([d for d in plot.drawn if d[0] == "speedup"]) == 15
    series = shape_speedups_text(record, "aot_eager", "true")
    assert series.startswith("speedup ") and "≈" not in series and series.endswith("across its calls (3 calls each)")
    spreads = [(p.speedup_lo, p.speedup_hi) for p in record.points_of("aot_eager", "true")]
    low, high = min(s[0] for s in spreads), max(s[1] for s in spreads)
    assert series.split(" ")[1] in (f"{times_text(low)}–{times_text(high)}×", f"{times_text(low)}×")


@pytest.mark.parametrize("cold_l2", [False, True])
def test_a_point_alternates_which_side_of_a_pair_goes_first_and_flushes_before_each(
    monkeypatch, cold_l2
):
    """Eager first in every pair ran the variant always on eager's caches and clocks; cold L2
    was ignored. Now A B, B A, … and, cold, the cache flushed before every timed call."""
    from compile_studio.engine.cache_flush import CacheFlush
    from compile_studio.engine.shape_sweep import ShapeSweepRunner, pair_order

    assert [pair_order(2, r) for r in range(3)] == [[0, 1], [1, 0], [0, 1]]
    assert pair_order(1, 1) == [0]
    log: list[str] = []
    monkeypatch.setattr(CacheFlush, "evict", lambda self: log.append("f"))
    config = BenchmarkConfig.from_dict({"layers": "8,8", "batch_size": 2, "device": "cpu",
                                        "warmup": 1, "warmup_min_ms": 0, "cold_l2": cold_l2})
    request = protocol.ShapeSweepRequest(config=config.to_dict(), batches=[2], repeats=4)
    runner = ShapeSweepRunner(config, request, sink=None)
    log.clear()
    timed = runner._timed(lambda x: log.append("E"), lambda x: log.append("V"), (None,))
    calls = "".join(c for c in log if c != "f")
    assert calls == "EV" + "EVVEEVVE", calls  # one warm-up pair, then A B, B A, A B, B A
    assert len(timed.eager_wall) == len(timed.wall) == 4
    flushes = "".join(log)[2:]
    assert flushes == ("fEfVfVfEfEfVfVfE" if cold_l2 else "EVVEEVVE"), flushes
