"""The training check: every variant's parameters after the same steps from the same start."""

from __future__ import annotations

from pathlib import Path

import pytest

from compile_studio.core.config import BenchmarkConfig
from compile_studio.engine import checks
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunStore

#: a backend right on its first call, then ×1.01 on every output (and so on every gradient)
WRONG_AFTER_FIRST = '''
import torch
from torch._dynamo import register_backend


@register_backend
def outputs_1_01_after_first(gm, example_inputs):
    from torch._dynamo.backends.debugging import aot_eager

    inner = aot_eager(gm, example_inputs)
    calls = [0]

    def call(*args):
        calls[0] += 1
        out = inner(*args)
        if calls[0] == 1:
            return out
        if isinstance(out, (list, tuple)):
            return type(out)(o * 1.01 if isinstance(o, torch.Tensor) else o for o in out)
        return out * 1.01

    return call
'''


def run(tmp_path: Path, **overrides):
    config = {
        "layers": "64,64,16", "batch_size": 8, "device": "cpu", "workload": "training",
        "iterations": 10, "warmup": 2, "warmup_min_ms": 200, "rounds": 2,
        "compile_timing": "in_run",
    }
    config.update(overrides)
    outcome = RunSession(BenchmarkConfig.from_dict(config), RunStore(tmp_path / "runs")).run()
    assert outcome.run.status == "complete", outcome.run.message
    return outcome.run


def test_a_time_based_warm_up_still_gets_a_judged_parameters_check(tmp_path):
    run_ = run(tmp_path, variants=["eager", "aot_eager"])
    v = run_.variants["aot_eager"]
    drift, bound = v.checks["params_drift"], v.checks["params_drift_bound"]
    assert isinstance(drift, float) and drift <= bound, v.checks
    assert bound == pytest.approx(checks.drift_bound("fp32"))
    assert v.allclose is True, v.checks["problems"]
    assert run_.variants["eager"].checks["params_drift"] is None  # the yardstick


def test_a_step_wrong_after_its_first_call_is_flagged_by_the_parameters(tmp_path):
    module = tmp_path / "wrong_backend.py"
    module.write_text(WRONG_AFTER_FIRST)
    run_ = run(
        tmp_path, variants=["eager", "outputs_1_01_after_first"], backend_modules=[str(module)]
    )
    v = run_.variants["outputs_1_01_after_first"]
    # the first call (output, gradients) is right: only the check's steps see the defect
    assert all(p.startswith("parameters:") for p in v.checks["problems"]), v.checks["problems"]
    assert v.checks["params_drift"] > v.checks["params_drift_bound"]
    assert v.allclose is False


def test_the_drift_bound_sits_between_rounding_and_a_one_percent_error():
    assert 1e-3 <= checks.drift_bound("fp32") < 1e-2
    ok, _ = checks.judge_drift("fp32", 5e-4, moved=1e-3, resolution=1e-7)
    assert ok is True
    ok, why = checks.judge_drift("fp32", 1e-2, moved=1e-3, resolution=1e-7)
    assert ok is False and "above the fp32 bound" in why
    # updates under a hundred rounding units are not judged
    assert checks.judge_drift("bf16", 1.0, moved=1e-3, resolution=1e-4)[0] is None
