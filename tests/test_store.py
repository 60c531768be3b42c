"""Run store: atomic files, read-back equality, damaged and incomplete runs, export."""

from __future__ import annotations

import json
import os

import pytest

from compile_studio.core import protocol
from compile_studio.results import RunDamaged, RunResult, RunStore, load_run, summarize
from compile_studio.results.report.run_export import ExportFailed, export_markdown, export_run
from compile_studio.results.storage.file_io import atomic_write_text
from compile_studio.results.storage.recorder import RunRecorder


def fake_events(variants=("eager", "default"), n=20, warmup=3):
    yield {"type": "hello", "environment": {"torch": "x", "devices": ["cpu"]}}
    for k, name in enumerate(variants):
        yield {"type": "phase", "variant": name, "phase": "build", "iterations": 0}
        if name != "eager":
            yield {"type": "compiled", "variant": name, "compile_s": 1.5, "first_call_ms": 1500.0,
                   "graphs": 1, "graph_breaks": 0, "break_reasons": [], "recompiles": 0}
        yield {"type": "samples", "variant": name, "phase": "warmup", "first_iteration": 0,
               "wall_ms": [5.0] * warmup, "device_ms": None}
        base = 2.0 / (k + 1)
        wall = [base + 0.001 * i for i in range(n)]
        yield {"type": "samples", "variant": name, "phase": "measure", "first_iteration": warmup,
               "wall_ms": wall[: n // 2], "device_ms": None}
        yield {"type": "samples", "variant": name, "phase": "measure",
               "first_iteration": warmup + n // 2, "wall_ms": wall[n // 2:], "device_ms": None}
        yield {"type": "variant_done", "variant": name, "status": "done", "allclose": True,
               "max_abs_error": 1e-7, "max_rel_error": 1e-7, "peak_memory_bytes": 1024,
               "memory_kind": "rss_peak_growth", "recompiles_in_window": 0}
    yield {"type": "done", "status": "completed"}


def record(tmp_path, events, config=None):
    store = RunStore(tmp_path)
    rec = RunRecorder.in_store(store, config or {"layers": "8,8", "batch_size": 2}, "t")
    for e in events:
        rec.handle(protocol.from_dict(e))
    return rec


def test_round_trip_equal(tmp_path):
    rec = record(tmp_path, fake_events())
    loaded = load_run(rec.folder)
    assert loaded == rec.run
    assert loaded.status == "complete"
    rows = summarize(loaded)
    default = next(r for r in rows if r.name == "default")
    assert default.speedup == pytest.approx(2.0, rel=0.02)
    assert default.break_even_calls == pytest.approx(1500.0 / (rows[0].median_ms - default.median_ms))
    # loading from run.json or samples.csv of the folder gives the same run
    assert load_run(rec.folder / "run.json") == loaded
    assert load_run(rec.folder / "samples.csv") == loaded


def test_incomplete_run_still_readable(tmp_path):
    events = list(fake_events())
    rec = record(tmp_path, events[:4])  # crash in the middle, no done
    rec.writer.close()
    loaded = load_run(rec.folder)
    assert loaded.status == "incomplete"
    assert loaded.variants["eager"].samples.count("measure") == 10


def test_truncated_samples_csv_last_line_skipped(tmp_path):
    rec = record(tmp_path, list(fake_events())[:4])
    rec.writer.close()
    path = rec.folder / "samples.csv"
    path.write_text(path.read_text() + "eager,13,meas")
    loaded = load_run(rec.folder)
    assert loaded.variants["eager"].samples.count("measure") == 10


def test_corrupt_run_json_listed_as_damaged_others_load(tmp_path):
    good = record(tmp_path, fake_events())
    bad = record(tmp_path, fake_events())
    (bad.folder / "run.json").write_text('{"config": {"layers": ')
    listings = RunStore(tmp_path).list_runs()
    by_folder = {entry.folder: entry for entry in listings}
    assert by_folder[good.folder].run is not None
    assert by_folder[bad.folder].damaged
    assert "damaged" in by_folder[bad.folder].problem
    with pytest.raises(RunDamaged):
        load_run(bad.folder)


def test_bare_samples_csv_opens(tmp_path):
    rec = record(tmp_path, fake_events())
    copy = tmp_path / "elsewhere.csv"
    copy.write_text((rec.folder / "samples.csv").read_text())
    run = load_run(copy)
    assert set(run.variants) == {"eager", "default"}
    assert run.variants["default"].samples.wall_ms == rec.run.variants["default"].samples.wall_ms


def test_not_a_samples_file(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(RunDamaged, match="header"):
        load_run(p)


def test_atomic_write_leaves_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "f.txt"
    target.write_text("old")

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["f.txt"]


def test_export_run_and_markdown(tmp_path):
    rec = record(tmp_path / "store", fake_events())
    out = tmp_path / "out"
    out.mkdir()
    paths = export_run(rec.run, out)
    assert {p.name for p in paths} == {"samples.csv", "summary.csv", "run.json"}
    assert load_run(out) == rec.run
    prefixed = export_run(rec.run, out, prefix="r1_")
    assert {p.name for p in prefixed} == {"r1_samples.csv", "r1_summary.csv", "r1_run.json"}
    assert load_run(out / "r1_run.json") == rec.run
    assert load_run(out / "r1_samples.csv") == rec.run
    md = export_markdown(rec.run, out, plot_png_bytes=b"\x89PNG fake")
    text = (out / "report.md").read_text()
    assert "| variant |" in text and "![latency per iteration](report.png)" in text
    assert {p.name for p in md} == {"report.md", "report.png"}


def test_export_to_missing_or_unwritable_folder_leaves_nothing(tmp_path):
    rec = record(tmp_path / "store", fake_events())
    with pytest.raises(ExportFailed, match="no such folder"):
        export_run(rec.run, tmp_path / "missing")
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        if os.access(ro, os.W_OK):  # root ignores permissions: use a read-only mount
            target = "/proc/self"
        else:
            target = ro
        with pytest.raises(ExportFailed, match="cannot write"):
            export_run(rec.run, target)
        assert os.listdir(ro) == []
    finally:
        os.chmod(ro, 0o700)


def test_run_json_is_strict_json(tmp_path):
    rec = record(tmp_path, fake_events())
    doc = json.loads((rec.folder / "run.json").read_text())
    assert doc["schema_version"] == 2
    assert set(doc["variants"]["default"]["stats"]) >= {"median", "p95", "iqr", "mad"}


def test_recorder_fail_keeps_samples(tmp_path):
    events = list(fake_events())
    rec = record(tmp_path, events[:9])
    rec.fail("the worker process died (killed by SIGKILL)")
    loaded = load_run(rec.folder)
    assert loaded.status == "failed"
    assert "SIGKILL" in loaded.message
    assert len(loaded.variants["eager"].samples) == 23
    assert isinstance(loaded, RunResult)


def test_run_level_phase_records_the_device_not_a_variant(tmp_path):
    events = list(fake_events())
    events.insert(1, {"type": "phase", "variant": None, "phase": "build", "iterations": 0,
                      "device": "cpu", "inductor_cache_dir": "/tmp/x"})
    rec = record(tmp_path, events)
    assert set(rec.run.variants) == {"eager", "default"}
    assert rec.run.environment["device"] == "cpu"
    assert load_run(rec.folder).environment["inductor_cache_dir"] == "/tmp/x"


def test_gpu_state_kept_beside_the_samples(tmp_path):
    """NVML readings go to gpu_state.csv, tagged with the sample they came after."""
    events = list(fake_events())
    gpu = {"type": "gpu_state", "gpu": 0, "t_s": [0.1, 0.2], "variant": ["eager", "eager"],
           "iteration": [3, 9], "sm_clock_mhz": [1980, 1755], "temperature_c": [41, 44],
           "power_w": [210.5, None]}
    events.insert(4, gpu)
    rec = record(tmp_path, events)
    text = (rec.folder / "gpu_state.csv").read_text().splitlines()
    assert text[0] == "t_s,gpu,variant,iteration,sm_clock_mhz,temperature_c,power_w"
    assert text[2] == "0.2,0,eager,9,1755,44,"
    loaded = load_run(rec.folder)
    assert loaded.gpu_state == rec.run.gpu_state
    assert loaded.gpu_state[0] == {"t_s": 0.1, "gpu": 0, "variant": "eager", "iteration": 3,
                                   "sm_clock_mhz": 1980, "temperature_c": 41, "power_w": 210.5}
    assert loaded == rec.run


def test_exported_gpu_state_reopens(tmp_path):
    events = list(fake_events())
    events.insert(4, {"type": "gpu_state", "gpu": 0, "t_s": [0.5], "variant": ["eager"],
                      "iteration": [4], "sm_clock_mhz": [1500], "temperature_c": [60],
                      "power_w": [300.0]})
    rec = record(tmp_path / "store", events)
    out = tmp_path / "out"
    out.mkdir()
    names = {p.name for p in export_run(rec.run, out, prefix="x_")}
    assert "x_gpu_state.csv" in names
    assert load_run(out / "x_run.json") == rec.run


def test_best_speedup_is_the_fastest_compiled_variant(tmp_path):
    rec = record(tmp_path, fake_events(variants=("eager", "default", "aot_eager")))
    rows = {r.name: r.speedup for r in summarize(rec.run)}
    assert rec.run.best_speedup() == pytest.approx(max(rows["default"], rows["aot_eager"]))
    assert rec.run.best_speedup() == pytest.approx(3.0, rel=0.02)


def test_schema_1_run_folder_still_loads(tmp_path):
    """A folder written before rounds: no round column, interleave settings, 'complete'."""
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({
        "schema_version": 1, "app_version": "0.1.0", "run_id": "old", "created": "2026-01-01T00:00:00",
        "status": "complete", "message": "",
        "config": {"layers": "8,8", "batch_size": 2, "iterations": 4, "warmup": 0,
                   "variants": ["eager", "default"], "interleave": True, "interleave_block": 2},
        "environment": {"device": "cpu"},
        "variants": {"eager": {"status": "done"}, "default": {"status": "done", "compile_s": 1.0}},
    }))
    rows = ["variant,iteration,phase,wall_ms,device_ms"]
    rows += [f"eager,{i},measure,2.0," for i in range(4)] + [f"default,{i},measure,1.0," for i in range(4)]
    (folder / "samples.csv").write_text("\n".join(rows) + "\n")
    run = load_run(folder)
    assert run.status == "complete" and run.schema_version == 1
    assert run.config.rounds == 2  # interleaved in blocks of 2: two rounds
    assert run.variants["default"].samples.round == [None] * 4
    assert [len(r) for r in run.variants["eager"].samples.measured_rounds()] == [4]
    default = next(r for r in summarize(run) if r.name == "default")
    assert default.speedup == pytest.approx(2.0)
