"""Models written outside the project, run as a new user would: the words must be right.

A model that cannot run in fp64, graph breaks and skipped frames counted from what
torch records, training checks that name what failed, keyword inputs (Hugging Face
style). Runs go through real worker processes (RunSession) with aot_eager.
"""

from __future__ import annotations

import json
from pathlib import Path

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunStore
from compile_studio.results.analysis.summary import summarize
from compile_studio.results.report.formatting import why_sentence

MODELS = Path(__file__).parent / "user_models"

SMALL = {
    "batch_size": 2, "device": "cpu", "iterations": 6, "warmup": 1, "warmup_min_ms": 0,
    "rounds": 2, "compile_timing": "in_run", "variants": ["eager", "aot_eager"],
    "diagnostics": False,
}


def run(tmp_path: Path, spec: str, **overrides):
    """A run of ``tests/user_models/FILE.py:FUNC`` in a worker: (outcome, events, log lines)."""
    file, _, func = spec.partition(":")
    events: list[protocol.Event] = []
    log: list[str] = []
    config = BenchmarkConfig.from_dict(
        {**SMALL, "model": "custom", "factory": f"{MODELS / file}:{func or 'make_model'}", **overrides}
    )
    outcome = RunSession(
        config, RunStore(tmp_path / "runs"), on_event=events.append, on_log=log.append
    ).run()
    return outcome, events, log


# -- 1. a model that cannot run in fp64 --------------------------------------------------------
def test_a_dtype_pinned_model_is_timed_and_checked_against_eager_saying_why(tmp_path):
    outcome, events, _ = run(tmp_path, "pinned_fp32.py")
    r = outcome.run
    assert r.status == "complete", r.message
    for name in ("eager", "aot_eager"):
        v = r.variants[name]
        assert v.status == "done", (name, v.error)
        assert v.stats() is not None and v.stats().n == 6
        assert v.allclose is True, v.checks
        assert v.checks["reference"] == "eager fp32"
        assert "eager fp32" in v.checks["rule"]
    m = r.measurement
    assert m["reference"] == "eager fp32"
    assert "cannot run in fp64" in m["reference_note"] and "Double" in m["reference_note"]
    assert any("reference: the model cannot run in fp64" in n for n in r.model_notes())
    rows = {row.name: row for row in summarize(r)}
    assert rows["aot_eager"].verdict not in ("", "incorrect", "failed")


def test_an_incorrect_verdict_names_the_reference_that_judged_it():
    from compile_studio.results.analysis.verdict import incorrect_text

    text = incorrect_text(["first call: error 3.1e-02 is above the fp32 bound 1e-05"], "eager fp32")
    assert text == (
        "the output differs from the eager fp32 reference (the model cannot run in fp64): "
        "error 3.1e-02 is above the fp32 bound 1e-05"
    )


# -- 2. graph breaks and skipped functions, counted from what torch records ---------------------
def test_a_data_dependent_branch_counts_its_graph_break(tmp_path):
    outcome, _, _ = run(tmp_path, "data_branch.py")
    v = outcome.run.variants["aot_eager"]
    assert v.status == "done", v.error
    assert v.graph_breaks >= 1
    assert any("data-dependent" in r.lower() for r in v.break_reasons), v.break_reasons
    assert v.frames_skipped == 0
    saved = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())
    assert saved["variants"]["aot_eager"]["graph_breaks"] >= 1


def test_a_gru_is_compile_captured_nothing_with_allow_rnn_to_try(tmp_path):
    outcome, _, _ = run(tmp_path, "gru.py", diagnostics=True)
    r = outcome.run
    v = r.variants["aot_eager"]
    assert v.status == "done", v.error
    assert v.graphs == 0 and v.graph_breaks == 0
    assert v.frames_skipped == 1
    assert any("allow_rnn" in s for s in v.skip_reasons), v.skip_reasons
    assert any("compile captured nothing" in w for w in v.warnings), v.warnings
    why = why_sentence(r, "aot_eager") or ""
    assert "compile captured nothing" in why and "one graph" not in why
    # the fix is a configuration change the trial can run: advise offers it with its delta
    from compile_studio.jobs.trial import not_tried_reason
    from compile_studio.results.suggestions.what_to_try import what_to_try

    found = [s for s in what_to_try(r, outcome.folder).suggestions if s.rule == "dynamo-flag"]
    assert found and found[0].delta == {"dynamo_config": ["allow_rnn=true"]}
    assert "compile captured nothing" in found[0].evidence
    assert not_tried_reason(found[0]) is None


def test_dynamo_config_flags_are_checked_and_set_in_the_worker(tmp_path):
    bad = BenchmarkConfig.from_dict({**SMALL, "dynamo_config": ["allow_everything=true"]})
    assert any(p.field == "dynamo_config" for p in bad.problems())
    outcome, _, _ = run(tmp_path, "gru.py", dynamo_config=["allow_rnn=true"])
    v = outcome.run.variants["aot_eager"]
    assert v.status == "done", v.error
    assert v.graphs >= 1 and v.frames_skipped == 0
    assert v.allclose is True


# -- 3. training checks name what failed ----------------------------------------------------------
BACKENDS = str(Path(__file__).parent / "support" / "backends_for_tests.py")


def test_a_training_run_with_wrong_gradients_names_the_gradients_not_the_output(tmp_path):
    outcome, _, _ = run(
        tmp_path, "bf16_mlp.py", workload="training", dtype="fp32", backend_modules=[BACKENDS],
        variants=["eager", "grads_1_01"],
    )
    r = outcome.run
    v = r.variants["grads_1_01"]
    assert v.allclose is False
    assert v.checks["output"]["error"] < 1e-5  # the output itself is right
    rows = {row.name: row for row in summarize(r)}
    text = rows["grads_1_01"].verdict_reason
    assert "the gradients differ from the fp64 reference" in text, text
    assert "gradients scaled by 1.01000" in text and "bound" in text
    assert "the output differs" not in text


def test_dropout_in_training_skips_naming_the_parts_and_says_why_parameters_are_not_judged(tmp_path):
    outcome, _, _ = run(tmp_path, "dropout_mlp.py", workload="training")
    for name in ("eager", "aot_eager"):
        checks = outcome.run.variants[name].checks
        assert checks["params_drift_bound"] is None
        why = [s for s in checks["skipped"] if s.startswith("parameters: not judged")]
        assert why and ("random" in why[0] or "yardstick" in why[0]), checks["skipped"]
    skipped = outcome.run.variants["aot_eager"].checks["skipped"]
    assert "the model is random" in " ".join(skipped)


def test_a_random_check_skipped_names_what_differed():
    from compile_studio.engine.finish import _checked_parts

    assert _checked_parts(["gradients: error 2e-05 is more than 4× eager's"]) == "gradients check"
    assert _checked_parts(["first call: x", "gradients: y"]) == "output and gradients checks"


# -- 4. keyword inputs -------------------------------------------------------------------------------
def test_a_dict_of_keyword_inputs_runs_is_checked_and_is_labelled(tmp_path):
    outcome, _, _ = run(tmp_path, "keyword_inputs.py")
    r = outcome.run
    assert r.status == "complete", r.message
    for name in ("eager", "aot_eager"):
        v = r.variants[name]
        assert v.allclose is True, (name, v.error, v.checks)
        assert v.checks["reference"] == "fp64"
        # every floating leaf of the ModelOutput-like output is compared; the argmax is not
        assert v.checks["not_compared"] == ["output.top (int64)"]
    m = r.measurement
    assert m["inputs"] == [
        {"name": "input_ids", "shape": [2, 32], "dtype": "int64"},
        {"name": "attention_mask", "shape": [2, 32], "dtype": "int64"},
    ]
    assert m["batch_size"] == 2  # the configuration's batch reached the factory's batch_size
    assert "inputs: input_ids 2×32 int64, attention_mask 2×32 int64" in r.model_notes()


def test_positional_and_keyword_inputs_follow_the_dtype_rules_in_training(tmp_path):
    outcome, _, _ = run(
        tmp_path, "keyword_inputs.py:make_positional_and_keyword", dtype="bf16", workload="training",
    )
    r = outcome.run
    assert r.status == "complete", r.message
    assert {n: v.allclose for n, v in r.variants.items()} == {"eager": True, "aot_eager": True}, [
        v.checks for v in r.variants.values()
    ]
    # integer inputs stay as given, the floating keyword input is converted, and said so
    assert r.measurement["inputs"] == [
        {"shape": [4, 32], "dtype": "int64"},
        {"name": "attention_mask", "shape": [4, 32], "dtype": "int64"},
        {"name": "scale", "shape": [1, 1, 16], "dtype": "bf16"},
    ]
    assert any("input scale was fp32; it ran in bf16" in c for c in r.measurement["conversions"])


def test_keyword_inputs_are_checked_and_what_is_accepted_is_said():
    import pytest
    import torch

    from compile_studio.engine.shape_sweep import resize_inputs
    from compile_studio.engine.workloads import (
        CallInputs,
        FactoryError,
        factory_inputs,
        move_inputs,
    )

    ids = torch.zeros(2, 3, dtype=torch.int64)
    inputs = factory_inputs({"input_ids": ids, "use_cache": False})
    assert isinstance(inputs, CallInputs) and tuple(inputs) == () and inputs.kwargs["use_cache"] is False
    moved = move_inputs(inputs, torch.device("cpu"), torch.float64)
    assert moved.kwargs["input_ids"].dtype == torch.int64
    resized = resize_inputs(inputs, 5)
    assert resized.kwargs["input_ids"].shape == (5, 3)
    with pytest.raises(FactoryError, match="mapping of keyword inputs"):
        factory_inputs([ids])
    with pytest.raises(FactoryError, match="keyword input past is a list"):
        factory_inputs({"input_ids": ids, "past": [ids]})


# -- 5. advice that works and can be tried ----------------------------------------------------------
def suggestions(tmp_path: Path, spec: str, **overrides):
    from compile_studio.results.suggestions.what_to_try import what_to_try

    outcome, _, _ = run(tmp_path, spec, diagnostics=True, **overrides)
    assert outcome.run.status == "complete", outcome.run.message
    return outcome, what_to_try(outcome.run, outcome.folder).suggestions


def test_advise_names_every_graph_break_line(tmp_path):
    _, found = suggestions(tmp_path, "data_branch.py:make_two_breaks")
    full = next(s for s in found if s.rule == "fullgraph")
    assert "data_branch.py:18" in full.evidence and "data_branch.py:21" in full.evidence, full.evidence
    branch = next(s for s in found if s.rule == "data-branch")
    assert "torch.where" in branch.code.after and "torch.cond" in branch.code.after


def test_an_item_branch_gets_torch_where_not_a_line_that_still_breaks(tmp_path):
    _, found = suggestions(tmp_path, "item_branch.py")
    item = next(s for s in found if s.rule == "item-break")
    assert item.code.before == "if h.mean().item() > 0.0:"
    assert "if h.mean() > 0.0:" not in item.code.after
    assert "torch.where" in item.code.after and "capture_scalar_outputs" not in item.code.after
    assert not any(s.rule == "item-flag" for s in found)


def test_an_item_read_gets_capture_scalar_outputs_as_a_triable_change(tmp_path):
    from compile_studio.jobs.trial import not_tried_reason

    _, found = suggestions(tmp_path, "item_scale.py")
    flag = next(s for s in found if s.rule == "item-flag")
    assert flag.delta == {"dynamo_config": ["capture_scalar_outputs=true"]}
    assert not_tried_reason(flag) is None


def test_a_recompiling_counter_gets_a_config_change_whose_try_gives_a_verdict(tmp_path, capsys):
    import argparse

    from compile_studio.cli import advise as cli_advise
    from compile_studio.results.records.trial_load import trials_of

    outcome, found = suggestions(tmp_path, "call_counter.py", iterations=12)
    numbers = {s.rule: k for k, s in enumerate(found, 1)}
    assert "python-value-guard" in numbers and "python-value-flag" in numbers, numbers
    flag = found[numbers["python-value-flag"] - 1]
    assert flag.delta == {"dynamo_config": ["allow_unspec_int_on_nn_module=true"]}
    args = argparse.Namespace(
        run=str(outcome.folder), out=None, try_=str(numbers["python-value-flag"]), rounds=3,
        trust_code=True,
    )
    assert cli_advise.main(args) == 0, capsys.readouterr().err[-2000:]
    (listing,) = trials_of(outcome.folder)
    (s,) = listing.record.suggestions
    assert s.rule == "python-value-flag"
    # judged with the verdict words of a run, on rounds with the A/A control beside them
    assert s.verdict in ("faster", "slower", "cannot tell"), s.verdict
    assert len(s.rounds) == 3


# -- 6. smaller items ------------------------------------------------------------------------------------
def test_what_the_model_prints_shows_on_the_clis_stderr_capped(tmp_path):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    p = subprocess.run(
        [sys.executable, "-m", "compile_studio.cli", "run", "--factory",
         f"{MODELS / 'printing.py'}:make_model", "--device", "cpu", "--iterations", "60", "--warmup", "1",
         "--warmup-min-ms", "0", "--rounds", "1", "--compile-timing", "in_run",
         "--variants", "eager,aot_eager", "--no-diagnostics", "--quiet", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=root,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "building the printing model" in p.stderr
    assert "forward sees (2, 4)" in p.stderr
    assert "forward sees" not in p.stdout
    # a print on every call is cut short, and the cut is said
    assert p.stderr.count("forward sees") <= 40 and "more lines, not shown" in p.stderr


def test_a_run_where_every_variant_failed_is_failed_not_complete(tmp_path):
    outcome, _, _ = run(tmp_path, "breaks_later.py", variants=["eager", "aot_eager"], iterations=20)
    r = outcome.run
    assert all(v.status == "failed" for v in r.variants.values()), {
        n: (v.status, v.error) for n, v in r.variants.items()
    }
    assert r.status == "failed" and "every variant failed" in r.message
    saved = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())
    assert saved["status"] == "failed"


def test_an_interval_below_one_never_prints_its_bound_as_1_00():
    from compile_studio.results.analysis.stats import SpeedupInterval
    from compile_studio.results.analysis.verdict import interval_text
    from compile_studio.results.report.formatting import fmt_interval

    assert fmt_interval("default", 0.82, 0.64, 0.998) == "0.820× [0.640–0.998]"
    assert fmt_interval("default", 1.3, 1.0004, 1.9) == "1.3000× [1.0004–1.9000]"
    assert fmt_interval("default", 0.82, 0.64, 0.97) == "0.82× [0.64–0.97]"  # two digits where they do
    text = interval_text(SpeedupInterval(0.82, 0.64, 0.998, "rounds", 5, None))
    assert "[0.640–0.998]" in text


def test_a_cpu_variant_whose_resident_size_did_not_grow_says_so_not_0_b():
    from compile_studio.results.report.formatting import fmt_memory

    assert fmt_memory(0, "rss_peak") == "RSS did not grow"
    assert fmt_memory(0, "cuda_allocator_peak") == "0 B"
    assert fmt_memory(3 << 20, "rss_peak") == "3.0 MiB"


def test_a_shape_sweep_of_keyword_inputs_keeps_each_points_input_shapes_and_dtypes(tmp_path):
    import subprocess
    import sys

    from compile_studio.results.records.sweep_load import load_shape_sweep

    root = Path(__file__).resolve().parents[1]
    p = subprocess.run(
        [sys.executable, "-m", "compile_studio.cli", "sweep", "--shape", "--values", "1,3", "--repeats", "3",
         "--modes", "false", "--factory", f"{MODELS / 'keyword_inputs.py'}:make_model", "--device", "cpu",
         "--variants", "eager,aot_eager", "--warmup", "2", "--warmup-min-ms", "0", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=root,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    (folder,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    record = load_shape_sweep(folder)
    points = {(pt.variant, pt.batch): pt for pt in record.points}
    assert points[("aot_eager", 3)].inputs == [
        {"name": "input_ids", "shape": [3, 32], "dtype": "int64"},
        {"name": "attention_mask", "shape": [3, 32], "dtype": "int64"},
    ]
    assert points[("eager", 1)].inputs[0]["shape"] == [1, 32]
    assert all(pt.correct for pt in record.points), [(pt.variant, pt.batch, pt.error) for pt in record.points]


def test_sweeping_seq_len_on_a_factory_says_what_the_factory_gets_and_what_to_sweep(capsys):
    from compile_studio.cli import main

    def refusal(factory: str) -> str:
        code = main(["sweep", "--param", "seq_len", "--values", "16,32", "--factory", factory,
                     "--device", "cpu", "--variants", "eager,aot_eager"])
        err = capsys.readouterr().err
        assert code == 2, err
        return err

    # a factory with its own seq_len parameter: sweep that one
    err = refusal(str(Path(__file__).resolve().parents[1] / "examples" / "hf_gpt2.py") + ":make_model")
    assert "seq_len is the transformer's sequence length" in err and "--param arg:seq_len" in err
    # one without: what a factory gets, and what to sweep instead
    err = refusal(f"{MODELS / 'keyword_inputs.py'}:make_model")
    assert "--param batch_size with def make_model(batch_size=…)" in err
    assert "sweep a keyword parameter of the factory, such as" not in err


def test_a_sweep_over_a_factory_argument_rebuilds_the_model_at_each_value(tmp_path):
    pytest = __import__("pytest")
    pytest.importorskip("transformers")
    import subprocess
    import sys

    from compile_studio.results import load_run
    from compile_studio.results.records.sweep_load import load_sweep

    root = Path(__file__).resolve().parents[1]
    p = subprocess.run(
        [sys.executable, "-m", "compile_studio.cli", "sweep", "--param", "arg:seq_len", "--values", "8,16",
         "--factory", "examples/hf_gpt2.py:make_model", "--batch-size", "2", "--device", "cpu",
         "--iterations", "4", "--warmup", "1", "--warmup-min-ms", "0", "--rounds", "2",
         "--compile-timing", "in_run", "--variants", "eager,aot_eager", "--no-diagnostics",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=root,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    (folder,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    record = load_sweep(folder)
    assert [pt.status for pt in record.points] == ["complete", "complete"]
    shapes = [load_run(folder / pt.run).measurement["inputs"][0]["shape"] for pt in record.points]
    assert shapes == [[2, 8], [2, 16]]


def test_factory_arguments_are_checked_against_the_factory():
    from compile_studio.core.config import parse_factory_args

    assert parse_factory_args(["seq_len=64", "scale=0.5", "causal=true", "name=x"]) == {
        "seq_len": 64, "scale": 0.5, "causal": True, "name": "x"
    }
    base = {"model": "custom", "factory": f"{MODELS / 'keyword_inputs.py'}:make_model", "device": "cpu"}
    bad = BenchmarkConfig.from_dict({**base, "factory_args": ["seq_len=64"]})
    assert any("does not take seq_len" in p.message for p in bad.problems())
    field = BenchmarkConfig.from_dict({**base, "factory_args": ["batch_size=3"]})
    assert any("set it with --batch-size" in p.message for p in field.problems())


def test_a_speedup_that_the_medians_contradict_says_both():
    from compile_studio.results.analysis.summary import SummaryRow
    from compile_studio.results.report.formatting import medians_note

    fields = {f: None for f in SummaryRow.__dataclass_fields__}
    eager = SummaryRow(**{**fields, "name": "eager", "median_ms": 149.0, "speedup": 1.0})
    row = SummaryRow(**{**fields, "name": "default", "median_ms": 133.0, "speedup": 1.27})
    note = medians_note(eager, row)
    assert note is not None and "1.12×" in note and "geometric mean" in note
    close = SummaryRow(**{**fields, "name": "default", "median_ms": 133.0, "speedup": 1.13})
    assert medians_note(eager, close) is None


def test_a_quiet_run_near_the_70_percent_line_is_mixed_a_loaded_one_too_noisy():
    from dataclasses import replace

    from compile_studio.results.explain.why_rules import Evidence, machine_quiet

    quiet_load = {"load_average": [0.4, 0.4, 0.4], "cpu_count": 2, "cpu_percent": 20.0,
                  "busiest": [{"pid": 1, "name": "Xorg", "cpu_percent": 3.0}]}
    busy_load = {**quiet_load, "busiest": [{"pid": 2, "name": "python", "cpu_percent": 97.0}]}
    assert machine_quiet({"load_before": quiet_load, "load_after": quiet_load})
    assert not machine_quiet({"load_before": quiet_load, "load_after": busy_load})
    assert not machine_quiet({})
    e = Evidence("eager", "cpu", ms=1.0, kernels=10, busy=0.9, flops_per_call=1e9, elements_per_call=1e7,
                 ops=10, op_gemm_calls=(0.64, 0.66, 0.67, 0.65, 0.66), op_ms_calls=(1.0, 1.01, 1.0, 1.02, 1.0),
                 op_spread=1.02, op_gemm_share=0.66)
    assert e.bound() == "noisy"  # load unknown: as before
    assert replace(e, machine_quiet=True).bound() == "mixed"


def test_a_shape_sweep_along_a_named_input_axis_resizes_it_and_its_mask(tmp_path):
    import subprocess
    import sys

    from compile_studio.results.records.sweep_load import load_shape_sweep

    root = Path(__file__).resolve().parents[1]
    p = subprocess.run(
        [sys.executable, "-m", "compile_studio.cli", "sweep", "--shape", "--axis", "input_ids:1",
         "--values", "8,16", "--repeats", "3", "--modes", "false", "--batch-size", "2",
         "--factory", f"{MODELS / 'keyword_inputs.py'}:make_model", "--device", "cpu",
         "--variants", "eager,aot_eager", "--warmup", "2", "--warmup-min-ms", "0", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=root,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "shape sweep over input input_ids axis 1 8,16" in p.stdout and "input_ids axis 1" in p.stdout
    (folder,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    record = load_shape_sweep(folder)
    assert record.axis == "input_ids:1"
    point = next(pt for pt in record.points if pt.variant == "aot_eager" and pt.batch == 16)
    assert point.inputs == [
        {"name": "input_ids", "shape": [2, 16], "dtype": "int64"},
        {"name": "attention_mask", "shape": [2, 16], "dtype": "int64"},
    ]
    assert all(pt.correct for pt in record.points)


def test_a_named_axis_that_is_not_there_says_which_inputs_there_are():
    import pytest
    import torch

    from compile_studio.engine.shape_sweep import resize_axis
    from compile_studio.engine.workloads import CallInputs

    inputs = CallInputs((), {"input_ids": torch.zeros(2, 4, dtype=torch.int64)})
    assert resize_axis(inputs, "input_ids:1", 6).kwargs["input_ids"].shape == (2, 6)
    with pytest.raises(ValueError, match="the inputs: input_ids"):
        resize_axis(inputs, "pixels:1", 6)
    with pytest.raises(ValueError, match="no axis 2"):
        resize_axis(inputs, "input_ids:2", 6)
