"""Stage 3, same_process: timing methods side by side in one process, on the same weights and input.

Eager and the compiled variants, in rounds (A B C A B C …): the app's loop
(warm and cold L2), the pipelined loop, ``Timer.blocked_autorange``, and on
CUDA ``do_bench`` and ``do_bench_cudagraph`` — the latter only around a
variant that is not a CUDA graph itself (capturing a graph replay inside
another capture is nested capture). Then a profiler trace, Inductor's
CUDA-graph skip counter, replay identity and an L2-resident probe.
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from compile_studio.core.config import BenchmarkConfig, format_bytes
from compile_studio.core.variants import records_cudagraphs
from compile_studio.engine import checks as rule
from compile_studio.engine.cache_flush import CacheFlush
from compile_studio.engine.environment import compile_modes
from compile_studio.engine.mlp import TORCH_DTYPES
from compile_studio.engine.run_state import apply_precision
from compile_studio.engine.timing import CallTimer
from compile_studio.engine.variant import build_variant
from compile_studio.engine.workloads import build_workload

from .figures import median, ms, ratio_text, ratios
from .loops import app_loop, do_bench_cudagraph_ms, do_bench_ms, timer_ms, warm_up
from .plan import Plan
from .report import CPU_TIMING, CUDA_ONLY, Report

#: Agreement asked of two timing methods: ±5 %.
AGREEMENT = 0.05
#: Cold-L2 device time may undercut warm by this much (run-to-run noise) and still pass.
COLD_WARM_SLACK = 0.02
#: An L2-resident read must be at least this much slower after a flush.
L2_PROBE_MIN_RATIO = 1.05

METHODS = ("app_host", "app_device", "app_cold_host", "app_cold_device", "pipelined",
           "timer", "do_bench", "do_bench_cudagraph")
#: Why ``do_bench_cudagraph`` has no figure for a CUDA-graph variant.
NESTED_CAPTURE = "not run: the variant replays a CUDA graph itself (its capture would be nested)"


def stage_same_process(
    report: Report, plan: Plan, device: torch.device, figures: dict[str, Any]
) -> None:
    """Time every compare variant by every method, in rounds, and judge the agreements."""
    cuda = device.type == "cuda"
    cfg = BenchmarkConfig(layers=plan.compare_layers, batch_size=plan.compare_batch,
                          dtype=plan.compare_dtype, device=str(device),
                          variants=list(plan.compare_variants))
    apply_precision(cfg.dtype)
    dtype = TORCH_DTYPES[cfg.dtype]
    workload = build_workload(cfg)
    x_cpu = workload.inputs[0]
    x = x_cpu.to(device, dtype)
    with torch.no_grad():
        reference = workload.model.to(device, torch.float64)(x_cpu.to(device, torch.float64))
    del workload
    timer = CallTimer(device, use_events=cuda)
    flush = CacheFlush.for_device(device)
    threads = torch.get_num_threads()
    figures.update(layers=cfg.layers, batch=cfg.batch_size, dtype=cfg.dtype, threads=threads,
                   flush_bytes=flush.nbytes, rounds=plan.rounds, calls=plan.calls)
    report.say(f"   MLP {cfg.layers}, batch {cfg.batch_size}, {cfg.dtype}, {threads} threads, "
               f"flush {format_bytes(flush.nbytes)}, {plan.rounds} rounds")
    modes = compile_modes()
    steps: dict[str, Callable[[], Any]] = {}
    first: dict[str, torch.Tensor] = {}
    per: dict[str, dict[str, list[float | None]]] = {}
    errors: dict[str, dict[str, str]] = {}
    with torch.inference_mode():
        for name in cfg.variants:
            t0 = time.perf_counter()
            v = build_variant(cfg, name, device, dtype, modes)

            def fn(step: Callable[[tuple[Any, ...]], Any] = v.step,
                   xx: torch.Tensor = x) -> Any:
                return step((xx,))

            first[name] = fn().detach().clone()
            timer.sync()
            compiled_s = time.perf_counter() - t0
            warm_up(fn, timer, plan.warmup_s)
            steps[name] = fn
            per[name] = {m: [] for m in METHODS}
            errors[name] = {}
            report.say(f"   {name}: built, first call and warm-up in {time.perf_counter() - t0:.1f} s "
                       f"(first call {compiled_s:.1f} s)")

        floors: list[tuple[float, float | None]] = []
        for r in range(plan.rounds):
            floors.append(timer.floor())
            for name, fn in steps.items():
                _one_round(report, plan, cuda, timer, flush, threads, r, name, fn,
                           per[name], errors[name])
            report.save()

        figures["floor_host_ms"] = [f[0] for f in floors]
        figures["floor_device_ms"] = [f[1] for f in floors]
        figures["per_round"] = per
        figures["method_errors"] = errors
        figures["medians"] = {
            name: {m: median(vals) for m, vals in row.items()} for name, row in per.items()
        }
        if cuda:
            figures["method_notes"] = {
                name: {"do_bench_cudagraph": NESTED_CAPTURE}
                for name in steps if records_cudagraphs(name)
            }
        _judge_timing(report, cuda, per, errors, figures)
        _judge_floor(report, cuda, per, floors)
        late = {name: fn().detach().clone() for name, fn in steps.items()}
        timer.sync()
        if cuda:
            with report.guard("compare.profiler", "profiler trace and CUDA-graph skip counter"):
                _profile(report, steps, figures)
        _replay_and_errors(report, cuda, first, late, reference, figures)
        if cuda:
            with report.guard("compare.l2_probe", "cold L2 slows an L2-resident read"):
                _l2_probe(report, plan, device, timer, flush, figures)
    from torch._dynamo import reset as dynamo_reset

    steps.clear()
    first.clear()
    del flush, reference
    gc.collect()
    dynamo_reset()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def _one_round(
    report: Report, plan: Plan, cuda: bool, timer: CallTimer, flush: CacheFlush, threads: int,
    r: int, name: str, fn: Callable[[], Any], row: dict[str, list[float | None]],
    errors: dict[str, str],
) -> None:
    """One round of one variant: every method once, its figures appended to ``row``."""
    warm = app_loop(timer, fn, plan.calls)
    cold = app_loop(timer, fn, plan.cold_calls, flush)
    row["app_host"].append(warm.host_median)
    row["app_device"].append(warm.device_median)
    row["app_cold_host"].append(cold.host_median)
    row["app_cold_device"].append(cold.device_median)
    row.setdefault("app_min_host", []).append(min(warm.host_min, cold.host_min))
    if warm.device_min is not None and cold.device_min is not None:
        row.setdefault("app_min_device", []).append(min(warm.device_min, cold.device_min))
    row["pipelined"].append(statistics.median(
        timer.pipelined(fn, plan.pipelined_calls) for _ in range(plan.pipelined_repeats)
    ))
    row["timer"].append(timer_ms(fn, plan.timer_min_s, threads))
    if cuda:
        for method, measure in (("do_bench", do_bench_ms),
                                ("do_bench_cudagraph", do_bench_cudagraph_ms)):
            if method == "do_bench_cudagraph" and records_cudagraphs(name):
                continue  # NESTED_CAPTURE
            try:
                row[method].append(measure(fn, plan.bench_rep_ms))
            except Exception as exc:  # noqa: BLE001 - reported as the method's figure
                errors[method] = f"{type(exc).__name__}: {str(exc)[:200]}"
                row[method].append(None)
                with contextlib.suppress(Exception):
                    torch.cuda.synchronize()
    graph = row["do_bench_cudagraph"]
    report.say(
        f"   round {r + 1} {name:16s} app {ms(warm.host_median)} host"
        + (f" / {ms(warm.device_median)} dev, cold {ms(cold.device_median)} dev"
           if cuda else f", cold {ms(cold.host_median)}")
        + f", pipelined {ms(row['pipelined'][-1])}, Timer {ms(row['timer'][-1])}"
        + (f", do_bench {ms(row['do_bench'][-1])}, do_bench_cudagraph "
           f"{ms(graph[-1]) if graph else 'not run (a CUDA graph itself)'}"
           if cuda else "")
    )


def _judge_timing(
    report: Report, cuda: bool, per: dict[str, dict[str, list[float | None]]],
    errors: dict[str, dict[str, str]], figures: dict[str, Any],
) -> None:
    summary: dict[str, Any] = {}
    for name, row in per.items():
        cold = row["app_cold_device"] if cuda else row["app_cold_host"]
        warm = row["app_device"] if cuda else row["app_host"]
        vs_bench = ratios(cold, row["do_bench"]) if cuda else []
        failed = "; ".join(f"{m}: {e}" for m, e in errors.get(name, {}).items())
        vs_timer = ratios(row["pipelined"], row["timer"])
        cold_warm = ratios(cold, warm)
        summary[name] = {"cold_vs_do_bench": vs_bench, "pipelined_vs_timer": vs_timer,
                         "cold_vs_warm": cold_warm}
        if cuda:
            ok = bool(vs_bench) and abs(statistics.median(vs_bench) - 1) <= AGREEMENT
            report.check(
                f"compare.{name}.cold_vs_do_bench",
                f"{name}: app cold-L2 device median within ±5 % of do_bench's", ok,
                f"app {ms(median(cold))}, do_bench {ms(median(row['do_bench']))}, "
                + ratio_text(vs_bench), failed, cuda_only=True,
            )
        else:
            report.skip(f"compare.{name}.cold_vs_do_bench",
                        f"{name}: app cold-L2 device median within ±5 % of do_bench's",
                        CUDA_ONLY, cuda_only=True)
        report.judge(
            cuda, f"compare.{name}.pipelined_vs_timer",
            f"{name}: app pipelined figure within ±5 % of Timer.blocked_autorange",
            bool(vs_timer) and abs(statistics.median(vs_timer) - 1) <= AGREEMENT,
            f"pipelined {ms(median(row['pipelined']))}, Timer {ms(median(row['timer']))}, "
            + ratio_text(vs_timer), CPU_TIMING,
        )
        report.judge(
            cuda, f"compare.{name}.cold_ge_warm",
            f"{name}: cold-L2 {'device' if cuda else 'host'} time ≥ warm "
            f"(within {COLD_WARM_SLACK:.0%})",
            bool(cold_warm) and statistics.median(cold_warm) >= 1 - COLD_WARM_SLACK,
            f"cold {ms(median(cold))}, warm {ms(median(warm))}, " + ratio_text(cold_warm),
            CPU_TIMING,
        )
    figures["ratios"] = summary


def _judge_floor(
    report: Report, cuda: bool, per: dict[str, dict[str, list[float | None]]],
    floors: list[tuple[float, float | None]],
) -> None:
    floor_host = statistics.median(f[0] for f in floors)
    device_floors = [f[1] for f in floors if f[1] is not None]
    floor_device = statistics.median(device_floors) if device_floors else None
    fastest = {n: min(v for v in row["app_min_host"] if v is not None) for n, row in per.items()}
    ok = all(floor_host < m for m in fastest.values())
    figure = f"floor {ms(floor_host, 5)} host; fastest calls " + ", ".join(
        f"{n} {ms(m)}" for n, m in fastest.items())
    if cuda:
        fastest_dev = {n: min(row.get("app_min_device") or [float("inf")])
                       for n, row in per.items()}
        ok = ok and floor_device is not None and all(floor_device < m for m in fastest_dev.values())
        figure += f"; device floor {ms(floor_device, 5)}, fastest " + ", ".join(
            f"{n} {ms(m)}" for n, m in fastest_dev.items())
    report.check("compare.harness_floor", "harness floor below every variant's fastest call",
                 ok, figure)


def _profile(report: Report, steps: dict[str, Callable[[], Any]], figures: dict[str, Any]) -> None:
    from torch.profiler import ProfilerActivity, profile

    launches: dict[str, int] = {}
    for name, fn in steps.items():
        calls = 5
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
        launches[name] = sum(
            int(e.count) for e in prof.key_averages() if "graphlaunch" in e.key.lower()
        )
        report.say(f"   profiler {name}: {launches[name]} cudaGraphLaunch in {calls} calls")
    figures["cuda_graph_launches"] = launches
    for name in [n for n in steps if records_cudagraphs(n)]:
        report.check(f"compare.{name}.cudagraph_launch",
                     f"profiler shows cudaGraphLaunch for {name}", launches[name] >= 5,
                     f"{launches[name]} launches in 5 calls; others: " + ", ".join(
                         f"{n} {c}" for n, c in launches.items() if n != name), cuda_only=True)
    from torch._dynamo.utils import counters

    skips = int(counters["inductor"].get("cudagraph_skips", 0))
    figures["cudagraph_skips"] = skips
    report.check("compare.cudagraph_skips", "Inductor counted 0 CUDA-graph skips", skips == 0,
                 f"cudagraph_skips = {skips}", cuda_only=True)


def _replay_and_errors(
    report: Report, cuda: bool, first: dict[str, torch.Tensor],
    late: dict[str, torch.Tensor], reference: torch.Tensor, figures: dict[str, Any],
) -> None:
    errors = {n: rule.deviation(out, reference).error for n, out in first.items()}
    figures["output_error"] = errors
    report.say("   normwise error vs fp64: " + ", ".join(f"{n} {e:.2e}" for n, e in errors.items()))
    for name in first:
        diff = (float((late[name].double() - first[name].double()).abs().max())
                if first[name].numel() else 0.0)
        figures.setdefault("replay_max_diff", {})[name] = diff
        if cuda and not records_cudagraphs(name):
            continue
        report.check(f"compare.{name}.replay_identical",
                     f"{name}: a later call's output is bit-identical to the first",
                     diff == 0.0, f"max |late − first| = {diff:.3g}")


def _l2_probe(
    report: Report, plan: Plan, device: torch.device, timer: CallTimer, flush: CacheFlush,
    figures: dict[str, Any],
) -> None:
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    if l2 <= 0:
        report.skip("compare.l2_probe", "cold L2 slows an L2-resident read", "L2 size unknown",
                    cuda_only=True)
        return
    data = torch.randn(max(1, l2 // 4 // 4), device=device)

    def read() -> Any:
        return data.sum()

    warm_up(read, timer, 0.05)
    warm = app_loop(timer, read, plan.probe_calls)
    cold = app_loop(timer, read, plan.probe_calls, flush)
    assert warm.device_median is not None and cold.device_median is not None
    r = cold.device_median / warm.device_median
    figures["l2_probe"] = {"bytes": data.numel() * 4, "warm_ms": warm.device_median,
                           "cold_ms": cold.device_median, "ratio": r}
    report.check("compare.l2_probe", "cold L2 slows an L2-resident read (the flush evicts)",
                 r >= L2_PROBE_MIN_RATIO,
                 f"sum of {format_bytes(data.numel() * 4)}: warm {ms(warm.device_median)}, "
                 f"cold {ms(cold.device_median)}, ratio {r:.2f} (needs ≥ {L2_PROBE_MIN_RATIO})",
                 cuda_only=True)
