"""The CLI's show/compare take what list prints; verdict and table agree; not-run variants kept."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from compile_studio.cli import commands as cli
from compile_studio.core import protocol
from compile_studio.results import RunStore, load_run, summarize
from compile_studio.results.report.formatting import (
    fmt_break_even,
    fmt_pays_off,
    plural,
    summary_cells,
)
from compile_studio.results.storage.recorder import RunRecorder

CLI = [sys.executable, "-m", "compile_studio.cli"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def events(variants=("eager", "default"), stop_after: int | None = None, compile_s=1.5, base=2.0):
    """A run's events; with ``stop_after`` the run is stopped after that many variants."""
    yield {"type": "hello", "environment": {"torch": "x", "devices": ["cpu"]}}
    for k, name in enumerate(variants):
        if stop_after is not None and k >= stop_after:
            yield {"type": "done", "status": "stopped"}
            return
        yield {"type": "phase", "variant": name, "phase": "build", "iterations": 0}
        if name != "eager":
            yield {"type": "compiled", "variant": name, "compile_s": compile_s, "first_call_ms": 1500.0,
                   "graphs": 1, "graph_breaks": 0, "break_reasons": [], "recompiles": 0}
        wall = [base / (k + 1) + 0.001 * (i % 7) for i in range(40)]
        yield {"type": "samples", "variant": name, "phase": "measure", "first_iteration": 0,
               "wall_ms": wall, "device_ms": None}
        yield {"type": "variant_done", "variant": name, "status": "done", "allclose": True,
               "max_abs_error": 1e-7, "max_rel_error": 1e-7, "peak_memory_bytes": 1024,
               "memory_kind": "rss_peak_growth", "recompiles_in_window": 0}
    yield {"type": "done", "status": "completed"}


def record(store: RunStore, when: datetime, variants=("eager", "default"), label="", **kw) -> Path:
    config = {"layers": "8,8", "batch_size": 2, "variants": list(variants), "label": label}
    rec = RunRecorder(config, store.new_run_folder("mlp8-8_b2", when))
    rec.run.created = when.isoformat(timespec="seconds")
    for e in events(variants, **kw):
        rec.handle(protocol.from_dict(e))
    assert rec.folder is not None
    return rec.folder


@pytest.fixture
def store(tmp_path) -> RunStore:
    s = RunStore(tmp_path / "my runs")
    record(s, datetime(2026, 12, 1, 9, 0, 0), label="oldest")
    record(s, datetime(2026, 12, 2, 9, 0, 0), label="middle", base=3.0)
    record(s, datetime(2026, 12, 3, 9, 0, 0), label="newest", base=4.0)
    return s


def names(store: RunStore) -> list[str]:
    return [f.name for f in cli.store_folders(store)]


# -- point 1: run references -------------------------------------------------------------


def test_latest_index_id_and_prefix_resolve(store):
    newest, middle, oldest = names(store)
    assert newest.startswith("20261203")
    assert cli.resolve_run("latest", store).name == newest
    assert cli.resolve_run("latest~1", store).name == middle
    assert cli.resolve_run("latest~2", store).name == oldest
    assert cli.resolve_run("1", store).name == newest
    assert cli.resolve_run("#3", store).name == oldest
    assert cli.resolve_run(middle, store).name == middle
    assert cli.resolve_run("20261202", store).name == middle
    assert cli.resolve_run(str(store.root / oldest), store).name == oldest


def test_ambiguous_missing_and_out_of_range_refs_say_why(store):
    with pytest.raises(cli.RunNotFound, match="matches 3 runs"):
        cli.resolve_run("2026120", store)
    with pytest.raises(cli.RunNotFound, match="has 3 runs"):
        cli.resolve_run("latest~3", store)
    with pytest.raises(cli.RunNotFound, match="has 3 runs"):
        cli.resolve_run("4", store)
    with pytest.raises(cli.RunNotFound, match="close matches") as info:
        cli.resolve_run("20261204-090000_mlp8-8_b2", store)
    assert names(store)[0] in str(info.value)
    with pytest.raises(cli.RunNotFound, match="no runs"):
        cli.resolve_run("latest", RunStore(store.root / "empty"))


def test_show_takes_what_list_prints_and_not_found_is_exit_2(store, capsys):
    """``list`` in a process of its own; ``show`` of each reference in this one (its exit codes
    as a process: tests/test_cli.py)."""
    listing = run_cli("list", "--out", str(store.root))
    assert listing.returncode == 0
    newest = names(store)[0]
    first_row = listing.stdout.splitlines()[3]
    assert first_row.split()[:2] == ["1", newest]
    for ref in (newest, newest[:12], "latest", "1"):
        code = cli.main(["show", ref, "--out", str(store.root)])
        shown = capsys.readouterr()
        assert code == 0, (ref, shown.err)
        assert f"run {newest}" in shown.out
    assert cli.main(["show", newest.replace("20261203", "20261209"), "--out", str(store.root)]) == 2
    missing = capsys.readouterr().err
    assert "close matches" in missing and newest in missing
    assert cli.main(["show", "2026", "--out", str(store.root)]) == 2
    assert "give more of the id" in capsys.readouterr().err


def test_show_a_damaged_run_is_still_a_runtime_failure(tmp_path):
    (tmp_path / "run.json").write_text("{")
    assert run_cli("show", str(tmp_path)).returncode == 3


def test_compare_shows_ratios_against_the_first_run_and_whole_ids(store):
    p = run_cli("compare", "latest~2", "latest", "--out", str(store.root))
    assert p.returncode == 0, p.stderr
    newest, _, oldest = names(store)
    assert newest in p.stdout and oldest in p.stdout
    assert "(oldest)" in p.stdout and "(newest)" in p.stdout
    assert "vs #1" in p.stdout
    rows = [line for line in p.stdout.splitlines() if re.match(r"#2\s+\d\.\d\d×", line)]
    assert rows and all("0.50×" in line for line in rows)
    bad = run_cli("compare", "latest", "nope", "--out", str(store.root))
    assert bad.returncode == 2 and "nope" in bad.stderr


# -- point 12: one break-even, singular and plural ---------------------------------------------


def test_break_even_in_the_verdict_is_the_tables(tmp_path):
    s = RunStore(tmp_path)
    folder = record(s, datetime(2026, 12, 1), compile_s=1.2785)
    run = load_run(folder)
    row = next(r for r in summarize(run) if r.name == "default")
    assert row.verdict == "faster"
    table = fmt_break_even(row)
    assert table in summary_cells(row)
    out = io.StringIO()
    cli.print_run(run, out)
    said = re.search(r"pays off after ([\d,]+) calls", out.getvalue())
    assert said is not None and said.group(1) == table
    assert fmt_pays_off(row) == f"pays off after {table} calls"


def test_singular_and_plural():
    assert plural(1, "variant") == "1 variant"
    assert plural(2, "variant") == "2 variants"
    assert plural(0, "run") == "0 runs"
    assert plural(1200, "call") == "1,200 calls"


def test_one_variant_run_says_1_variant(tmp_path):
    folder = record(RunStore(tmp_path), datetime(2026, 12, 1), variants=("eager",))
    out = io.StringIO()
    cli.print_run(load_run(folder), out)
    assert "· 1 variant ·" in out.getvalue()


# -- point 9: variants that never started -----------------------------------------------------


def test_stopped_run_keeps_variants_that_never_started(tmp_path):
    variants = ("eager", "default", "aot_eager")
    folder = record(RunStore(tmp_path), datetime(2026, 12, 1), variants=variants, stop_after=2)
    run = load_run(folder)
    assert list(run.variants) == list(variants)
    assert run.variants["aot_eager"].status == protocol.VariantStatus.NOT_RUN
    assert run.variants["default"].status == protocol.VariantStatus.DONE
    summary = (folder / "summary.csv").read_text()
    assert "aot_eager,not_run" in summary
    row = next(r for r in summarize(run) if r.name == "aot_eager")
    assert summary_cells(row)[1] == "not run"
    out = io.StringIO()
    cli.print_run(run, out)
    assert "3 variants, 1 not run" in out.getvalue()


def test_recorder_lists_every_planned_variant_as_pending_from_the_start(tmp_path):
    rec = RunRecorder({"layers": "8,8", "batch_size": 2, "variants": ["eager", "default"]}, None)
    assert {n: str(v.status) for n, v in rec.run.variants.items()} == {
        "eager": "pending", "default": "pending"
    }
    rec.handle(protocol.from_dict({"type": "phase", "variant": "eager", "phase": "build", "iterations": 0}))
    rec.stop()
    assert rec.run.variants["eager"].status == protocol.VariantStatus.STOPPED
    assert rec.run.variants["default"].status == protocol.VariantStatus.NOT_RUN


def test_worker_crash_marks_unstarted_variants_not_run(tmp_path):
    rec = RunRecorder({"layers": "8,8", "batch_size": 2, "variants": ["eager", "default"]}, None)
    rec.handle(protocol.from_dict({"type": "phase", "variant": "eager", "phase": "build", "iterations": 0}))
    rec.fail("the worker died")
    assert rec.run.variants["eager"].status == protocol.VariantStatus.FAILED
    assert rec.run.variants["default"].status == protocol.VariantStatus.NOT_RUN


def test_a_configuration_refused_before_any_work_stores_no_run(store, capsys):
    """In this process (the exit status of a process refused for its device: tests/test_cli.py)."""
    before = [f.name for f in cli.store_folders(store)]
    code = cli.main(["run", "--device", "cuda:3", "--layers", "8,8", "--batch-size", "2", "--iterations", "30",
                     "--out", str(store.root)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "cuda:3 is not available" in err
    assert [f.name for f in cli.store_folders(store)] == before
    assert cli.resolve_run("latest", store).name == before[0]


def test_show_into_a_closed_pipe_ends_without_a_traceback(store):
    """``show … | head -1``: the reader is gone before the table is written (its end is closed)."""
    code = (
        "import os, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 1)\n"
        "from compile_studio.cli.commands import main\n"
        "sys.exit(main(sys.argv[1:]))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code, "show", "--out", str(store.root), "latest"],
        capture_output=True, text=True, timeout=120,
    )
    assert shown.returncode == 141, shown.stderr
    assert "Traceback" not in shown.stderr and "BrokenPipe" not in shown.stderr, shown.stderr
