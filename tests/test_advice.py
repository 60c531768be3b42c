"""What to try: each advice rule on recorded evidence, what never fires, the ranking, and ``advise`` itself."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from compile_studio.cli import advise as cli_advise
from compile_studio.core.config import BenchmarkConfig
from compile_studio.core.protocol import RunStatus, VariantStatus
from compile_studio.results import RunResult, RunWriter, VariantResult
from compile_studio.results.explain.why_files import compact
from compile_studio.results.suggestions.advice import (
    TIER_CALL,
    TIER_COMPILE,
    TIER_GRAPH,
    RunEvidence,
    Suggestion,
    advice_text,
    gather,
    load_why,
)
from compile_studio.results.suggestions.advice_rules import CACHE_BREAK_EVEN_CALLS, RULES, advise

MODES = ["default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune"]
#: The environment blocks of the worker's hello: this CPU machine (as recorded), an H100, a T4 (no
#: tf32, no bf16: compute capability 7.5).
CPU_ENV = {
    "torch": "2.13.0+cpu", "devices": ["cpu"], "device_names": {"cpu": "AMD EPYC"},
    "device_dtypes": {"cpu": ["fp32", "bf16", "fp16"]}, "device_memory": {"cpu": 24402599936},
    "compile_modes": MODES, "compile_backends": ["aot_eager", "cudagraphs"], "device": "cpu",
}
H100_ENV = {
    "torch": "2.13.0+cu128", "devices": ["cpu", "cuda:0"],
    "device_names": {"cpu": "AMD EPYC", "cuda:0": "NVIDIA H100 80GB HBM3"},
    "device_dtypes": {"cpu": ["fp32", "bf16", "fp16"], "cuda:0": ["fp32", "tf32", "fp16", "bf16"]},
    "device_memory": {"cpu": 2**36, "cuda:0": 85_000_000_000},
    "compile_modes": MODES, "compile_backends": ["aot_eager", "cudagraphs"], "device": "cuda:0",
}
T4_ENV = {
    **H100_ENV, "device_names": {"cpu": "Intel Xeon", "cuda:0": "Tesla T4"},
    "device_dtypes": {"cpu": ["fp32", "bf16", "fp16"], "cuda:0": ["fp32", "fp16"]},
}

# Eager's profile as recorded: the tiny CPU MLP of `compile-studio-cli run --layers 32,32,8
# --batch-size 4 --device cpu` (dispatch-bound), a launch-bound and a GEMM-bound CUDA model.
CPU_TINY = {
    "calls": 5, "wall_ms_per_call": 0.163505, "kernels_per_call": 3.0, "ops_per_call": 3.0, "busy": 0.5169,
    "gemm_share": 0.311, "gemm_per_call": 2.0, "gemm_share_of_ops": 0.6343,
    "gemm_share_of_ops_calls": [0.9424, 0.6343, 0.5858, 0.5768, 0.6347],
    "op_ms_calls": [1.233012, 0.092603, 0.08564, 0.081753, 0.071363], "op_spread": 17.278,
    "elements_per_call": 1408.0,
}
CPU_GEMM = {
    "calls": 5, "wall_ms_per_call": 12.0, "kernels_per_call": 5.0, "ops_per_call": 5.0, "busy": 0.97,
    "gemm_share": 0.9, "gemm_per_call": 3.0, "gemm_share_of_ops": 0.93,
    "gemm_share_of_ops_calls": [0.92, 0.93, 0.94, 0.93, 0.91], "op_ms_calls": [11.6, 11.7, 11.8, 11.9, 12.0],
    "op_spread": 1.04, "elements_per_call": 1.6e6,
}
CUDA_TINY = {
    "calls": 5, "wall_ms_per_call": 0.05, "kernels_per_call": 6.0, "ops_per_call": 6.0, "busy": 0.3,
    "gemm_share": 0.06, "gemm_share_of_ops": 0.2, "gemm_share_of_ops_calls": [0.2] * 5,
    "op_ms_calls": [0.015] * 5, "op_spread": 1.0, "elements_per_call": 2.5e4,
}
CUDA_GEMM = {
    "calls": 5, "wall_ms_per_call": 1.0, "kernels_per_call": 3.0, "ops_per_call": 3.0, "busy": 0.95,
    "gemm_share": 0.9, "gemm_share_of_ops": 0.95, "gemm_share_of_ops_calls": [0.95] * 5,
    "op_ms_calls": [0.95] * 5, "op_spread": 1.0, "elements_per_call": 5e7,
}
FLOPS = {"cpu_tiny": 10240, "cpu_gemm": 8.079e8, "cuda_tiny": 1.3e6, "cuda_gemm": 8.4065e11}

ITEM_REASON = (
    "Unsupported Tensor.item() call with capture_scalar_outputs=False\n  Explanation: Dynamo does not "
    "support tracing `Tensor.item()` with config.capture_scalar_outputs=False."
)
ITEM_BREAK = {"reason": ITEM_REASON, "file": "/home/u/model.py", "line": 18,
              "source": "scale = h.abs().max().item()", "count": 1}
PRINT_BREAK = {"reason": "Failed to trace builtin operator — print", "file": "/home/u/model.py", "line": 21,
               "source": "print(h)", "count": 1}
SIZE_RECOMPILE = {"reason": "0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8",
                  "frame": "forward (/home/u/model.py:11)", "in_window": True}
LIMIT = ("recompile_limit = 8 for forward (model.py:11); last guard failure: tensor 'x' size mismatch at "
         "index 0. expected 4, actual 5")


def compiled_why(device: str = "cpu", **kw: Any) -> dict[str, Any]:
    """A compiled variant's why.json entry (a clean compile unless ``kw`` says otherwise)."""
    compile_info = {"graphs": 1, "frames": ["forward (/home/u/model.py:11)"], "first_call_ms": 2500.0,
                    "phases": {"Dynamo tracing": 0.5, "AOT autograd": 0.4, "Inductor codegen": 1.2},
                    "cache": {"fx_graph_hits": 0, "fx_graph_misses": 1}, "cudagraph_skips": []}
    compile_info.update(kw.pop("compile", {}))
    return {"version": 1, "device": device, "compiled": True, "profile": kw.pop("profile", None),
            "compile": compile_info, "graph_breaks": [], "recompiles": [], "recompile_limit": None,
            "cudagraph_skips": [], "missing": [], **kw}


def facts_of(
    tmp_path: Path, *, env: dict[str, Any] = CPU_ENV, eager: dict[str, Any] = CPU_GEMM,
    flops: float = FLOPS["cpu_gemm"], variants: dict[str, dict[str, Any]] | None = None,
    rows: dict[str, dict[str, Any]] | None = None, cudagraphs: dict[str, str] | None = None,
    **config: Any,
) -> RunEvidence:
    """The rules' evidence of a run as recorded: why.json written and read back, its compact copy in run.json."""
    variants = {"default": compiled_why(env["device"].split(":")[0])} if variants is None else variants
    device = env["device"].split(":")[0]
    why = {"eager": {"version": 1, "device": device, "device_name": env["device_names"][env["device"]],
                     "compiled": False, "profile": eager}, **variants}
    (tmp_path / "why.json").write_text(json.dumps({"schema_version": 1, "variants": why}))
    base = {"layers": "32,32,8", "batch_size": 4, "device": env["device"], "variants": ["eager", *variants]}
    run = RunResult(
        run_id="r", created="", config=BenchmarkConfig.from_dict({**base, **config}),
        environment=env,
        measurement={"why": {k: compact(v) for k, v in why.items()}, "flops_per_call": flops,
                     "model_dtype": config.get("dtype", "fp32"), "batch_size": config.get("batch_size", 4)},
    )
    for name in ["eager", *variants]:
        run.variants[name] = VariantResult(name, compile_s=2.5 if name != "eager" else None,
                                           cudagraphs=(cudagraphs or {}).get(name))
    table = [SimpleNamespace(name=k, **v) for k, v in (rows or {}).items()]
    return gather(run, load_why(tmp_path), table)


def rules_of(found: list[Suggestion]) -> list[str]:
    return [s.rule for s in found]


# -- one test per rule ----------------------------------------------------------------------------

def test_graph_breaks_suggest_fullgraph_to_find_every_one(tmp_path):
    found = advise(facts_of(tmp_path, variants={"default": compiled_why(graph_breaks=[PRINT_BREAK])}))
    assert rules_of(found) == ["fullgraph"]
    s = found[0]
    assert s.delta == {"fullgraph": True} and s.tier == TIER_GRAPH and s.effect == pytest.approx(0.5)
    assert "model.py:21" in s.evidence and "print" in s.evidence
    assert s.source_url == "https://docs.pytorch.org/docs/stable/generated/torch.compile.html"


def test_a_break_at_item_is_a_code_change_at_its_line(tmp_path):
    found = advise(facts_of(tmp_path, variants={"default": compiled_why(graph_breaks=[ITEM_BREAK])}))
    # same effect: the table's order; the flag beside the code change is a change --try can run
    assert rules_of(found) == ["item-break", "item-flag", "fullgraph"]
    assert found[1].delta == {"dynamo_config": ["capture_scalar_outputs=true"]}
    code = found[0].code
    assert code is not None and code.place == "model.py:18" and found[0].delta == {}
    assert code.before == "scale = h.abs().max().item()"
    assert code.after.splitlines()[0] == "scale = h.abs().max()"
    assert "capture_scalar_outputs = True" in code.after


def test_size_recompiles_suggest_dynamic_and_mark_dynamic(tmp_path):
    facts = facts_of(tmp_path, variants={"default": compiled_why(recompiles=[SIZE_RECOMPILE])})
    found = advise(facts)
    assert rules_of(found) == ["dynamic-shapes", "mark-dynamic"]
    dyn, mark = found
    assert dyn.delta == {"dynamic": "true"} and dyn.effect == pytest.approx(0.5)
    assert "size mismatch at index 0. expected 4, actual 8" in dyn.evidence
    assert mark.code is not None and mark.code.place == "model.py:11"
    assert mark.code.after.startswith("torch._dynamo.mark_dynamic(x, 0)")
    assert dyn.source_url.endswith("torch.compiler_dynamic_shapes.html")
    # already shape-generic: the config change is not suggested again (the code change still is)
    assert rules_of(advise(dataclasses.replace(facts, config={**facts.config, "dynamic": "true"}))) == [
        "mark-dynamic"
    ]


def test_a_hit_recompile_limit_leads_with_the_whole_call_at_stake(tmp_path):
    variants = {"default": compiled_why(recompile_limit=LIMIT, graph_breaks=[PRINT_BREAK])}
    found = advise(facts_of(tmp_path, variants=variants))
    assert rules_of(found)[:2] == ["dynamic-shapes", "mark-dynamic"] and found[0].effect == 1.0
    assert "recompile limit" in found[0].evidence and rules_of(found)[2] == "fullgraph"


#: A forward that counts its calls in a Python attribute, as recorded (torch 2.13, aot_eager).
VALUE_REASON = (
    "0/{k}: self.calls == {k}                                          # self.calls += 1  # mp/attr/counter.py:12 "
    "in forward (HINT: torch.compile considers integer attributes of the nn.Module to be static. If you are "
    "observing recompilation, you might want to make this integer dynamic using "
    "torch._dynamo.config.allow_unspec_int_on_nn_module = True, or convert this integer into a tensor.)\n"
    "User stack trace:\n  File \"/home/u/counter.py\", line 12, in forward\n    self.calls += 1"
)
VALUE_LIMIT = (
    "recompile_limit = 8 for forward (counter.py:11); last guard failure: self.calls == 7 "
    "# self.calls += 1 # mp/attr/counter.py:12 in forward (HINT: …)"
)


def test_a_python_value_changed_every_call_is_a_code_change_at_its_line(tmp_path):
    recompiles = [{"reason": VALUE_REASON.format(k=k), "frame": "forward (/home/u/counter.py:11)",
                   "in_window": False} for k in range(3)]
    found = advise(facts_of(tmp_path, variants={"default": compiled_why(recompiles=recompiles)}))
    # not a size guard: no dynamic=True; the flag that expresses the change can be tried
    assert rules_of(found) == ["python-value-guard", "python-value-flag"]
    assert found[1].delta == {"dynamo_config": ["allow_unspec_int_on_nn_module=true"]}
    s = found[0]
    assert s.delta == {} and s.tier == TIER_GRAPH and s.effect == pytest.approx(3 / 4)
    assert "self.calls == 2" in s.evidence and "self.calls" in s.title
    assert s.code is not None and s.code.place == "counter.py:12" and s.code.before == "self.calls += 1"
    assert 'register_buffer("calls"' in s.code.after and "allow_unspec_int_on_nn_module" in s.code.after
    # the limit hit on it: the whole compiled call is at stake
    limited = advise(facts_of(tmp_path, variants={"default": compiled_why(recompiles=recompiles,
                                                                          recompile_limit=VALUE_LIMIT)}))
    assert rules_of(limited) == ["python-value-guard", "python-value-flag"] and limited[0].effect == 1.0
    assert "recompile limit was hit" in limited[0].evidence and "self.calls == 7" in limited[0].evidence


def test_a_launch_bound_gpu_model_gets_reduce_overhead(tmp_path):
    found = advise(facts_of(tmp_path, env=H100_ENV, eager=CUDA_TINY, flops=FLOPS["cuda_tiny"], warmup=0))
    assert rules_of(found) == ["reduce-overhead"]
    s = found[0]
    assert s.delta == {"variants": ["reduce-overhead"], "warmup": 3}  # CUDA graphs record in warm-up
    assert s.effect == pytest.approx(0.7) and "idle 70 %" in s.evidence
    assert s.source_url.endswith("torch.compiler_cudagraph_trees.html")


def test_a_dispatch_bound_cpu_model_gets_a_larger_batch(tmp_path):
    found = advise(facts_of(tmp_path, eager=CPU_TINY, flops=FLOPS["cpu_tiny"]))
    assert rules_of(found) == ["larger-batch"]
    s = found[0]
    # 469 elements per operator: x64 (the cap) towards the 32 k elements where dispatch stops dominating
    assert s.delta == {"batch_size": 256} and s.effect == pytest.approx(1 - 0.5169)
    assert "dispatch-bound: 3 operators per call, 469 elements each" in s.evidence


def test_a_batch_beyond_the_devices_memory_is_not_suggested(tmp_path):
    env = {**CPU_ENV, "device_memory": {"cpu": 4096}}
    facts = facts_of(tmp_path, env=env, eager=CPU_TINY, flops=FLOPS["cpu_tiny"], layers="32,32,8")
    assert advise(facts) == []


def test_fp32_gemms_on_a_tensor_core_gpu_suggest_tf32_and_bf16(tmp_path):
    found = advise(facts_of(tmp_path, env=H100_ENV, eager=CUDA_GEMM, flops=FLOPS["cuda_gemm"]))
    assert rules_of(found) == ["dtype-bf16", "dtype-tf32"]  # bf16's peak is higher: more at stake
    bf16, tf32 = found
    assert bf16.delta == {"dtype": "bf16"} and tf32.delta == {"dtype": "tf32"}
    assert tf32.effect == pytest.approx(0.9 * (1 - 67 / 495)) and bf16.effect == pytest.approx(0.9 * (1 - 67 / 989))
    assert tf32.source_url.endswith("#tensorfloat-32-tf32-on-ampere-and-later-devices")


def test_no_dtype_the_device_lacks(tmp_path):
    # a T4 lists neither tf32 nor bf16: no dtype suggestion, however GEMM-bound
    assert advise(facts_of(tmp_path, env=T4_ENV, eager=CUDA_GEMM, flops=FLOPS["cuda_gemm"])) == []
    # an H100 run already in bf16: nothing to gain from the rule
    assert advise(facts_of(tmp_path, env=H100_ENV, eager=CUDA_GEMM, flops=FLOPS["cuda_gemm"], dtype="bf16")) == []


def test_skipped_cuda_graphs_suggest_max_autotune_no_cudagraphs(tmp_path):
    skip = "skipping cudagraphs due to mutated inputs (1 instances)"
    variants = {"reduce-overhead": compiled_why("cuda", cudagraph_skips=[skip])}
    found = advise(facts_of(tmp_path, env=H100_ENV, eager=CUDA_GEMM, flops=FLOPS["cuda_gemm"], dtype="bf16",
                            variants=variants, cudagraphs={"reduce-overhead": f"skipped: {skip}"}))
    assert rules_of(found) == ["no-cudagraphs"]
    assert found[0].delta == {"variants": ["max-autotune-no-cudagraphs"]} and skip in found[0].evidence
    assert found[0].effect is None


def test_a_cold_compile_that_dominates_the_break_even_suggests_the_cache(tmp_path):
    rows = {"eager": {"median_ms": 1.0}, "default": {"median_ms": 0.5, "break_even_calls": 5000.0}}
    found = advise(facts_of(tmp_path, rows=rows, compile_cache="cold"))
    assert rules_of(found) == ["fx-graph-cache", "cache-artifacts"]
    warm, artifacts = found
    assert warm.delta == {"compile_cache": "warm"} and warm.tier == TIER_COMPILE
    assert warm.effect == pytest.approx(1 - 0.5 / 2.5)  # all of the first call but Dynamo tracing
    assert "5,000 calls" in warm.evidence and "1 FX graph cache miss(es)" in warm.evidence
    assert artifacts.code is not None and "save_cache_artifacts" in artifacts.code.after
    assert artifacts.source_url.endswith("torch_compile_caching_tutorial.html")
    # a warm cache that missed: only the artifacts; a quick break-even or a cache hit: nothing
    assert rules_of(advise(facts_of(tmp_path, rows=rows))) == ["cache-artifacts"]
    quick = {**rows, "default": {"median_ms": 0.5, "break_even_calls": CACHE_BREAK_EVEN_CALLS / 2}}
    assert advise(facts_of(tmp_path, rows=quick, compile_cache="cold")) == []
    hit = compiled_why(compile={"cache": {"fx_graph_hits": 1, "fx_graph_misses": 0}})
    assert advise(facts_of(tmp_path, rows=rows, variants={"default": hit})) == []


# -- what never fires -----------------------------------------------------------------------------

def test_no_rule_fires_on_a_run_it_does_not_apply_to(tmp_path):
    # a GEMM-bound CPU model, compiled as one graph with no recompile, a quick break-even
    rows = {"eager": {"median_ms": 12.0}, "default": {"median_ms": 11.0, "break_even_calls": 40.0}}
    facts = facts_of(tmp_path, rows=rows)
    for rule in RULES:
        assert list(rule(facts)) == [], rule.__name__
    assert advice_text(advise(facts)).startswith("nothing to suggest")


@pytest.mark.parametrize("eager", [CPU_TINY, CPU_GEMM, CUDA_TINY], ids=["dispatch", "gemm", "launch-like"])
def test_a_cpu_run_never_gets_reduce_overhead_or_cuda_graphs(tmp_path, eager):
    variants = {"max-autotune": compiled_why(graph_breaks=[PRINT_BREAK])}
    facts = facts_of(tmp_path, eager=eager, flops=FLOPS["cpu_tiny"], variants=variants,
                     cudagraphs={"max-autotune": "not used: there are no CUDA graphs on cpu"})
    found = advise(facts)
    assert found, "the graph break is still worth a suggestion"
    for s in found:
        added = s.apply(facts.config)["variants"]
        assert "reduce-overhead" not in added and "max-autotune-no-cudagraphs" not in added, s
        assert "CUDA graph" not in s.title


# -- the suggestion type and the ranking ----------------------------------------------------------

def test_a_delta_applies_to_a_config_dict_and_leaves_it_as_it_was(tmp_path):
    facts = facts_of(tmp_path, env=H100_ENV, eager=CUDA_TINY, flops=FLOPS["cuda_tiny"], warmup=0)
    s = advise(facts)[0]
    before = json.loads(json.dumps(facts.config))
    after = s.apply(facts.config)
    assert facts.config == before
    assert after["variants"] == ["eager", "default", "reduce-overhead"] and after["warmup"] == 3
    assert BenchmarkConfig.from_dict(after).problems() == []
    assert s.delta_text() == "variants+=reduce-overhead, warmup=3"
    fields = set(BenchmarkConfig().to_dict())
    assert set(s.delta) <= fields


def test_the_ranking_puts_what_compile_ran_first_then_per_call_then_compile_time(tmp_path):
    rows = {"eager": {"median_ms": 0.2}, "default": {"median_ms": 0.1, "break_even_calls": 9000.0}}
    variants = {"default": compiled_why(graph_breaks=[PRINT_BREAK, PRINT_BREAK | {"line": 30}])}
    found = advise(facts_of(tmp_path, eager=CPU_TINY, flops=FLOPS["cpu_tiny"], rows=rows, variants=variants,
                            compile_cache="cold"))
    assert [s.tier for s in found] == sorted(s.tier for s in found)
    assert rules_of(found) == ["fullgraph", "larger-batch", "fx-graph-cache", "cache-artifacts"]
    assert found[0].effect == pytest.approx(2 / 3) and found[1].tier == TIER_CALL


def test_every_source_is_a_named_pytorch_page(tmp_path):
    rows = {"eager": {"median_ms": 0.2}, "default": {"median_ms": 0.1, "break_even_calls": 9000.0}}
    variants = {"default": compiled_why(graph_breaks=[ITEM_BREAK], recompiles=[SIZE_RECOMPILE])}
    found = advise(facts_of(tmp_path, eager=CPU_TINY, flops=FLOPS["cpu_tiny"], rows=rows, variants=variants,
                            compile_cache="cold"))
    assert len(found) == 8
    for s in found:
        assert s.source_title and s.source_url.startswith("https://docs.pytorch.org/"), s


# -- the command ----------------------------------------------------------------------------------

def write_run(folder: Path, why: dict[str, Any], compile_s: float, medians: dict[str, float]) -> None:
    """A run folder as the CLI writes it: run.json, samples.csv, summary.csv, and why.json."""
    config = BenchmarkConfig.from_dict({"layers": "32,32,8", "batch_size": 4, "device": "cpu", "iterations": 30,
                                        "warmup": 2, "rounds": 5, "variants": list(medians),
                                        "compile_cache": "cold"})
    run = RunResult(run_id=folder.name, created="2026-12-04T04:31:14", config=config, environment=CPU_ENV,
                    measurement={"why": {k: compact(v) for k, v in why.items()}, "flops_per_call": 10240,
                                 "model_dtype": "fp32", "batch_size": 4})
    writer = RunWriter(folder, run)
    for name, ms in medians.items():
        v = run.variant(name)
        v.status = VariantStatus.DONE
        v.compile_s = compile_s if name != "eager" else None
        for r in range(5):
            wall = [ms * (1 + 0.001 * ((k * 7 + r) % 5)) for k in range(6)]
            v.samples.extend(r * 6, "measure", wall, None, r)
            writer.append_samples(name, r * 6, "measure", wall, None, r)
    run.status = RunStatus.COMPLETE
    writer.finish()
    (folder / "why.json").write_text(json.dumps({"schema_version": 1, "variants": why}))


def test_advise_prints_the_ranked_list_of_a_run_folder(tmp_path, capsys):
    folder = tmp_path / "runs" / "20261204-043114_mlp32-32-8_b4_fp32_cpu_eager+default"
    evil = PRINT_BREAK | {"source": "print(h)  # \x1b]52;c;ZXZpbA==\x07", "reason": "print \u202e \x1b[2J"}
    why = {"eager": {"version": 1, "device": "cpu", "compiled": False, "profile": CPU_GEMM},
           "default": compiled_why(graph_breaks=[evil])}
    write_run(folder, why, compile_s=2.5, medians={"eager": 1.0, "default": 0.5})
    args = argparse.Namespace(run=str(folder), out=tmp_path / "runs")
    assert cli_advise.main(args) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b]52" in out and "\\u202e \\x1b[2J" in out  # the file's escapes, made visible
    lines = [line for line in out.splitlines() if line[:2] in ("1.", "2.", "3.")]
    assert [line.split(" ", 1)[1][:20] for line in lines] == [
        "compile with fullgra", "measure with the com", "save the compile art",
    ], out
    assert "config: fullgraph=true" in out and "config: compile_cache=warm" in out
    # 2.5 s over about 0.5 ms saved per call
    assert re.search(r"pays off only after [45],\d{3} calls \(first call 2.5 s, 1 FX graph cache miss", out), out
    assert "source: Compile Time Caching in torch.compile — https://docs.pytorch.org/tutorials/" in out


def test_advise_registers_as_a_subcommand_and_reports_a_missing_run(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    cli_advise.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["advise", "nope", "--out", str(tmp_path)])
    assert args.handler is cli_advise.main
    assert args.handler(args) == 2
    assert "nope" in capsys.readouterr().err
