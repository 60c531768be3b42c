"""A run's identity is the folder it was read from, never the run_id inside its run.json:
the Why tab reads and opens that folder, and two folders with the same id inside both show."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.paths import runs_dir
from compile_studio.jobs.sweep import new_sweep
from compile_studio.jobs.sweep_spec import SweepSpec
from compile_studio.results import load_run
from support.gui_helpers import open_window
from support.untrusted_helpers import edit_json, saved_run


def write_why(folder: Path, operator: str) -> None:
    """A why.json whose one profiled operator names ``operator``."""
    (folder / "why.json").write_text(json.dumps({"variants": {"default": {
        "compiled": True,
        "profile": {"calls": 5, "ops": [{"name": operator, "self_ms_per_call": 0.5, "share": 0.9}]},
    }}}))


def shown_operator(window) -> str:
    item = window.why_view.ops.item(0, 0)
    return item.text() if item is not None else ""


def test_a_crafted_run_id_never_shows_or_opens_another_folder(qtbot, monkeypatch):
    victim = saved_run(runs_dir(), label="victim")
    write_why(victim, "aten::victims_kernel")
    crafted = saved_run(runs_dir(), label="crafted")
    write_why(crafted, "aten::crafted_kernel")
    edit_json(crafted, lambda d: d.update(run_id=victim.name))
    opened: list[str] = []
    monkeypatch.setattr(
        "compile_studio.gui.why_view.QDesktopServices.openUrl", lambda url: opened.append(url.toLocalFile())
    )
    window = open_window(qtbot)
    entry = next(e for e in window.history.entries() if e.path == crafted)
    window.history.show_entry(entry)
    qtbot.waitUntil(lambda: window.current_run is not None, timeout=10_000)
    assert window.why_view.folder == crafted
    assert shown_operator(window) == "aten::crafted_kernel"
    window.why_view.open_folder()
    assert opened == [str(crafted)]


def test_a_copied_folder_and_a_sweep_point_show_their_own_diagnostics(qtbot, tmp_path):
    original = saved_run(runs_dir(), label="original")
    write_why(original, "aten::original_kernel")
    copy = tmp_path / "sent-by-a-colleague"
    shutil.copytree(original, copy)
    write_why(copy, "aten::copied_kernel")
    window = open_window(qtbot)
    assert window.show_run(load_run(copy))
    assert window.why_view.folder == copy
    assert shown_operator(window) == "aten::copied_kernel"

    sweep = new_sweep(SweepSpec.parse("batch_size", "1,2"), BenchmarkConfig(device="cpu", variants=["eager"]),
                      tmp_path / "sweeps")
    point_run = saved_run(sweep.path, label="point")
    write_why(point_run, "aten::point_kernel")
    sweep.update(lambda record: setattr(record.points[0], "run", point_run.name))
    assert window.sweep_view.open_sweep(sweep.path)
    assert window.sweep_view.open_point(record_index(window)) is not None
    assert window.why_view.folder == point_run
    assert shown_operator(window) == "aten::point_kernel"


def record_index(window) -> int:
    return window.sweep_view.record.points[0].index


def test_two_folders_with_the_same_id_inside_both_show(qtbot, tmp_path):
    first = saved_run(runs_dir(), label="first")
    second = saved_run(runs_dir(), label="second", variants=("eager", "aot_eager"))
    edit_json(second, lambda d: d.update(run_id=first.name))
    elsewhere = tmp_path / "b" / first.name
    shutil.copytree(first, elsewhere)
    edit_json(elsewhere, lambda d: d["config"].update(label="elsewhere"))
    window = open_window(qtbot)
    for entry in window.history.entries():
        window.history.set_checked(entry, True)
    assert window.history.open_run(elsewhere) is not None
    prefixes = {key.split("/")[0] for key in window.plots.series_keys()}
    assert len(prefixes) == 3, window.plots.series_keys()
    assert any(key.endswith("/aot_eager") for key in window.plots.series_keys())
    assert {row.run_name for row in window.table_model.rows()} == {"first", "second", "elsewhere"}
