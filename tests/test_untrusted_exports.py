"""Exports of runs from outside: names never leave the chosen folder, cells and text stay inert."""

from __future__ import annotations

import csv
import json
import os
import stat
from pathlib import Path

import pytest

from compile_studio.results import load_run
from compile_studio.results.report.run_export import (
    export_markdown,
    export_run,
    md_text,
    safe_file_stem,
)
from compile_studio.results.storage.file_io import atomic_write_text, read_cell, safe_cell
from compile_studio.results.storage.run_files import summary_to_csv
from support.gui_helpers import open_window
from support.untrusted_helpers import saved_run


def crafted(tmp_path: Path, **fields) -> Path:
    folder = saved_run(tmp_path / "store")
    path = folder / "run.json"
    doc = json.loads(path.read_text())
    doc.update(fields)
    path.write_text(json.dumps(doc))
    return folder


def every_file(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("run_id", ["../../x", "/tmp/abs-export-target", "..", "a/../../b", ".hidden"])
def test_export_run_id_never_leaves_the_folder(tmp_path, run_id):
    run = load_run(crafted(tmp_path, run_id=run_id))
    out = tmp_path / "deep" / "er" / "out"
    out.mkdir(parents=True)
    before = every_file(tmp_path) - every_file(out)
    written = export_run(run, out, prefix=f"{run.run_id}_")
    written += export_markdown(run, out, b"\x89PNG", name=f"{run.run_id}_report")
    assert all(p.resolve().parent == out.resolve() for p in written)
    assert not any(p.name.startswith(".") for p in out.iterdir())
    assert every_file(tmp_path) - every_file(out) == before
    assert not Path("/tmp/abs-export-target_run.json").exists()


def test_window_export_of_a_crafted_run_stays_in_the_chosen_folder(qtbot, tmp_path):
    run = load_run(crafted(tmp_path, run_id="../../escaped"))
    out = tmp_path / "a" / "b" / "out"
    out.mkdir(parents=True)
    window = open_window(qtbot)
    before = every_file(tmp_path) - every_file(out)
    written = window.exports.export_run_to(out, run) + window.exports.export_report_to(out, run)
    assert len(written) >= 4
    assert all(p.parent == out for p in written)
    assert every_file(tmp_path) - every_file(out) == before


def test_safe_file_stem():
    for text in ("../../x", "/etc/passwd", "a\\b", "..", "x\0y", "é"):
        stem = safe_file_stem(text)
        assert "/" not in stem and "\\" not in stem and ".." not in stem and not stem.startswith(".")
        assert stem


def test_csv_formula_cells_neutralised_numbers_kept(tmp_path):
    folder = saved_run(tmp_path, variants=("eager", "=HYPERLINK(\"x\")", "@SUM(A1)", "+1", "-cmd"))
    run = load_run(folder)
    rows = list(csv.reader(summary_to_csv(run).splitlines()))
    names = [r[0] for r in rows[1:] if r[0] != "default"]
    assert names == ["eager", "'=HYPERLINK(\"x\")", "'@SUM(A1)", "'+1", "'-cmd"]
    samples = list(csv.reader((folder / "samples.csv").read_text().splitlines()))
    assert all(not r[0].startswith(("=", "+", "-", "@")) for r in samples[1:])
    # numbers stay numbers; the names come back as they were
    assert safe_cell(-0.5) == "-0.5" and safe_cell(-3) == "-3"
    assert safe_cell("\tx") == "'\tx" and safe_cell("\rx") == "'\rx"
    assert read_cell(safe_cell("=1+1")) == "=1+1" and read_cell("'plain") == "'plain"
    assert set(run.variants) >= {"eager", "=HYPERLINK(\"x\")", "@SUM(A1)", "+1", "-cmd"}


def test_markdown_escapes_text_from_the_run(tmp_path):
    run = load_run(crafted(
        tmp_path, run_id="x](http://evil)![img](http://evil/a.png)",
        message="<script>alert(1)</script> **bold** `code`\n# heading",
        environment={"torch": "2`` evil [link](http://x)", "device": "cpu"},
    ))
    out = tmp_path / "out"
    out.mkdir()
    export_markdown(run, out)
    text = (out / "report.md").read_text()
    assert "](http://evil" not in text
    assert "- torch: ``` 2`` evil [link](http://x) ```" in text  # a code span: never a link
    assert "<script>" not in text
    assert "\n# heading" not in text
    assert md_text("a|b", table=True) == "a|b"


def test_files_follow_the_umask(tmp_path):
    run = load_run(saved_run(tmp_path / "store"))
    old = os.umask(0o022)
    try:
        out = tmp_path / "out"
        out.mkdir()
        paths = export_run(run, out) + export_markdown(run, out, b"png")
        atomic_write_text(out / "atomic.txt", "x")
        for p in [*paths, out / "atomic.txt"]:
            assert stat.S_IMODE(p.stat().st_mode) == 0o644, p
        os.umask(0o077)
        for p in export_run(run, out, prefix="p_"):
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    finally:
        os.umask(old)
