"""Fuzzed sweep.json, shape_sweep.json and targets.json: each reads as a record or as damaged
(or a targets-file error) in words, never another exception, and never lets a value through unchecked.
A fuzzed settings file (bytes, links, folders and FIFOs in its place): the window starts and says
what it did, and nothing is written through a link."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.settings import AppSettings
from compile_studio.jobs.shape_sweep_run import new_shape_sweep, shape_request
from compile_studio.jobs.sweep import new_sweep
from compile_studio.jobs.sweep_spec import SweepSpec
from compile_studio.launchers.targets import Targets, TargetsFileError, load_targets
from compile_studio.results.records.shape_record import SHAPE_JSON, ShapeSweepRecord
from compile_studio.results.records.sweep_load import load_shape_sweep, load_sweep
from compile_studio.results.records.sweep_record import SWEEP_JSON, SweepDamaged, SweepRecord
from test_untrusted_loading import _json_values

BASE = BenchmarkConfig.from_dict({"layers": "8,8", "device": "cpu", "variants": ["eager", "aot_eager"]})


SWEEP_PATHS = [
    ("param",), ("status",), ("message",), ("concurrency",), ("owner_pid",), ("owner_host",), ("config",),
    ("config", "variants"), ("config", "backend_modules"), ("points",), ("points", 0), ("points", 0, "value"),
    ("points", 0, "status"), ("points", 0, "run"), ("points", 0, "variants"), ("points", 1, "index"),
    ("environment",), ("values_text",), ("schema_version",),
]
SHAPE_PATHS = [
    ("kind",), ("batches",), ("modes",), ("config",), ("points",), ("points", 0), ("points", 0, "variant"),
    ("points", 0, "batch"), ("points", 0, "recompile_reasons"), ("status",), ("repeats",),
    ("recompile_limit",), ("environment",),
]
TARGET_PATHS = [
    ("version",), ("targets",), ("targets", 0), ("targets", 0, "name"), ("targets", 0, "kind"),
    ("targets", 0, "host"), ("targets", 0, "port"), ("targets", 0, "ssh_options"), ("targets", 0, "python"),
    ("targets", 0, "preamble"), ("targets", 1, "via"), ("targets", 1, "gpus"), ("targets", 1, "partition"),
]


@st.composite
def mutations(draw, paths):
    kind = draw(st.sampled_from(["set", "delete", "nest", "bytes"]))
    if kind == "bytes":
        return kind, draw(st.integers(min_value=0, max_value=5_000)), draw(st.binary(min_size=1, max_size=8))
    return kind, draw(st.sampled_from(paths)), draw(_json_values())


def _apply(path: Path, mutation) -> None:
    kind, where, what = mutation
    if kind == "bytes":
        data = bytearray(path.read_bytes())
        at = where % (len(data) + 1)
        path.write_bytes(bytes(data[:at]) + what + bytes(data[at + len(what):]))
        return
    try:
        doc = json.loads(path.read_bytes())
    except ValueError:
        return
    node = doc
    for key in where[:-1]:
        if isinstance(node, dict) and isinstance(node.get(key), (dict, list)):
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return
    last = where[-1]
    if isinstance(node, list):
        if not isinstance(last, int) or last >= len(node):
            return
    elif not isinstance(node, dict):
        return
    if kind == "delete":
        if isinstance(node, dict):
            node.pop(last, None)
        else:
            node.pop(last)
    elif kind == "set":
        node[last] = what
    else:
        deep: object = what
        for _ in range(60):
            deep = [deep]
        node[last] = deep
    path.write_text(json.dumps(doc, allow_nan=True))


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _damaged_or_read(load, json_path: Path, steps):
    """``load`` of ``json_path``'s folder after ``steps``: the record, or None when it reads as
    damaged (saying why in words); any other exception fails the test."""
    for step in steps:
        _apply(json_path, step)
    try:
        return load(json_path.parent)
    except SweepDamaged as exc:
        assert str(exc)
        return None


@SETTINGS
@given(steps=st.lists(mutations(SWEEP_PATHS), min_size=1, max_size=3))
def test_fuzz_sweep_json_is_a_record_or_damaged(tmp_path_factory, steps):
    folder = new_sweep(SweepSpec.parse("batch_size", "1,2,4"), BASE, tmp_path_factory.mktemp("sweeps"))
    record = _damaged_or_read(load_sweep, folder.path / SWEEP_JSON, steps)
    if record is None:
        return
    assert isinstance(record, SweepRecord)
    assert 1 <= record.concurrency <= 64
    assert all(isinstance(p.status, str) for p in record.points)
    assert isinstance(record.config, BenchmarkConfig)


@SETTINGS
@given(steps=st.lists(mutations(SHAPE_PATHS), min_size=1, max_size=3))
def test_fuzz_shape_sweep_json_is_a_record_or_damaged(tmp_path_factory, steps):
    folder = new_shape_sweep(shape_request(BASE, [1, 2, 4]), tmp_path_factory.mktemp("shapes"))
    record = _damaged_or_read(load_shape_sweep, folder.path / SHAPE_JSON, steps)
    if record is None:
        return
    assert isinstance(record, ShapeSweepRecord)
    assert all(isinstance(b, int) for b in record.batches)


VALID_TARGETS = {"version": 1, "targets": [
    {"name": "gpu-box", "kind": "ssh", "host": "gpu-box", "python": "~/venv/bin/python"},
    {"name": "cluster", "kind": "slurm", "via": "login", "partition": "gpu", "gpus": 1},
]}


@SETTINGS
@given(steps=st.lists(mutations(TARGET_PATHS), min_size=1, max_size=3))
def test_fuzz_targets_json_is_targets_or_a_file_error(tmp_path_factory, steps):
    path = tmp_path_factory.mktemp("targets") / "targets.json"
    path.write_text(json.dumps(VALID_TARGETS))
    for step in steps:
        _apply(path, step)
    try:
        targets = load_targets(path)
    except TargetsFileError as exc:
        assert str(exc)
        return
    assert isinstance(targets, Targets)
    for target in targets.items:
        assert target.kind in ("local", "ssh", "slurm")
        assert "\n" not in target.name


GOOD_SETTINGS = (
    b"[run]\nlast_config=\"{\\\"batch_size\\\": 3}\"\n"
    b"[export]\nfolder=/tmp\n[table]\nhidden_columns=peak mem\n"
)


@st.composite
def settings_places(draw):
    """What is found where the settings file should be: (kind, bytes)."""
    kind = draw(st.sampled_from(["bytes", "edited", "link", "dangling_link", "link_to_folder", "folder", "fifo"]))
    if kind == "edited":
        data = bytearray(GOOD_SETTINGS)
        at = draw(st.integers(min_value=0, max_value=len(data)))
        data[at:at + 4] = draw(st.binary(min_size=1, max_size=4))
        return kind, bytes(data)
    return kind, draw(st.binary(max_size=600))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(place=settings_places())
def test_fuzz_settings_file_the_window_starts_and_says_what_it_did(qtbot, tmp_path_factory, place):
    kind, data = place
    base = tmp_path_factory.mktemp("settings")
    path, target = base / "settings" / "compile-studio.ini", base / "elsewhere"
    path.parent.mkdir()
    if kind in ("bytes", "edited"):
        path.write_bytes(data)
    elif kind == "link":
        target.write_bytes(data)
        path.symlink_to(target)
    elif kind == "dangling_link":
        path.symlink_to(target)
    elif kind == "link_to_folder":
        target.mkdir()
        path.symlink_to(target)
    elif kind == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)
    window = MainWindow(probe=False, settings=AppSettings(path))
    qtbot.addWidget(window)
    aside = path.with_name(path.name + ".bad")
    if os.path.lexists(aside) or kind not in ("bytes", "edited"):
        assert "Settings" in window.statusBar().currentMessage() and "Settings" in window.log.text()
        assert os.path.lexists(aside)
    assert not window.config_panel.problems()
    window.close()
    assert path.is_file() and not path.is_symlink()
    if kind == "link":
        assert target.read_bytes() == data
    elif kind == "dangling_link":
        assert not os.path.lexists(target)
    elif kind == "link_to_folder":
        assert target.is_dir() and not any(target.iterdir())
