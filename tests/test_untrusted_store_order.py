"""One store, one order: `list`, `show N`, `latest` and the window's history number the runs from
one listing of the store (sweep folders in it are no runs), ordered by the UTC creation time in
run.json, whatever clock or TZ each run was made under."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from compile_studio.cli import common as cli_common
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.sweep import new_sweep
from compile_studio.jobs.sweep_spec import SweepSpec
from compile_studio.results import RunStore
from support.untrusted_helpers import saved_run

CLI = [sys.executable, "-m", "compile_studio.cli"]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def listed_ids(store: Path) -> list[str]:
    """The run ids of `list`, row by row."""
    p = cli("list", "--out", str(store))
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines()]
    return [row[1] for row in rows if len(row) > 2 and row[0].isdigit() and row[1].startswith("20")]


def shown_id(store: Path, ref: str) -> str:
    p = cli("show", ref, "--out", str(store))
    assert p.returncode == 0, p.stderr
    return next(word for word in p.stdout.split() if word.startswith("20"))  # the run id printed


def test_a_store_holding_runs_and_a_sweep_numbers_them_one_way(tmp_path):
    store = tmp_path / "store"
    older = saved_run(store, "older")
    time.sleep(1.1)
    new_sweep(SweepSpec.parse("batch_size", "1,2"), BenchmarkConfig(device="cpu", layers="8,8"), store)
    newer = saved_run(store, "newer")
    folders = RunStore(store).run_folders()
    assert folders == [newer, older]  # the sweep folder is no run
    assert cli_common.store_folders(RunStore(store)) == folders
    assert [x.folder for x in RunStore(store).list_runs(samples=False)] == folders
    ids = listed_ids(store)
    assert ids == [newer.name, older.name]
    for k, name in enumerate(ids, 1):
        assert cli_common.resolve_run(str(k), RunStore(store)).name == name
    assert cli_common.resolve_run("latest", RunStore(store)) == newer
    assert cli_common.resolve_run("latest~1", RunStore(store)) == older


def test_the_windows_history_numbers_the_store_as_list_does(qtbot, tmp_path):
    from compile_studio.gui.history_panel import HistoryPanel

    store = tmp_path / "store"
    a = saved_run(store, "a")
    new_sweep(SweepSpec.parse("batch_size", "1,2"), BenchmarkConfig(device="cpu", layers="8,8"), store)
    b = saved_run(store, "b")
    panel = HistoryPanel(RunStore(store))
    qtbot.addWidget(panel)
    panel.refresh()
    assert [e.path for e in panel._entries] == RunStore(store).run_folders() == [b, a]


def test_latest_follows_utc_not_the_local_clock(tmp_path):
    """A run made later under a TZ west of the first one's is still the latest."""
    store = tmp_path / "store"
    flags = ["run", "--out", str(store), "--layers", "8,8", "--batch-size", "2", "--device", "cpu",
             "--iterations", "3", "--warmup", "0", "--rounds", "1", "--variants", "eager", "--quiet"]
    first = cli(*flags, "--label", "first", env={"TZ": "Asia/Tokyo"})
    assert first.returncode == 0, first.stderr
    second = cli(*flags, "--label", "second", env={"TZ": "America/Los_Angeles"})
    assert second.returncode == 0, second.stderr
    runs = {json.loads((f / "run.json").read_text())["config"]["label"]: f for f in store.iterdir()}
    assert all(f.name[15] == "Z" for f in runs.values())  # named in UTC
    created = json.loads((runs["second"] / "run.json").read_text())["created"]
    assert created.endswith("+00:00")
    for tz in ("Asia/Tokyo", "America/Los_Angeles", "UTC"):
        assert shown_id(store, "latest") == runs["second"].name
        p = cli("show", "latest", "--out", str(store), env={"TZ": tz})
        assert runs["second"].name in p.stdout
        assert listed_ids(store)[0] == runs["second"].name


def test_an_older_runs_local_time_still_orders_with_utc_ones(tmp_path):
    """run.json of an older version: a time without an offset is local time; a name a label."""
    store = tmp_path / "store"
    old = saved_run(store, "old")
    doc = json.loads((old / "run.json").read_text())
    doc["created"] = "2020-01-01T12:00:00"  # no offset, as older versions wrote
    (old / "run.json").write_text(json.dumps(doc))
    renamed = old.with_name("29991231-235959_old")  # a name that sorts first says nothing
    old.rename(renamed)
    new = saved_run(store, "new")
    assert RunStore(store).run_folders() == [new, renamed]
    assert Path(cli_common.resolve_run("latest", RunStore(store))) == new
