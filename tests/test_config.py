"""BenchmarkConfig: validation names the field and says what is wrong; JSON round trip."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compile_studio.core.config import (
    MAX_LAYER_WIDTH,
    BenchmarkConfig,
    ConfigError,
    EnvironmentInfo,
    LayerSpecError,
    parse_layer_spec,
)

CPU_ONLY = EnvironmentInfo(
    devices=("cpu",),
    compile_modes=("default", "reduce-overhead", "max-autotune"),
    compile_backends=("aot_eager", "cudagraphs"),
    device_dtypes={"cpu": ("fp32", "bf16", "fp16")},
    device_memory={"cpu": 8 << 30},
)


def problems_of(env=None, **kw) -> dict[str, str]:
    return {p.field: p.message for p in BenchmarkConfig(**kw).problems(env)}


def test_default_is_the_seed_mlp_and_valid():
    c = BenchmarkConfig()
    assert c.layer_sizes() == [1024, 1024, 512, 10]
    assert c.batch_size == 256 and c.activation == "gelu"
    assert c.problems(CPU_ONLY) == []


@pytest.mark.parametrize(
    "spec, words",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("1024,abc,10", "'abc' is not a whole number"),
        ("1024,1.5,10", "not a whole number"),
        ("1024,-5,10", "at least 1"),
        ("1024,0,10", "at least 1"),
        ("1024", "at least one layer"),
        (f"1024,{MAX_LAYER_WIDTH + 1}", "beyond the limit"),
    ],
)
def test_bad_layer_specs_name_the_field(spec, words):
    problems = problems_of(layers=spec)
    assert "layers" in problems
    assert words in problems["layers"]


def test_layer_spec_separators():
    assert parse_layer_spec(" 64 x 32, 10 ") == [64, 32, 10]


def test_batch_zero():
    assert "at least 1" in problems_of(batch_size=0)["batch_size"]


def test_iterations_zero_and_absurd():
    assert "at least 1" in problems_of(iterations=0)["iterations"]
    assert "at most" in problems_of(iterations=10**9)["iterations"]


def test_negative_warmup():
    assert "negative" in problems_of(warmup=-1)["warmup"]


def test_rounds_and_seed_bounds_are_those_the_form_offers():
    assert problems_of(rounds=0)["rounds"] == "must be at least 1"
    assert problems_of(rounds=1001, iterations=5000)["rounds"] == "must be at most 1,000"
    assert problems_of(rounds=300, iterations=200)["rounds"] == "at most one round per iteration (200)"
    assert problems_of(seed=-1)["seed"] == "cannot be negative"
    assert problems_of(seed=2**31)["seed"] == "must be at most 2,147,483,647"


def test_choice_messages():
    p = problems_of(activation="swish", timer="stopwatch", compile_cache="lukewarm")
    assert p["activation"] == "must be one of gelu, relu, silu, tanh, none"
    assert p["timer"] == "must be one of auto, host, cuda_events"
    assert p["compile_cache"] == "must be warm or cold"
    assert problems_of(device="gpu0")["device"] == "must be auto, cpu, mps, cuda or cuda:N"


def test_wrongly_typed_values_are_problems_not_crashes():
    p = problems_of(CPU_ONLY, batch_size="256", warmup=None, variants="eager")
    assert p == {
        "batch_size": "must be a whole number, got '256'",
        "warmup": "must be a whole number, got None",
        "variants": "must be a list of names, got 'eager'",
    }


def test_reduce_overhead_needs_warmup():
    msg = problems_of(variants=["eager", "reduce-overhead"], warmup=1)["warmup"]
    assert "reduce-overhead" in msg and "3" in msg


def test_unknown_variant_lists_available():
    msg = problems_of(CPU_ONLY, variants=["eager", "turbo"])["variants"]
    assert "'turbo'" in msg and "aot_eager" in msg


def test_compiled_without_eager_refused():
    assert "eager" in problems_of(variants=["default"])["variants"]


def test_duplicate_variant_refused():
    assert "twice" in problems_of(variants=["eager", "eager"])["variants"]


def test_cuda_on_cpu_only_machine():
    msg = problems_of(CPU_ONLY, device="cuda")["device"]
    assert "no CUDA GPU" in msg


def test_missing_cuda_index():
    env = EnvironmentInfo(devices=("cpu", "cuda:0"), compile_modes=("default",))
    msg = problems_of(env, device="cuda:7")["device"]
    assert "cuda:7" in msg and "cuda:0" in msg


def test_malformed_device_name():
    assert "device" in problems_of(device="gpu0")


def test_dtype_the_device_cannot_run():
    assert "tf32 is not supported on cpu" in problems_of(CPU_ONLY, dtype="tf32")["dtype"]


def test_memory_estimate_beyond_device():
    env = EnvironmentInfo(devices=("cpu",), device_memory={"cpu": 64 << 20})
    msg = problems_of(env, layers="8192,8192,8192", batch_size=4096)["batch_size"]
    assert "need about" in msg and "GiB" in msg and "64.0 MiB" in msg


def test_unknown_dtype_and_workload():
    p = problems_of(dtype="fp8", workload="serving")
    assert "dtype" in p and "workload" in p


def test_every_problem_reported_at_once():
    with pytest.raises(ConfigError) as info:
        BenchmarkConfig(layers="", batch_size=0, iterations=0).validate()
    assert {p.field for p in info.value.problems} >= {"layers", "batch_size", "iterations"}


def test_json_round_trip():
    c = BenchmarkConfig(layers="64,64,10", variants=["eager", "aot_eager"], dtype="bf16", seed=7)
    assert BenchmarkConfig.from_json(c.to_json()) == c


def test_malformed_json():
    with pytest.raises(ConfigError) as info:
        BenchmarkConfig.from_json("{layers: 1")
    assert "not valid JSON" in str(info.value)


def test_wrong_types_and_unknown_keys():
    with pytest.raises(ConfigError) as info:
        BenchmarkConfig.from_dict({"batch_size": "256", "fullgraph": 1, "colour": "red"})
    fields = {p.field for p in info.value.problems}
    assert fields == {"batch_size", "fullgraph", "colour"}


def test_flops_and_slug():
    c = BenchmarkConfig(layers="4,3,2", batch_size=5)
    assert c.flops_per_call() == 2 * 5 * (4 * 3 + 3 * 2)
    assert BenchmarkConfig(layers="4,3,2", batch_size=5, workload="training").flops_per_call() == 3 * c.flops_per_call()
    assert "/" not in c.slug() and "mlp4-3-2" in c.slug()


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_layer_spec_parser_raises_only_its_own_error(text):
    try:
        sizes = parse_layer_spec(text)
    except LayerSpecError as exc:
        assert str(exc)
    else:
        assert len(sizes) >= 2 and all(1 <= s <= MAX_LAYER_WIDTH for s in sizes)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=MAX_LAYER_WIDTH), min_size=2, max_size=10))
def test_layer_spec_round_trip(sizes):
    assert parse_layer_spec(",".join(map(str, sizes))) == sizes


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.floats(), st.binary(), st.lists(st.text())))
def test_layer_spec_non_text(value):
    with pytest.raises(LayerSpecError):
        parse_layer_spec(value)


def test_config_file_json_is_plain(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"layers": "8,8"}))
    assert BenchmarkConfig.from_json(path.read_text()).layer_sizes() == [8, 8]


def test_dynamic_saved_as_a_flag_still_loads():
    from compile_studio.core.config import BenchmarkConfig

    assert BenchmarkConfig.from_dict({"dynamic": True}).dynamic == "true"
    # False passed nothing to torch.compile: torch's automatic mode
    assert BenchmarkConfig.from_dict({"dynamic": False}).dynamic == "auto"
    assert BenchmarkConfig.from_json('{"dynamic": "false"}').dynamic == "false"
    assert BenchmarkConfig(dynamic=True).dynamic == "true"  # type: ignore[arg-type]
    assert BenchmarkConfig().dynamic == "auto"
    problems = BenchmarkConfig(dynamic="maybe").problems()
    assert [p.field for p in problems] == ["dynamic"]


def test_dynamic_reaches_torch_compile_as_chosen():
    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.engine.variant import compile_kwargs

    def kwargs(mode: str) -> dict:
        return compile_kwargs(BenchmarkConfig(dynamic=mode), "aot_eager", ["default"])

    assert "dynamic" not in kwargs("auto")
    assert kwargs("false")["dynamic"] is False
    assert kwargs("true")["dynamic"] is True
