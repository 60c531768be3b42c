"""Sweeps: a run per point through real workers, stop and resume, failed points, the CLI."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from compile_studio.cli import commands as cli
from compile_studio.core.config import BenchmarkConfig, ConfigError
from compile_studio.jobs.session import RunSession
from compile_studio.jobs.sweep import SweepRunner, new_sweep
from compile_studio.jobs.sweep_spec import SweepSpec, parse_range, x_positions
from compile_studio.launchers.supervisor import WorkerLauncher
from compile_studio.results import load_run
from compile_studio.results.records.sweep_load import load_sweep
from compile_studio.results.records.sweep_record import (
    SWEEP_CSV,
    SWEEP_CSV_COLUMNS,
    SWEEP_JSON,
    SweepDamaged,
)
from compile_studio.results.storage.sweep_store import SweepFolder
from support import worker_zygote

BATCHES = [1, 4, 16, 64, 256]


def sweep_base(**changes) -> BenchmarkConfig:
    """The tiny MLP at few calls: each point is a real run of a few hundred milliseconds.
    No diagnostics (a profile per variant): a sweep's record and CSV do not read them."""
    data = {
        "layers": "32,32,8",
        "device": "cpu",
        "iterations": 10,
        "warmup": 2,
        "rounds": 1,
        "warmup_min_ms": 0,
        "compile_timing": "in_run",
        "variants": ["eager"],
        "diagnostics": False,
    }
    data.update(changes)
    return BenchmarkConfig.from_dict(data)


def csv_rows(folder: Path) -> list[dict]:
    with open(folder / SWEEP_CSV, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def stopped_then_resumed(tmp_path_factory, worker_fork_server):
    """Batch 1…256, eager + aot_eager: stopped after two points, then resumed by the CLI.

    The subject is the sweep (stop, resume, the CSV, the view), not the compiler: the compiled
    variant is aot_eager, a real torch.compile through Dynamo and AOTAutograd without Inductor's
    code generation, so each point costs a fraction of an Inductor compile."""
    root = tmp_path_factory.mktemp("sweeps")
    base = sweep_base(variants=["eager", "aot_eager"])
    folder = new_sweep(SweepSpec.parse("batch_size", ",".join(map(str, BATCHES))), base, root)
    runner: SweepRunner

    def stop_after_two(record, index):
        if sum(p.status == "complete" for p in record.points) == 2:
            runner.request_stop()

    with worker_zygote.forked_workers(worker_fork_server):
        runner = SweepRunner(folder, on_point=stop_after_two)
        first = runner.run()
        after_stop = load_sweep(folder.path)
        csv_after_stop = csv_rows(folder.path)
        kept = {
            p.index: (p.run, (folder.path / p.run / "run.json").stat().st_mtime_ns)
            for p in after_stop.points
            if p.run
        }
        code = cli.main(["sweep", "--resume", str(folder.path), "--quiet"])
    return {
        "folder": folder.path,
        "first": first,
        "after_stop": after_stop,
        "csv_after_stop": csv_after_stop,
        "kept": kept,
        "resume_exit": code,
        "final": load_sweep(folder.path),
    }


def test_stop_after_two_points_keeps_them_and_resume_runs_only_the_other_three(stopped_then_resumed):
    s = stopped_then_resumed
    first, after = s["first"], s["after_stop"]
    assert first.ran == [0, 1] and first.stop_requested
    assert after.status == "stopped" and "resume" in after.message
    assert [p.status for p in after.points] == ["complete", "complete", "pending", "pending", "pending"]
    assert len(s["csv_after_stop"]) == 4
    assert s["resume_exit"] == 0
    final = s["final"]
    assert final.status == "complete"
    assert [p.status for p in final.points] == ["complete"] * 5
    # the two points done before the stop kept their run folders, untouched
    for index, (name, mtime) in s["kept"].items():
        point = final.points[index]
        assert point.run == name
        assert (s["folder"] / name / "run.json").stat().st_mtime_ns == mtime
    # the resume ran exactly the other three: one run folder per point, no more
    runs = sorted(p.name for p in s["folder"].iterdir() if p.is_dir())
    assert runs == sorted(p.run for p in final.points)
    assert len(runs) == 5
    for point in final.points[2:]:
        assert point.run not in {name for name, _ in s["kept"].values()}
        assert load_run(s["folder"] / point.run).config.batch_size == point.value


def test_sweep_csv_has_a_row_per_point_and_variant_from_the_runs(stopped_then_resumed):
    folder = stopped_then_resumed["folder"]
    rows = csv_rows(folder)
    assert len(rows) == 10
    assert list(rows[0]) == SWEEP_CSV_COLUMNS
    assert [(int(r["value"]), r["variant"]) for r in rows] == [
        (b, v) for b in BATCHES for v in ("eager", "aot_eager")
    ]
    for r in rows:
        assert r["status"] == "done" and float(r["median_ms"]) > 0
        assert r["allclose"] == "true"
        run = load_run(folder / r["run"])
        # the numbers are the point's stored summary row
        stored = json.loads((folder / r["run"] / "run.json").read_text())["summary"]
        row = next(x for x in stored if x["name"] == r["variant"])
        assert float(r["median_ms"]) == pytest.approx(row["median_ms"])
        assert run.config.batch_size == int(r["value"])
        if r["variant"] == "aot_eager":
            assert float(r["compile_s"]) > 0 and float(r["speedup_lo"]) <= float(r["speedup"]) <= float(r["speedup_hi"])
            assert r["recompiles"] != ""
    doc = json.loads((folder / SWEEP_JSON).read_text())
    assert doc["param"] == "batch_size" and doc["environment"]["torch"]
    assert doc["config"]["variants"] == ["eager", "aot_eager"]


def test_show_and_compare_understand_a_sweep_folder(stopped_then_resumed, capsys):
    folder = stopped_then_resumed["folder"]
    assert cli.main(["show", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Sweep: batch_size over 1,4,16,64,256")
    assert "5 points: 5 complete" in out
    assert sum(1 for line in out.splitlines() if line.split()[:2] == ["256", "aot_eager"]) == 1
    assert cli.main(["compare", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "#5" in out and "batch 256" in out
    assert cli.main(["compare", str(folder), str(folder / SWEEP_JSON)]) == 0
    assert "#2 speedup" in capsys.readouterr().out


def test_a_crashed_point_is_marked_failed_and_the_sweep_goes_on(tmp_path):
    """A session factory (how remote targets plug in) whose worker dies at once."""
    crash = WorkerLauncher(command=(sys.executable, "-c", "import sys; sys.exit(5)"))
    made = []

    def crashing(config, store, on_event, on_log):
        made.append(config.batch_size)
        return RunSession(config, store, launcher=crash, on_event=on_event, on_log=on_log)

    folder = new_sweep(SweepSpec.parse("batch_size", "2,3,5"), sweep_base(), tmp_path)
    outcome = SweepRunner(folder, concurrency=2, session_factory=crashing).run()
    assert sorted(made) == [2, 3, 5]
    assert outcome.record.status == "complete" and outcome.record.message == "3 of 3 points failed"
    for p in outcome.record.points:
        assert p.status == "failed" and "worker process died (exited with code 5)" in p.message
        assert p.run and load_run(folder.path / p.run).status == "failed"
    assert [r["status"] for r in csv_rows(folder.path)] == ["not_run"] * 3


FAILING_BACKEND = """
import torch
from torch._dynamo import register_backend


@register_backend
def fails_at_batch_4(gm, example_inputs):
    if any(tuple(getattr(t, "shape", ())) == (4, 32) for t in example_inputs):
        raise RuntimeError("this backend refuses batch 4")
    from torch._dynamo.backends.debugging import aot_eager

    return aot_eager(gm, example_inputs)
"""


def test_cli_a_failing_point_exit_3_the_others_run(tmp_path, capsys):
    backend = tmp_path / "fails_at_4.py"
    backend.write_text(textwrap.dedent(FAILING_BACKEND))
    code = cli.main(
        [
            "sweep", "--param", "batch_size", "--values", "4,16", "--layers", "32,32,8",
            "--device", "cpu", "--iterations", "10", "--warmup", "2", "--rounds", "1",
            "--warmup-min-ms", "0", "--compile-timing", "in_run", "--variants", "eager,fails_at_batch_4",
            "--backend-modules", str(backend), "--out", str(tmp_path / "sweeps"),
        ]
    )
    captured = capsys.readouterr()
    assert code == 3, captured.err
    (folder,) = (tmp_path / "sweeps").iterdir()
    record = load_sweep(folder)
    assert [p.status for p in record.points] == ["failed", "complete"]
    assert "fails_at_batch_4 failed" in record.points[0].message and "refuses batch 4" in record.points[0].message
    assert "! batch_size=4 failed: fails_at_batch_4 failed" in captured.out
    assert "point 2/2 batch_size=16: complete" in captured.err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--param", "batch_size", "--values", "1,0"], "batch_size=0: must be at least 1"),
        (["--param", "batch_size", "--values", "1,two"], "'two' is not a whole number"),
        (["--param", "speed", "--values", "1"], "'speed' cannot be swept"),
        (["--param", "batch_size"], "give the values"),
        (["--param", "batch_size", "--range", "64:1"], "STOP (1) is below START (64)"),
        (["--param", "dtype", "--values", "fp32,fp8"], "'fp8' is not one of fp32, tf32, bf16, fp16"),
        (["--param", "hidden_width", "--values", "8", "--layers", "4,2"], "has no hidden layer"),
        (["--param", "batch_size", "--values", "1,1"], "1 is listed twice"),
        (["--resume", "nowhere", "--batch-size", "3"], "--batch-size: --resume runs the sweep as it was made"),
        (["--param", "batch_size", "--values", "1", "--iterations", "0"], "iterations: must be at least 1"),
        (["--resume", "."], ".: not a sweep folder (it has no sweep.json)"),
    ],
)
def test_cli_bad_sweeps_exit_2_saying_why(tmp_path, capsys, args, words):
    code = cli.main(["sweep", *args, "--out", str(tmp_path / "s")] if "--resume" not in args else ["sweep", *args])
    assert code == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_ctrl_c_exit_130_keeps_the_points_done(tmp_path):
    """Point 1 finishes, point 2 is long: Ctrl+C stops it, point 1 stays complete."""
    out = tmp_path / "sweeps"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "compile_studio.cli", "sweep", "--param", "iterations",
            "--values", "10,1000000", "--layers", "32,32,8", "--device", "cpu", "--warmup", "2",
            "--rounds", "1", "--warmup-min-ms", "0", "--variants", "eager", "--out", str(out),
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        folders = list(out.iterdir()) if out.exists() else []
        if folders and (folders[0] / SWEEP_JSON).exists():
            record = load_sweep(folders[0])
            second = record.points[1]
            samples = folders[0] / second.run / "samples.csv" if second.run else None
            if samples is not None and samples.exists() and samples.read_text().count("measure") > 5:
                break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    record = load_sweep(folders[0])
    assert record.status == "stopped"
    assert [p.status for p in record.points] == ["complete", "stopped"]
    assert "interrupted" in stderr and "saved:" in stdout
    assert load_run(folders[0] / record.points[1].run).variants["eager"].samples.count("measure") > 5


def test_a_damaged_sweep_json_says_what_is_wrong(tmp_path, capsys):
    folder = tmp_path / "sweep"
    folder.mkdir()
    (folder / SWEEP_JSON).write_text('{"param": "batch_size", "points": [')
    with pytest.raises(SweepDamaged, match=r"sweep.json is damaged \(line 1"):
        load_sweep(folder)
    assert cli.main(["show", str(folder)]) == 3
    assert "sweep.json is damaged" in capsys.readouterr().err
    assert cli.main(["sweep", "--resume", str(folder)]) == 3
    assert "sweep.json is damaged" in capsys.readouterr().err
    (folder / SWEEP_JSON).write_text(json.dumps({"param": "batch_size", "points": {}}))
    with pytest.raises(SweepDamaged, match="points is not a list"):
        load_sweep(folder)
    (folder / SWEEP_JSON).write_text("[1, 2]")
    with pytest.raises(SweepDamaged, match="not a Compile Studio sweep record"):
        load_sweep(folder)
    (folder / SWEEP_JSON).write_bytes(b'{"param": "\xff"}')
    with pytest.raises(SweepDamaged, match="not UTF-8"):
        load_sweep(folder)


def test_wrongly_typed_fields_fall_back_and_are_listed(tmp_path):
    folder = new_sweep(SweepSpec.parse("batch_size", "1,2,3"), sweep_base(), tmp_path)
    doc = json.loads((folder.path / SWEEP_JSON).read_text())
    doc["points"][0]["run"] = "../../etc"
    doc["points"][0]["status"] = "exploded"
    doc["points"][1]["variants"] = [{"variant": "eager", "median_ms": "fast", "allclose": 3}, {"median_ms": 1}]
    doc["points"][2] = {"index": "two", "value": 3}
    doc["points"].append("not a point")
    doc["concurrency"] = 10**30
    doc["environment"] = {"torch": ["a"] * 20000}
    (folder.path / SWEEP_JSON).write_text(json.dumps(doc))
    record = load_sweep(folder.path)
    assert [p.index for p in record.points] == [0, 1]
    assert record.points[0].run == "" and record.points[0].status == "pending"
    (eager,) = record.points[1].variants
    assert eager.median_ms is None and eager.allclose is None
    assert record.concurrency == 1 and record.environment == {}
    text = "\n".join(record.load_problems)
    for words in ("not a folder name", "exploded", "median_ms", "point 2", "point 3 is not an object",
                  "without a name"):
        assert words in text


def test_values_ranges_and_axes():
    assert parse_range("batch_size", "1:1024:x2") == [2**k for k in range(11)]
    assert parse_range("batch_size", "64:256:+64") == [64, 128, 192, 256]
    assert parse_range("batch_size", "3:5") == [3, 4, 5]
    assert SweepSpec.parse("layers", "8,8,2;16,16,2").values == ("8,8,2", "16,16,2")
    assert SweepSpec.parse("dynamic", "false,true").values == ("false", "true")
    assert SweepSpec.parse("dynamic", "auto,false,true").point_config(sweep_base(), "false").dynamic == "false"
    # a sweep saved when dynamic was a flag: its true/false values still make their configs
    assert SweepSpec("dynamic", (False, True)).point_config(sweep_base(), True).dynamic == "true"
    assert SweepSpec("dynamic", (False, True)).point_config(sweep_base(), False).dynamic == "auto"
    base = sweep_base(layers="64,128,256,10")
    spec = SweepSpec.parse("hidden_width", "32")
    assert spec.point_config(base, 32).layers == "64,32,32,10"
    assert SweepSpec.parse("layer:2", "7").point_config(base, 7).layers == "64,128,7,10"
    tf = sweep_base(model="transformer", transformer="32,2,64,16,1")
    assert SweepSpec.parse("seq_len", "8").point_config(tf, 8).transformer == "32,2,64,8,1"
    assert spec.point_config(base, 32).label == "hidden_width=32"
    xs, log = x_positions([1, 4, 16])
    assert log and xs == pytest.approx([0, 0.60206, 1.20412], abs=1e-4)
    assert x_positions([2, 3]) == ([2.0, 3.0], False)
    assert x_positions(["fp32", "bf16"]) == ([0.0, 1.0], False)
    with pytest.raises(ConfigError, match="layer:9"):
        SweepSpec.parse("layer:9", "4").validate(base)


def test_sweep_modules_stay_off_torch_and_qt():
    code = (
        "import sys; import compile_studio.jobs.sweep, compile_studio.jobs.shape_sweep_run, compile_studio.cli.sweep, compile_studio.cli.sweep_show;"
        "bad = [m for m in ('torch', 'PySide6', 'pyqtgraph') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


# -- the window's Sweep view -----------------------------------------------------------------


def _window(qtbot):
    from compile_studio.gui.main_window import MainWindow

    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    return window


def test_sweep_view_shows_a_finished_sweep_hover_double_click_and_exports(stopped_then_resumed, qtbot, tmp_path):
    from PySide6.QtGui import QColor, QImage

    from compile_studio.gui.sweep_dock import show_dock

    folder = stopped_then_resumed["folder"]
    window = _window(qtbot)
    view = window.sweep_view
    show_dock(window, view.dock)
    assert view.open_sweep(folder)
    plot = view.plot
    assert plot.log_x
    by_plot = {name: [m for m in plot.markers if m.plot == name] for name in plot.PLOTS}
    assert len(by_plot["speedup"]) == 5 and len(by_plot["latency"]) == 10 and len(by_plot["compile"]) == 5
    assert "5 points: 5 complete" in view.status.text() and "batch_size over 1,4,16,64,256" in view.title.text()
    ticks = plot.plots["speedup"].getAxis("bottom")._tickLevels[0]
    assert [t[1] for t in ticks] == ["1", "4", "16", "64", "256"]
    # hover: the numbers of the point under the mouse
    marker = next(m for m in by_plot["speedup"] if m.index == 2)
    text = plot.hover_at(plot.marker_scene_pos(marker))
    row = next(r for r in csv_rows(folder) if r["value"] == "16" and r["variant"] == "aot_eager")
    assert text.startswith("batch_size = 16 · aot_eager (complete)")
    assert f"speedup {float(row['speedup']):.2f}×" in text and f"compile {float(row['compile_s']):.2f} s" in text
    assert plot.hover.isVisible()
    # double-click: the window shows that point's run
    with qtbot.waitSignal(view.run_requested):
        assert plot.activate_at(plot.marker_scene_pos(marker)) == 2
    assert window.current_run.run_id == stopped_then_resumed["final"].points[2].run
    assert window.current_run.config.batch_size == 16
    # exports: PNG (with the variants' colours), SVG, CSV
    png, svg, csv_out = tmp_path / "sweep.png", tmp_path / "sweep.svg", tmp_path / "sweep.csv"
    assert view.export(png) and view.export(svg) and view.export(csv_out)
    image = QImage(str(png))
    assert image.width() == 2 * plot.width() and image.height() == 2 * plot.height()
    blue = QColor("#0072B2")
    pixels = [
        image.pixelColor(x, y) for x in range(0, image.width(), 3) for y in range(0, image.height(), 3)
    ]
    assert sum(1 for c in pixels if abs(c.red() - blue.red()) + abs(c.green() - blue.green()) + abs(c.blue() - blue.blue()) < 40) > 50
    assert "<svg" in svg.read_text()[:2000] and "batch_size" in svg.read_text()
    assert csv_out.read_text() == (folder / SWEEP_CSV).read_text()


def test_sweep_view_reports_a_damaged_sweep_in_the_banner(qtbot, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / SWEEP_JSON).write_text("{ not json")
    window = _window(qtbot)
    assert not window.sweep_view.open_sweep(folder)
    assert "Cannot open the sweep broken: sweep.json is damaged (line 1" in window.error_text


def test_a_configuration_the_worker_refuses_is_exit_2_after_one_point(tmp_path, capsys):
    """The machine has no such device: every point would be refused, so the sweep stops at once."""
    code = cli.main(
        ["sweep", "--param", "batch_size", "--values", "1,2,3", "--layers", "8,8", "--device", "cuda:7",
         "--variants", "eager", "--out", str(tmp_path), "--quiet"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "cuda:7 is not available" in err
    (folder,) = tmp_path.iterdir()
    record = load_sweep(folder)
    assert [p.status for p in record.points] == ["failed", "pending", "pending"]


def test_a_point_left_running_by_a_process_that_ended_reads_as_stopped_and_resume_reruns_it(tmp_path):
    folder = new_sweep(SweepSpec.parse("batch_size", "1,2,3"), sweep_base(), tmp_path)
    doc = json.loads((folder.path / SWEEP_JSON).read_text())
    doc["status"] = "running"
    doc["points"][0]["status"] = "complete"
    doc["points"][1]["status"] = "running"
    doc["owner_pid"] = 2**22 + 4321  # above any pid_max: no such process
    doc["owner_host"] = ""
    (folder.path / SWEEP_JSON).write_text(json.dumps(doc))
    record = load_sweep(folder.path)
    assert [p.status for p in record.points] == ["complete", "stopped", "pending"]
    assert "interrupted" in record.points[1].message and record.status == "stopped"
    assert SweepRunner(SweepFolder.open(folder.path)).to_run() == [1, 2]
    # written before owners were kept: no owner, so nobody runs it any more
    del doc["owner_pid"], doc["owner_host"]
    (folder.path / SWEEP_JSON).write_text(json.dumps(doc))
    assert load_sweep(folder.path).points[1].status == "stopped"
    # a live owner on this machine (this process): still running
    doc["owner_pid"] = os.getpid()
    (folder.path / SWEEP_JSON).write_text(json.dumps(doc))
    assert load_sweep(folder.path).points[1].status == "running"
    # another machine's process cannot be looked at: left as it says
    doc["owner_pid"], doc["owner_host"] = 2**22 + 4321, "elsewhere.invalid"
    (folder.path / SWEEP_JSON).write_text(json.dumps(doc))
    assert load_sweep(folder.path).points[1].status == "running"


def test_the_run_store_lists_sweep_folders_apart_not_as_damaged_runs(tmp_path, capsys):
    from compile_studio.results.storage.store import RunStore

    sweep = new_sweep(SweepSpec.parse("batch_size", "1,2"), sweep_base(), tmp_path)
    (tmp_path / "20260101-000000_shape_x").mkdir()
    (tmp_path / "20260101-000000_shape_x" / "shape_sweep.json").write_text("{}")
    (tmp_path / "20260101-000000_broken").mkdir()
    store = RunStore(tmp_path)
    listed = [listing.folder.name for listing in store.list_runs(samples=False)]
    assert listed == ["20260101-000000_broken"]
    assert [f.name for f in store.sweep_folders()] == sorted(
        [sweep.path.name, "20260101-000000_shape_x"], reverse=True
    )
    assert cli.main(["list", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "damaged" in line]
    assert len(rows) == 1 and "20260101-000000_broken" in rows[0]
    assert "2 sweep folders here too" in out and sweep.path.name in out
    assert "`compile-studio-cli show FOLDER` prints one" in out
