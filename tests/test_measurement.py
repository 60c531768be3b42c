"""Measurement truth, with real workers: correctness checks, memory, harness floor, caches."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import torch

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.engine import checks
from compile_studio.engine.cache_flush import last_level_cache_bytes
from compile_studio.engine.clocks import ClockReading, clock_change, read_cpu_mhz
from compile_studio.engine.timing import CallTimer
from compile_studio.jobs.session import RunSession
from compile_studio.launchers.supervisor import WorkerLauncher
from compile_studio.results import RunStore

pytestmark = pytest.mark.long

BACKENDS = str(Path(__file__).parent / "support" / "backends_for_tests.py")


def run(tmp_path: Path, env: dict | None = None, **overrides):
    """One run through a real worker; returns (RunResult, warnings)."""
    config = {
        "layers": "64,64,16",
        "batch_size": 8,
        "device": "cpu",
        "iterations": 12,
        "warmup": 2,
        "warmup_min_ms": 0,
        "rounds": 1,
        "compile_timing": "in_run",
        "backend_modules": [BACKENDS],
    }
    config.update(overrides)
    warnings: list[str] = []

    def on_event(event: protocol.Event) -> None:
        if isinstance(event, protocol.WarningEvent):
            warnings.append(event.message)

    launcher = WorkerLauncher(env=env) if env is not None else None
    session = RunSession(
        BenchmarkConfig.from_dict(config), RunStore(tmp_path / "runs"), launcher, on_event=on_event
    )
    outcome = session.run()
    assert outcome.run.status == "complete", outcome.run.message
    return outcome.run, warnings


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_wrong_compiled_outputs_are_flagged_and_a_correct_one_passes(tmp_path, dtype):
    variants = ["eager", "drop_last_bias", "scale_1_05", "wrong_after_first", "correct_copy"]
    result, warnings = run(tmp_path, dtype=dtype, variants=variants)
    v = result.variants
    assert v["eager"].allclose is True
    assert v["correct_copy"].allclose is True, v["correct_copy"].checks
    for name in ("drop_last_bias", "scale_1_05", "wrong_after_first"):
        assert v[name].allclose is False, (name, v[name].checks)
        assert any(w.startswith(f"{name} is not correct") for w in warnings)
    assert "output scaled by" in " ".join(v["scale_1_05"].checks["problems"])
    assert v["scale_1_05"].checks["output"]["gain"] == pytest.approx(1.05, abs=2e-3)
    # right on the first call, wrong later: caught by the steady-state check only
    later = v["wrong_after_first"].checks["problems"]
    assert later and all(p.startswith("steady state") for p in later)
    assert v["wrong_after_first"].checks["replay_max_diff"] > 0
    # both numbers and the rule are in the run
    c = v["correct_copy"].checks
    assert c["output"]["error"] <= checks.ERROR_BOUND[dtype]
    assert c["eager_output"]["error"] is not None and "normwise error" in c["rule"]
    assert result.measurement["correctness_rule"] == checks.rule_text(dtype)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_training_gradients_off_by_one_percent_are_flagged(tmp_path, dtype):
    result, _ = run(
        tmp_path, dtype=dtype, workload="training", variants=["eager", "grads_1_01", "correct_copy"]
    )
    v = result.variants
    assert v["correct_copy"].allclose is True, v["correct_copy"].checks
    assert v["grads_1_01"].allclose is False
    assert any(p.startswith("gradients") for p in v["grads_1_01"].checks["problems"])
    assert v["grads_1_01"].checks["gradients"]["gain"] == pytest.approx(1.01, abs=2e-3)


@pytest.mark.parametrize("rounds", [1, 3])
def test_a_backend_allocating_64_mib_per_call_shows_it_in_its_own_peak(tmp_path, rounds):
    result, _ = run(tmp_path, variants=["eager", "alloc_64mib"], rounds=rounds)
    eager = result.variants["eager"].peak_memory_bytes
    alloc = result.variants["alloc_64mib"].peak_memory_bytes
    assert result.variants["alloc_64mib"].memory_kind == "rss_peak"
    assert alloc - eager == pytest.approx(64 << 20, rel=0.10)


def test_harness_floor_is_recorded_and_below_every_sample(tmp_path):
    result, _ = run(tmp_path, variants=["eager", "aot_eager"], rounds=3)
    floor = result.measurement["harness_floor_ms"]
    assert 0 < floor
    for v in result.variants.values():
        assert floor < min(v.samples.measured_wall_ms())
        assert v.pipelined_ms is not None and v.pipelined_ms > 0
        # the measurement rounds are recorded in order: 0, 1, 2
        rounds = [r for r, p in zip(v.samples.round, v.samples.phase) if p == "measure"]
        assert rounds == sorted(rounds) and set(rounds) == {0, 1, 2}


def _spin(ms: float) -> None:
    end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < end:
        pass


def test_a_call_of_known_cost_measures_that_cost_plus_the_floor():
    timer = CallTimer(torch.device("cpu"))
    floor, _ = timer.floor()
    samples = sorted(timer.time(lambda: _spin(1.0))[0] for _ in range(60))
    median = samples[len(samples) // 2]
    assert median == pytest.approx(1.0 + floor, rel=0.10)


@pytest.mark.inductor
def test_reduce_overhead_on_cpu_says_cuda_graphs_were_not_used(tmp_path):
    result, warnings = run(tmp_path, variants=["eager", "reduce-overhead"], warmup=3, backend_modules=[])
    v = result.variants["reduce-overhead"]
    assert v.cudagraphs == "not used: there are no CUDA graphs on cpu"
    assert any("CUDA graphs not used" in w for w in warnings)
    assert result.variants["eager"].cudagraphs is None


@pytest.mark.inductor
@pytest.mark.fresh_worker  # the worker gets caches of its own (TORCHINDUCTOR_CACHE_DIR, …)
def test_cold_cache_writes_nothing_into_the_users_caches(tmp_path):
    user_triton = tmp_path / "user-triton"
    user_inductor = tmp_path / "user-inductor"
    user_triton.mkdir()
    user_inductor.mkdir()
    env = dict(
        os.environ, TRITON_CACHE_DIR=str(user_triton), TORCHINDUCTOR_CACHE_DIR=str(user_inductor)
    )
    # one Linear layer: a cold Inductor compile that writes its FX graph and output code into
    # the cache (what is watched here) without a C++ kernel to build, twice (host and worker)
    result, _ = run(
        tmp_path, env=env, layers="8,4", variants=["eager", "default"], compile_cache="cold",
        compile_timing="isolated", backend_modules=[],
    )
    assert result.variants["default"].compile_timing == "isolated"
    assert result.variants["default"].compile_s > 0
    assert list(user_triton.iterdir()) == [] and list(user_inductor.iterdir()) == []


def test_warm_up_lasts_its_minimum_time(tmp_path):
    result, _ = run(tmp_path, variants=["eager"], warmup=2, warmup_min_ms=300)
    s = result.variants["eager"].samples
    warm = [w for w, p in zip(s.wall_ms, s.phase) if p == "warmup"]
    assert len(warm) > 2


def test_a_bad_backend_module_is_a_configuration_problem(tmp_path):
    config = BenchmarkConfig(
        layers="8,8", batch_size=2, device="cpu", iterations=3, warmup=0, rounds=1,
        variants=["eager"], backend_modules=[str(tmp_path / "missing.py")],
    )
    outcome = RunSession(config, RunStore(tmp_path / "runs")).run()
    assert outcome.config_problems is not None
    assert outcome.config_problems[0].field == "backend_modules"
    assert "no such file" in outcome.config_problems[0].message


# -- pieces with injected readings ------------------------------------------------------------

def test_clock_change_and_cpu_frequency_from_sysfs(tmp_path):
    for cpu, khz in (("cpu0", 2_000_000), ("cpu1", 3_000_000)):
        folder = tmp_path / cpu / "cpufreq"
        folder.mkdir(parents=True)
        (folder / "scaling_cur_freq").write_text(f"{khz}\n")
    assert read_cpu_mhz(str(tmp_path / "cpu[0-9]*" / "cpufreq" / "scaling_cur_freq")) == 2500.0
    assert read_cpu_mhz(str(tmp_path / "nothing" / "*")) is None
    assert clock_change(ClockReading(1980.0, []), ClockReading(1410.0, ["sw_power_cap"])) == (
        pytest.approx(-0.2879, abs=1e-3)
    )
    assert clock_change(ClockReading(None, []), ClockReading(1410.0, [])) is None


def test_last_level_cache_size_from_sysfs(tmp_path):
    for index, (level, kind, size) in enumerate(
        ((1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"), (3, "Unified", "32M"))
    ):
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        (folder / "level").write_text(f"{level}\n")
        (folder / "type").write_text(kind + "\n")
        (folder / "size").write_text(size + "\n")
    assert last_level_cache_bytes(str(tmp_path / "index*")) == 32 << 20


def test_judge_applies_the_three_rules():
    eager = checks.Deviation(error=4e-3, gain=1.0, finite=True)
    assert checks.judge("bf16", checks.Deviation(5e-3, 1.0, True), eager) == (True, "")
    ok, why = checks.judge("bf16", checks.Deviation(3e-2, 1.0, True), eager)
    assert not ok and "bf16 bound" in why
    ok, why = checks.judge("fp32", checks.Deviation(5e-6, 1.0, True), checks.Deviation(1e-7, 1.0, True))
    assert not ok and "eager's" in why
    ok, why = checks.judge("fp32", checks.Deviation(1e-7, 1.01, True), None)
    assert not ok and "scaled by 1.01" in why
    assert checks.judge("fp32", checks.Deviation(float("inf"), 1.0, False), None)[0] is False


def test_training_can_compile_the_whole_step(tmp_path):
    result, _ = run(
        tmp_path, workload="training", compile_scope="step", variants=["eager", "aot_eager"]
    )
    v = result.variants["aot_eager"]
    assert result.config.compile_scope == "step"
    assert v.allclose is True, v.checks
    assert v.graphs >= 1 and v.compile_s > 0
    assert v.checks["gradients"]["error"] is not None
