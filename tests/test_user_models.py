"""Users' own models: BatchNorm, pytree outputs, their own dtypes, randomness, factory arguments.

Runs that compile go through real worker processes (RunSession); the pure pieces
(output flattening, dtype names, factory loading, FLOP counting without side
effects) run here on small tensors.
"""

from __future__ import annotations

import collections
import dataclasses
from pathlib import Path

import pytest
import torch

from compile_studio.cli.commands import build_parser
from compile_studio.cli.config_flags import config_from_args
from compile_studio.core import protocol
from compile_studio.core.config import AS_GIVEN, BenchmarkConfig, config_fields
from compile_studio.engine import checks
from compile_studio.engine.variant import checked_output
from compile_studio.engine.workloads import (
    FactoryError,
    build_workload,
    count_flops,
    default_loss,
    dtype_name,
    model_dtype,
    output_leaves,
)
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunStore

pytestmark = pytest.mark.long

MODELS = Path(__file__).parent / "user_models"
#: the BatchNorm CNN of examples/, as a spec relative to MODELS
RESNET = "../../examples/cnn_batchnorm.py"

SMALL = {
    "batch_size": 2, "device": "cpu", "iterations": 6, "warmup": 1, "warmup_min_ms": 0,
    "rounds": 2, "compile_timing": "in_run", "variants": ["eager", "aot_eager"],
    "diagnostics": False,
}


def factory(name: str) -> str:
    """``tests/user_models/FILE.py:FUNC`` as a factory spec."""
    file, _, func = name.partition(":")
    return f"{MODELS / file}:{func or 'make_model'}"


def run(tmp_path: Path, spec: str, **overrides):
    """A run of the factory ``spec`` in a worker: (outcome, events, log lines)."""
    events: list[protocol.Event] = []
    log: list[str] = []
    config = BenchmarkConfig.from_dict(
        {**SMALL, "model": "custom", "factory": factory(spec), **overrides}
    )
    outcome = RunSession(
        config, RunStore(tmp_path / "runs"), on_event=events.append, on_log=log.append
    ).run()
    assert outcome.run.status == "complete", outcome.run.message
    return outcome, events, log


def verdicts(outcome) -> dict[str, bool | None]:
    return {name: v.allclose for name, v in outcome.run.variants.items()}


def problems(outcome, name: str) -> list[str]:
    return list((outcome.run.variants[name].checks or {}).get("problems") or [])


# -- no measurement side step changes the model ----------------------------------------------
@pytest.mark.parametrize("training", [False, True])
def test_counting_flops_changes_neither_the_model_nor_the_random_numbers(training):
    workload = build_workload(BenchmarkConfig(model="custom", factory=factory(RESNET)))
    workload.model.eval()
    before = {k: v.clone() for k, v in workload.model.state_dict().items()}
    inputs = workload.inputs[0].clone()
    rng = torch.random.get_rng_state()
    assert count_flops(workload, training=training) > 0
    after = workload.model.state_dict()
    changed = [k for k, v in before.items() if not torch.equal(v, after[k])]
    assert changed == [], f"counting FLOPs changed {changed}"
    assert all(p.grad is None for p in workload.model.parameters())
    assert workload.model.training is False
    assert torch.equal(workload.inputs[0], inputs)
    assert torch.equal(torch.random.get_rng_state(), rng)


def test_a_batchnorm_resnet_in_inference_is_correct_for_eager_and_aot_eager(tmp_path):
    outcome, _, _ = run(tmp_path, RESNET)
    assert verdicts(outcome) == {"eager": True, "aot_eager": True}, [
        problems(outcome, n) for n in ("eager", "aot_eager")
    ]
    m = outcome.run.measurement
    assert m["inputs"] == [{"shape": [4, 3, 32, 32], "dtype": "fp32"}]
    assert m["batch_size"] == 4  # the factory's batch, not the configuration's 2
    assert m["model_dtype"] == "fp32" and m["conversions"] == [] and m["randomness"] is None


# -- outputs that are trees ------------------------------------------------------------------
@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    extra: tuple[torch.Tensor, ...]
    mask: torch.Tensor | None = None


Pair = collections.namedtuple("Pair", "a b")


def test_output_leaves_flatten_dicts_dataclasses_named_tuples_and_nesting():
    x, y, z = torch.ones(2), torch.zeros(3), torch.arange(4)
    out = {"out": Out(x, (y, Pair(z, 1.5))), "list": [x]}
    paths = [p for p, _ in output_leaves(out)]
    assert paths == [
        "output['out'].logits",
        "output['out'].extra[0]",
        "output['out'].extra[1].a",
        "output['out'].extra[1].b",
        "output['out'].mask",
        "output['list'][0]",
    ]
    checked = checked_output(out)
    assert len(checked.tensors) == 3 and all(t.dtype == torch.float64 for t in checked.tensors)
    assert checked.not_compared == ("output['out'].extra[1].a (int64)", "output['out'].extra[1].b (float)")


def test_default_loss_is_the_mean_square_of_every_floating_leaf():
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([[3.0]])
    out = {"a": a, "nested": (b, torch.tensor([7]))}
    assert float(default_loss(out)) == pytest.approx((1 + 4 + 9) / 3)
    assert float(default_loss(Out(a, (b,)))) == pytest.approx((1 + 4 + 9) / 3)
    assert float(default_loss(a)) == pytest.approx(2.5)
    with pytest.raises(ValueError, match="no floating tensor"):
        default_loss({"ids": torch.tensor([1, 2])})


def test_a_different_output_structure_is_said_in_words():
    ref = checked_output({"logits": torch.ones(2, 3), "hidden": torch.ones(2, 4)})
    assert checked_output({"logits": torch.ones(2, 3), "hidden": torch.ones(2, 4)}).structure_difference(ref) is None
    other = checked_output({"logits": torch.ones(2, 3), "hidden": torch.ones(2, 5)})
    text = other.structure_difference(ref)
    assert text is not None and "output['hidden']: floating tensor 2×5 here" in text
    fewer = checked_output({"logits": torch.ones(2, 3)}).structure_difference(ref)
    assert fewer is not None and "1 leaves here, 2 there" in fewer
    dev = checks.deviation(ref.tensors, ref.tensors)
    assert dev.error == 0.0 and checks.deviation([], []).error == 0.0


def test_a_dict_output_is_compared_leaf_by_leaf(tmp_path):
    outcome, _, _ = run(tmp_path, "transformer_dict.py")
    assert verdicts(outcome) == {"eager": True, "aot_eager": True}, problems(outcome, "aot_eager")
    checks_ = outcome.run.variants["aot_eager"].checks
    assert checks_["not_compared"] == [] and checks_["output"]["error"] < 1e-5
    assert outcome.run.measurement["inputs"] == [{"shape": [2, 8], "dtype": "int64"}]


def test_a_dataclass_output_trains_and_its_integer_leaves_are_not_compared(tmp_path):
    outcome, _, _ = run(tmp_path, "transformer_dict.py:make_dataclass_model", workload="training")
    assert verdicts(outcome) == {"eager": True, "aot_eager": True}, problems(outcome, "aot_eager")
    checks_ = outcome.run.variants["aot_eager"].checks
    assert checks_["not_compared"] == ["output.aux['top'] (int64)"]
    assert checks_["gradients"]["error"] < 1e-5


# -- dtypes ----------------------------------------------------------------------------------
def test_dtype_names_and_the_lowest_precision_of_a_mix():
    assert [dtype_name(d) for d in (torch.float32, torch.bfloat16, torch.int64, torch.bool)] == [
        "fp32", "bf16", "int64", "bool"
    ]
    mixed = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2).half())
    assert model_dtype(mixed) == torch.float16
    assert model_dtype(torch.nn.Sequential(mixed, torch.nn.Linear(2, 2).bfloat16())) == torch.bfloat16
    assert [checks.tolerance_key(d) for d in (torch.bfloat16, torch.float16, torch.float64, None)] == [
        "bf16", "fp16", "fp32", "fp32"
    ]


def test_a_custom_model_runs_as_given_by_default_and_a_named_dtype_is_kept():
    custom = {"model": "custom", "factory": "m.py:make_model"}
    assert BenchmarkConfig.from_dict(custom).dtype == AS_GIVEN
    assert BenchmarkConfig.from_dict({**custom, "dtype": "fp32"}).dtype == "fp32"
    assert BenchmarkConfig.from_dict({"model": "mlp"}).dtype == "fp32"
    args = build_parser().parse_args(["run", "--model", "custom", "--factory", "m.py:make_model"])
    assert config_from_args(args).dtype == AS_GIVEN
    args = build_parser().parse_args(["run", "--model", "custom", "--factory", "m.py:f", "--dtype", "bf16"])
    assert config_from_args(args).dtype == "bf16"
    spec = next(s for s in config_fields() if s.name == "dtype")
    assert spec.choice_label(AS_GIVEN) == "as given" and spec.choice_label("bf16") == "bf16"


def test_as_given_is_a_problem_for_a_built_in_model():
    found = {p.field: p.message for p in BenchmarkConfig(model="cnn", dtype=AS_GIVEN).problems()}
    assert "as given applies to a custom model's factory" in found["dtype"]
    assert "dtype" not in {p.field for p in BenchmarkConfig(model="custom", factory="m.py:f", dtype=AS_GIVEN).problems()}


def test_the_form_offers_as_given_and_picks_it_for_a_custom_model(qtbot):
    from compile_studio.gui.config_panel import ConfigPanel

    panel = ConfigPanel()
    qtbot.addWidget(panel)
    combo = panel.widget_for("dtype")
    assert "as given" in [combo.itemText(i) for i in range(combo.count())]
    model = panel.widget_for("model")
    model.setCurrentIndex(model.findText("custom"))
    assert panel.config().dtype == AS_GIVEN and combo.currentText() == "as given"
    model.setCurrentIndex(model.findText("mlp"))
    assert panel.config().dtype == "fp32"
    panel.set_config(BenchmarkConfig(model="custom", factory="m.py:f", dtype="bf16"))
    assert panel.config().dtype == "bf16"


def test_a_bf16_factory_is_measured_in_bf16(tmp_path):
    outcome, _, _ = run(tmp_path, "bf16_mlp.py")
    m = outcome.run.measurement
    assert outcome.run.config.dtype == AS_GIVEN
    assert m["model_dtype"] == "bf16" and m["inputs"] == [{"shape": [4, 16], "dtype": "bf16"}]
    assert m["conversions"] == [] and "≤ 0.02" in m["correctness_rule"]
    assert verdicts(outcome) == {"eager": True, "aot_eager": True}


def test_a_conversion_the_configuration_asks_for_is_stated(tmp_path):
    outcome, _, _ = run(tmp_path, "bf16_mlp.py", dtype="fp32", variants=["eager"])
    m = outcome.run.measurement
    assert m["model_dtype"] == "fp32" and m["inputs"] == [{"shape": [4, 16], "dtype": "fp32"}]
    assert m["conversions"] == [
        "the factory's model was bf16; it ran in fp32 as the configuration's dtype (fp32) says",
        "the factory's input 0 was bf16; it ran in fp32 as the configuration's dtype (fp32) says",
    ]


def test_the_measured_batch_and_what_the_factory_prints(tmp_path):
    outcome, _, log = run(tmp_path, "batch1.py", variants=["eager"])
    m = outcome.run.measurement
    assert m["batch_size"] == 1
    assert m["inputs"] == [{"shape": [1, 16], "dtype": "fp32"}, {"shape": [1, 5], "dtype": "int64"}]
    assert any("building the scorer from batch1.py" in line for line in log)


# -- random models ---------------------------------------------------------------------------
def test_dropout_in_training_is_named_random_and_compared_under_the_same_seed(tmp_path):
    outcome, events, _ = run(tmp_path, "dropout_mlp.py", workload="training")
    randomness = outcome.run.measurement["randomness"]
    assert randomness is not None and "Dropout" in randomness and "reseeded" in randomness
    assert any(
        isinstance(e, protocol.WarningEvent) and e.message == randomness for e in events
    )
    assert verdicts(outcome) == {"eager": True, "aot_eager": True}, problems(outcome, "aot_eager")


def test_dropout_in_inference_is_off_and_not_random(tmp_path):
    outcome, _, _ = run(tmp_path, "dropout_mlp.py", variants=["eager"])
    assert outcome.run.measurement["randomness"] is None
    assert verdicts(outcome) == {"eager": True}


def test_randomness_outside_torch_skips_the_output_check_saying_why(tmp_path):
    outcome, _, _ = run(tmp_path, "dropout_mlp.py:make_python_noise")
    randomness = outcome.run.measurement["randomness"]
    assert randomness is not None and "skipped" in randomness
    assert verdicts(outcome) == {"eager": None, "aot_eager": None}
    for name in ("eager", "aot_eager"):
        (text,) = problems(outcome, name)
        assert "output check skipped" in text and "random" in text
        assert "not correct" not in " ".join(outcome.run.variants[name].warnings)


@pytest.mark.inductor
def test_inductor_draws_dropout_masks_as_eager_does(tmp_path):
    outcome, _, _ = run(tmp_path, "dropout_mlp.py", workload="training", variants=["eager", "default"])
    assert outcome.run.measurement["randomness"] is not None
    assert verdicts(outcome) == {"eager": True, "default": True}, problems(outcome, "default")


# -- the factory's arguments and results -----------------------------------------------------
def test_a_factory_gets_the_configuration_fields_it_names():
    config = BenchmarkConfig(model="custom", factory=factory("takes_batch.py"), batch_size=3)
    assert build_workload(config).inputs[0].shape == (3, 16)
    config.batch_size = 5
    assert build_workload(config).inputs[0].shape == (5, 16)


def test_a_factory_argument_that_names_no_field_needs_a_default():
    config = BenchmarkConfig(model="custom", factory=factory("takes_batch.py:make_needs_width"))
    with pytest.raises(FactoryError, match="needs width"):
        build_workload(config)


def test_a_fourth_returned_value_is_refused():
    config = BenchmarkConfig(model="custom", factory=factory("takes_batch.py:make_with_options"))
    with pytest.raises(FactoryError, match=r"\(model, inputs\) or \(model, inputs, loss\), got a tuple of 4"):
        build_workload(config)


def test_a_factory_keeps_its_dtypes_and_prints_to_stderr(capsys):
    workload = build_workload(BenchmarkConfig(model="custom", factory=factory("bf16_mlp.py")))
    assert model_dtype(workload.model) == torch.bfloat16
    assert workload.inputs[0].dtype == torch.bfloat16
    build_workload(BenchmarkConfig(model="custom", factory=factory("batch1.py")))
    captured = capsys.readouterr()
    assert "building the scorer" in captured.err and "building the scorer" not in captured.out


def test_the_configured_batch_reaches_the_factory_in_a_run(tmp_path):
    outcome, _, _ = run(tmp_path, "takes_batch.py", batch_size=3, variants=["eager"])
    assert outcome.run.measurement["batch_size"] == 3
    assert outcome.run.measurement["inputs"] == [{"shape": [3, 16], "dtype": "fp32"}]
