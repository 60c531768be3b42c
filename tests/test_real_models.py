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
from compile_studio.results.formatting import why_sentence
from compile_studio.results.summary import summarize

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
    from compile_studio.results.verdict import incorrect_text

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
    why = why_sentence(r, "aot_eager") or ""
    assert "compile captured nothing" in why and "one graph" not in why
    # the fix is a configuration change the trial can run: advise offers it with its delta
    from compile_studio.jobs.trial import not_tried_reason
    from compile_studio.results.what_to_try import what_to_try

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
BACKENDS = str(Path(__file__).with_name("backends_for_tests.py"))


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

    from compile_studio.engine.models import CallInputs, FactoryError, factory_inputs, move_inputs
    from compile_studio.engine.shape_sweep import resize_inputs

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
