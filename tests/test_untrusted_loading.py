"""Run folders from outside: every kind of damage loads as a run or as one "damaged" entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compile_studio.results import RunDamaged, RunResult, RunStore, load_run, summarize
from compile_studio.results.records.run_result import config_from_saved
from support.untrusted_helpers import DAMAGES, edit_json, saved_run

CLI = [sys.executable, "-m", "compile_studio.cli"]


def cli(*args, timeout=120):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def load_ok_or_damaged(folder: Path) -> RunResult | None:
    try:
        run = load_run(folder)
    except RunDamaged:
        return None
    summarize(run)
    run.title()
    return run


# -- each kind of damage named in the report ----------------------------------

def test_undecodable_byte_in_samples_skips_one_row(tmp_path):
    folder = saved_run(tmp_path)
    with open(folder / "samples.csv", "ab") as fh:
        fh.write(b"eager,99,measure,1.0,,0\xff\n")
    run = load_run(folder)
    assert run.status == "complete"
    assert run.variants["eager"].samples.count("measure") == 20
    assert any("1 unreadable rows" in p for p in run.load_problems)


def test_latin1_run_json_is_damaged_with_reason(tmp_path):
    folder = saved_run(tmp_path)
    text = (folder / "run.json").read_text().replace('"label": "t"', '"label": "caf\u00e9"')
    (folder / "run.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(RunDamaged, match="not UTF-8"):
        load_run(folder)


def test_oversized_csv_field_skips_the_row(tmp_path):
    folder = saved_run(tmp_path)
    with open(folder / "samples.csv", "a") as fh:
        fh.write("eager," + "9" * 300_000 + ",measure,1.0,,0\n")
        fh.write('"' + "x" * 200_000 + '",1,measure,1.0,,0\n')
    run = load_run(folder)
    assert run.variants["eager"].samples.count("measure") == 20
    assert set(run.variants) >= {"eager", "default"}


def test_deeply_nested_json_is_damaged(tmp_path):
    folder = saved_run(tmp_path)
    (folder / "run.json").write_text('{"config": {}, "variants": ' + "[" * 200_000 + "]" * 200_000 + "}")
    with pytest.raises(RunDamaged):
        load_run(folder)


def test_nested_environment_value_falls_back(tmp_path):
    folder = saved_run(tmp_path)
    nested: object = 1
    for _ in range(100):
        nested = {"a": nested}
    edit_json(folder, lambda d: d["environment"].update(extra=nested))
    run = load_run(folder)
    assert "extra" not in run.environment
    assert run.environment["torch"] == "2.x"


def test_infinity_and_nan_fall_back_to_null(tmp_path):
    folder = saved_run(tmp_path)
    text = (folder / "run.json").read_text().replace('"compile_s": 1.5', '"compile_s": Infinity')
    text = text.replace('"max_abs_error": 1e-07', '"max_abs_error": NaN')
    (folder / "run.json").write_text(text)
    run = load_run(folder)
    assert run.variants["default"].compile_s is None
    summarize(run)


def test_infinity_in_samples_skips_the_row(tmp_path):
    folder = saved_run(tmp_path)
    with open(folder / "samples.csv", "a") as fh:
        fh.write("eager,99,measure,inf,,0\neager,100,measure,nan,,0\neager,101,measure,1e999,,0\n")
    run = load_run(folder)
    assert run.variants["eager"].samples.count("measure") == 20


@pytest.mark.parametrize(
    "change, check",
    [
        (lambda d: d["environment"].update(device_names=["a", "b"]),
         lambda r: "device_names" not in r.environment),
        (lambda d: d["variants"]["default"].update(compile_s="1.5"),
         lambda r: r.variants["default"].compile_s is None),
        (lambda d: d.update(status=3), lambda r: r.status == "incomplete"),
        (lambda d: d["config"].update(label=42), lambda r: r.label == ""),
        (lambda d: d["config"].update(layers="16," + "9" * 5000), lambda r: r.config.layers != ""),
        (lambda d: d["variants"]["default"].update(allclose="yes"),
         lambda r: r.variants["default"].allclose is None),
        (lambda d: d["variants"]["default"].update(checks={"problems": 7}),
         lambda r: "problems" not in r.variants["default"].checks
         or r.variants["default"].checks["problems"] is None),
        (lambda d: d["variants"]["default"].update(status=["done"]),
         lambda r: r.variants["default"].status == "failed"),
        (lambda d: d.update(run_id=12), lambda r: r.run_id == r.run_id and isinstance(r.run_id, str)),
        (lambda d: d.update(schema_version="2"), lambda r: isinstance(r.schema_version, int)),
        (lambda d: d.update(message="x" * 10_000_000), lambda r: len(r.message) < 100_000),
        (lambda d: d["variants"]["default"].update(break_reasons="a reason"),
         lambda r: r.variants["default"].break_reasons == []),
        (lambda d: d["variants"]["default"].update(graphs=10**30),
         lambda r: r.variants["default"].graphs is None),
    ],
)
def test_wrong_type_falls_back_per_field(tmp_path, change, check):
    folder = saved_run(tmp_path)
    edit_json(folder, change)
    run = load_run(folder)
    assert check(run)
    assert run.load_problems or run.config is not None
    assert run.variants["eager"].samples.count("measure") == 20
    summarize(run)
    run.title()


def test_one_bad_row_keeps_a_complete_run(tmp_path):
    folder = saved_run(tmp_path)
    with open(folder / "samples.csv", "a") as fh:
        fh.write("eager,abc,measure,1.0,,0\n")
    run = load_run(folder)
    assert run.status == "complete"
    assert run.load_problems == ["samples.csv: 1 unreadable rows skipped"]


def test_only_regular_files_under_a_cap(tmp_path, monkeypatch):
    folder = saved_run(tmp_path)
    (folder / "run.json").unlink()
    os.mkfifo(folder / "run.json")  # a reader would block forever on a FIFO
    with pytest.raises(RunDamaged, match="not a regular file"):
        load_run(folder)
    other = saved_run(tmp_path / "b")
    (other / "run.json").unlink()
    (other / "run.json").symlink_to("/etc/hostname")
    with pytest.raises(RunDamaged, match="not a regular file"):
        load_run(other)
    big = saved_run(tmp_path / "c")
    monkeypatch.setattr("compile_studio.results.storage.run_load.MAX_RUN_JSON_BYTES", 100)
    with pytest.raises(RunDamaged, match="larger than"):
        load_run(big)


def test_config_from_saved_never_raises():
    assert config_from_saved({"layers": "16," + "9" * 5000, "batch_size": 8}).batch_size == 8
    assert config_from_saved({"label": "x" * 1_000_000}).label == ""
    assert config_from_saved({1: 2, "variants": [1, 2]}) is not None
    assert config_from_saved({"interleave": "yes", "interleave_block": []}) is not None


# -- one bad run never stops the others ---------------------------------------


def test_list_show_compare_survive_every_damage(tmp_path):
    good = saved_run(tmp_path, "good")
    bad = {}
    for name, damage in DAMAGES.items():
        folder = saved_run(tmp_path, name)
        damage(folder)
        bad[name] = folder
    listings = RunStore(tmp_path).list_runs()
    assert len(listings) == len(DAMAGES) + 1
    assert next(e for e in listings if e.folder == good).run is not None
    listing = cli("list", "--out", str(tmp_path))
    assert listing.returncode == 0, listing.stderr
    assert "Traceback" not in listing.stderr + listing.stdout
    for name, folder in bad.items():
        shown = cli("show", str(folder))
        assert "Traceback" not in shown.stderr + shown.stdout, name
        assert shown.returncode in (0, 1, 3), (name, shown.stderr)
    compared = cli("compare", str(good), *map(str, bad.values()))
    assert "Traceback" not in compared.stderr + compared.stdout


# -- fuzz ---------------------------------------------------------------------

def _json_values():
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=30),
    )
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ), max_leaves=12)


_PATHS = [
    ("run_id",), ("status",), ("message",), ("created",), ("schema_version",), ("config",),
    ("config", "label"), ("config", "layers"), ("config", "variants"), ("config", "batch_size"),
    ("environment",), ("environment", "device_names"), ("environment", "devices"),
    ("measurement",), ("variants",), ("variants", "default"), ("variants", "default", "compile_s"),
    ("variants", "default", "checks"), ("variants", "default", "status"),
    ("variants", "eager", "break_reasons"), ("variants", "default", "clock"),
]


@st.composite
def mutations(draw):
    kind = draw(st.sampled_from(["set", "delete", "bytes", "samples_bytes", "samples_row", "nest"]))
    if kind in ("set", "delete", "nest"):
        return kind, draw(st.sampled_from(_PATHS)), draw(_json_values())
    if kind in ("bytes", "samples_bytes"):
        return kind, draw(st.integers(min_value=0, max_value=10_000)), draw(st.binary(min_size=1, max_size=8))
    return kind, None, draw(st.lists(st.text(max_size=12), min_size=1, max_size=8))


def _apply(folder: Path, mutation) -> None:
    kind, where, what = mutation
    path = folder / "run.json"
    if kind in ("set", "delete", "nest"):
        try:
            doc = json.loads(path.read_bytes())
        except ValueError:
            return  # an earlier step already broke the JSON
        node = doc
        for key in where[:-1]:
            if not isinstance(node, dict) or not isinstance(node.get(key), dict):
                return
            node = node[key]
        if kind == "delete":
            node.pop(where[-1], None)
        elif kind == "set":
            node[where[-1]] = what
        else:
            deep: object = what
            for _ in range(60):
                deep = [deep]
            node[where[-1]] = deep
        path.write_text(json.dumps(doc, allow_nan=True))
    elif kind in ("bytes", "samples_bytes"):
        target = path if kind == "bytes" else folder / "samples.csv"
        data = bytearray(target.read_bytes())
        at = where % (len(data) + 1)
        target.write_bytes(bytes(data[:at]) + what + bytes(data[at + len(what):]))
    else:
        import csv
        import io

        buf = io.StringIO()
        csv.writer(buf).writerow(what)
        with open(folder / "samples.csv", "a") as fh:
            fh.write(buf.getvalue())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(mutations(), min_size=1, max_size=3))
def test_fuzz_load_run_is_a_run_or_damaged(tmp_path_factory, steps):
    root = tmp_path_factory.mktemp("fuzz")
    good = saved_run(root, "good")
    victim = saved_run(root, "victim")
    for step in steps:
        _apply(victim, step)
    load_ok_or_damaged(victim)
    listings = RunStore(root).list_runs()
    assert len(listings) == 2
    assert next(e for e in listings if e.folder == good).run is not None


# -- received figures: advise and the report take any finite value ---------------------------

#: The figures of a variant's compact diagnostics (measurement.why) that the rules and the report read.
WHY_FIGURES = [
    "kernels_per_call", "fused_kernels_in_code", "graph_breaks", "calls", "wall_ms_per_call", "busy",
    "gemm_share", "gemm_per_call", "gemm_share_of_ops", "op_spread", "ops_per_call", "elements_per_call",
    "break_places",
]
_EXTREMES = st.sampled_from([1e308, -1e308, 1.7976931348623157e308, 5e-324, -5e-324, 0.0, -1.0, 1e19,
                             2**63 - 1, -(2**63), 1e-9, 3.0])


def advise_and_report(folder: Path) -> None:
    """What ``advise`` and the Markdown report make of a run folder; nothing may raise."""
    from compile_studio.results.report.run_export import markdown_report
    from compile_studio.results.storage.summary_cache import summary_of
    from compile_studio.results.suggestions.advice import advice_text, gather, load_why
    from compile_studio.results.suggestions.advice_rules import advise
    from compile_studio.results.suggestions.what_to_try import what_to_try

    run = load_run(folder)
    report = load_why(folder)
    suggestions = advise(gather(run, report, summary_of(run)))
    advice_text(suggestions)
    what_to_try(run, folder)
    markdown_report(run, folder=folder)


def _with_figures(folder: Path, device: str, eager: dict, compiled: dict, run_figures: dict) -> None:
    def change(doc):
        doc["measurement"]["why"] = {
            "eager": {"device": device, **eager},
            "default": {"device": device, "compiled": True, **compiled},
        }
        doc["measurement"].update(run_figures)
        doc["environment"].update(device="cuda:0" if device == "cuda" else "cpu",
                                  compile_modes=["default", "reduce-overhead", "max-autotune"],
                                  device_names={"cuda:0": "NVIDIA H100 80GB HBM3"})

    edit_json(folder, change)


def test_a_received_figure_of_1e308_gives_advice_and_a_report_not_a_traceback(tmp_path):
    for device in ("cpu", "cuda"):
        folder = saved_run(tmp_path / device)
        _with_figures(folder, device, {"ops_per_call": 1e308, "kernels_per_call": 3.0, "busy": 0.1,
                                       "elements_per_call": 10.0}, {"ops_per_call": 1e308}, {})
        advise_and_report(folder)
        p = cli("advise", str(folder))
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    device=st.sampled_from(["cpu", "cuda"]),
    eager=st.dictionaries(st.sampled_from(WHY_FIGURES), _EXTREMES, max_size=13),
    compiled=st.dictionaries(st.sampled_from(WHY_FIGURES), _EXTREMES, max_size=13),
    run_figures=st.dictionaries(st.sampled_from(["flops_per_call", "harness_floor_ms", "batch_size"]),
                                _EXTREMES, max_size=3),
)
def test_fuzz_advise_and_the_report_take_any_finite_figure(tmp_path_factory, device, eager, compiled, run_figures):
    folder = saved_run(tmp_path_factory.mktemp("figures"))
    _with_figures(folder, device, eager, compiled, run_figures)
    advise_and_report(folder)
