"""Summaries computed once and read back; runs of older versions; the history without samples;
bounded live buffers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from compile_studio.core import protocol
from compile_studio.results import RunStore, load_run, summarize
from compile_studio.results.analysis import summary as summary_module
from compile_studio.results.analysis.summary import _compute_summary
from compile_studio.results.storage import csv_readers, summary_cache
from compile_studio.results.storage.recorder import RunRecorder

VARIANTS = ("eager", "aot_eager", "default")


def record(store: RunStore, n: int = 300, rounds: int = 3, label: str = "") -> RunRecorder:
    """A run written through the recorder from protocol events (no worker: the files are the point)."""
    config = {
        "layers": "16,16,4", "batch_size": 1, "device": "cpu", "iterations": n, "warmup": 5,
        "variants": list(VARIANTS), "rounds": rounds, "label": label,
    }
    rec = RunRecorder.in_store(store, config, slug=label or None)
    rec.handle(protocol.HelloEvent(protocol=protocol.PROTOCOL_VERSION, app_version="t", pid=1,
                                   environment={"torch": "2", "device": "cpu"}))
    rng = np.random.default_rng(len(label))
    per = n // rounds
    for v in VARIANTS:
        rec.handle(protocol.SamplesEvent(variant=v, phase=protocol.Phase.WARMUP, first_iteration=0,
                                         wall_ms=[3.0] * 5))
        if v != "eager":
            rec.handle(protocol.CompiledEvent(variant=v, compile_s=0.2, first_call_ms=200.0))
    for r in range(rounds):
        for k, v in enumerate(VARIANTS):
            wall = rng.normal(1.0 - 0.2 * k, 0.02, per).tolist()
            rec.handle(protocol.SamplesEvent(variant=v, phase=protocol.Phase.MEASURE,
                                             first_iteration=5 + r * per, wall_ms=wall, round=r))
    return rec


def finish(rec: RunRecorder) -> None:
    for v in VARIANTS:
        rec.handle(protocol.VariantDoneEvent(variant=v, allclose=True))
    rec.handle(protocol.DoneEvent(status=protocol.RunStatus.COMPLETE))


def test_summary_is_computed_once_per_variant_and_read_back_equal(tmp_path, monkeypatch):
    computed: list[str] = []
    real = summary_module._speedup_interval

    def counting(base, other):
        computed.append("interval")
        return real(base, other)

    monkeypatch.setattr(summary_module, "_speedup_interval", counting)
    rec = record(RunStore(tmp_path))
    assert computed == []  # samples arriving compute nothing
    rec.handle(protocol.VariantDoneEvent(variant="eager", allclose=True))
    assert len(computed) == 2  # one interval per compiled variant measured so far
    rec.handle(protocol.VariantDoneEvent(variant="aot_eager", allclose=True))
    rec.handle(protocol.VariantDoneEvent(variant="default", allclose=True))
    rec.handle(protocol.DoneEvent(status=protocol.RunStatus.COMPLETE))
    assert len(computed) == 2  # no new samples: not computed again at the other ends
    doc = json.loads((rec.folder / "run.json").read_text())
    assert doc["summary_samples"] == {v: 305 for v in VARIANTS}

    monkeypatch.setattr(summary_cache, "summarize", pytest.fail)
    loaded = load_run(rec.folder)
    assert computed == ["interval"] * 2  # read back, not computed
    assert loaded == rec.run
    assert summarize(loaded) == _compute_summary(loaded) == summarize(rec.run)
    # show/compare/list read run.json alone
    listed = load_run(rec.folder, samples=False)
    assert not listed.samples_loaded and summarize(listed) == summarize(rec.run)
    assert listed.best_speedup() == pytest.approx(rec.run.best_speedup())


def test_a_run_without_stored_summary_opens_and_is_summarised_once(tmp_path, monkeypatch, capsys):
    from compile_studio.cli.commands import main

    rec = record(RunStore(tmp_path))
    finish(rec)
    doc = json.loads((rec.folder / "run.json").read_text())
    expected = doc.pop("summary")
    del doc["summary_version"], doc["summary_samples"]
    (rec.folder / "run.json").write_text(json.dumps(doc))  # as an older version wrote it
    before = (rec.folder / "run.json").read_bytes()

    run = load_run(rec.folder)
    assert [r.to_dict() for r in summarize(run)] == expected
    listed = load_run(rec.folder, samples=False)
    assert listed.known_summary() is None and listed.best_speedup() is None

    assert main(["show", str(rec.folder)]) == 0
    assert "aot_eager" in capsys.readouterr().out
    cached = list(summary_cache.summary_cache_dir().glob("*.json"))
    assert len(cached) == 1
    assert (rec.folder / "run.json").read_bytes() == before  # the user's file is left alone
    monkeypatch.setattr(summary_module, "_compute_summary", pytest.fail)
    again = load_run(rec.folder, samples=False)
    assert [r.to_dict() for r in summarize(again)] == expected
    full = load_run(rec.folder)
    assert [r.to_dict() for r in summarize(full)] == expected


def test_a_stored_summary_of_another_shape_is_not_used(tmp_path):
    rec = record(RunStore(tmp_path))
    finish(rec)
    path = rec.folder / "run.json"
    doc = json.loads(path.read_text())
    for row in doc["summary"]:
        row["speedup"] = 99.0
        row.pop("verdict")
    path.write_text(json.dumps(doc))
    run = load_run(rec.folder)
    assert all(r.speedup != 99.0 for r in summarize(run))


def test_samples_read_fast_keep_skipping_bad_rows(tmp_path):
    rec = record(RunStore(tmp_path), n=3000)
    finish(rec)
    samples = rec.folder / "samples.csv"
    lines = samples.read_text().splitlines(keepends=True)
    lines.insert(50, "eager,not-a-number,measure,1.0,,0\n")
    lines.insert(60, "eager,61,measure,1e999,,0\n")
    lines.append("default,99999,meas")  # a last line cut short
    samples.write_text("".join(lines))
    run = load_run(rec.folder)
    assert run.load_problems == ["samples.csv: 3 unreadable rows skipped"]
    assert {v: len(x.samples) for v, x in run.variants.items()} == {v: 3005 for v in VARIANTS}
    np.testing.assert_array_equal(
        run.variants["default"].samples.wall_array(), rec.run.variants["default"].samples.wall_array()
    )


def test_history_of_many_runs_lists_without_reading_samples(qtbot, monkeypatch):
    from compile_studio.gui.history_entry import best_verdict_text
    from compile_studio.gui.history_panel import COLUMNS, HistoryPanel
    from compile_studio.gui.paths import runs_dir

    store = RunStore(runs_dir())
    first = record(store, n=60, label="r00")
    finish(first)
    for k in range(1, 60):  # copies of one real run, as the bench makes 500
        folder = store.root / f"{first.folder.name}_{k:02d}"
        folder.mkdir()
        for name in ("run.json", "samples.csv", "summary.csv"):
            (folder / name).write_bytes((first.folder / name).read_bytes())
    for folder in store.root.iterdir():  # any row read would be skipped and show
        with open(folder / "samples.csv", "a") as fh:
            fh.write("garbage,row\n")
    monkeypatch.setattr(csv_readers, "_fast_piece", pytest.fail)
    monkeypatch.setattr(csv_readers, "_slow_rows", pytest.fail)

    panel = HistoryPanel(store)
    qtbot.addWidget(panel)
    panel.refresh()
    assert panel.tree.topLevelItemCount() == 60
    best, status = COLUMNS.index("best speedup"), COLUMNS.index("status")
    expected = best_verdict_text(first.run)
    for i in range(60):
        item = panel.tree.topLevelItem(i)
        assert (item.text(best), item.text(status)) == (expected, "complete")
    assert panel.count_label.text() == "60 runs"
    header = panel.tree.header()
    assert [COLUMNS[header.logicalIndex(v)] for v in range(3)] == ["model", "best speedup", "status"]


def test_history_summarises_an_old_run_in_the_background(qtbot):
    from compile_studio.gui.history_entry import best_verdict_text
    from compile_studio.gui.history_panel import COLUMNS, PENDING_SPEEDUP, HistoryPanel
    from compile_studio.gui.paths import runs_dir

    rec = record(RunStore(runs_dir()), label="old")
    finish(rec)
    path = rec.folder / "run.json"
    doc = json.loads(path.read_text())
    del doc["summary_version"]
    path.write_text(json.dumps(doc))
    panel = HistoryPanel(RunStore(runs_dir()))
    qtbot.addWidget(panel)
    panel.refresh()
    item = panel.tree.topLevelItem(0)
    best = COLUMNS.index("best speedup")
    expected = best_verdict_text(rec.run)
    assert item.text(best) in (PENDING_SPEEDUP, expected)
    qtbot.waitUntil(lambda: panel.tree.topLevelItem(0).text(best) == expected, timeout=10_000)


def test_live_buffer_is_bounded_and_keeps_peaks():
    from compile_studio.gui.plots.buffers import SampleBuffer

    buf = SampleBuffer(max_points=1024)
    rng = np.random.default_rng(3)
    y = rng.normal(1.0, 0.01, 400_000)
    y[123_457], y[345_678] = 40.0, 0.01
    sizes = []
    for start in range(0, y.size, 2_500):
        stop = min(start + 2_500, y.size)
        buf.append(np.arange(start, stop, dtype=np.float64), y[start:stop])
        sizes.append(buf.nbytes)
    assert buf.count == y.size
    assert buf.n <= 1024 and max(sizes) < 2 * 1024 * 17 + 2 * buf.stride * 16
    xs, ys = buf.xs, buf.ys
    assert ys.max() == 40.0 and ys.min() == 0.01
    assert xs[np.argmax(ys)] == 123_457 and xs[np.argmin(ys)] == 345_678
    assert np.all(np.diff(xs) > 0) and buf.monotonic


def test_a_large_run_is_read_off_the_gui_thread_when_shown(qtbot, monkeypatch):
    from compile_studio.gui import history_panel
    from compile_studio.gui.history_panel import COLUMNS, HistoryPanel
    from compile_studio.gui.paths import runs_dir

    rec = record(RunStore(runs_dir()), label="big")
    finish(rec)
    monkeypatch.setattr(history_panel, "SYNC_LOAD_BYTES", 0)  # every run counts as large
    panel = HistoryPanel(RunStore(runs_dir()))
    qtbot.addWidget(panel)
    panel.refresh()
    [entry] = panel.entries()
    assert not entry.listed.samples_loaded
    with qtbot.waitSignal(panel.show_requested, timeout=10_000) as shown:
        panel.show_entry(entry)
        assert panel.tree.topLevelItem(0).text(COLUMNS.index("status")) == "loading…"
    run, alone = shown.args
    assert run is entry.listed and run.samples_loaded and alone is False
    assert run == rec.run
    assert panel.tree.topLevelItem(0).text(COLUMNS.index("status")) == "complete"
