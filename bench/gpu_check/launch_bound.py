"""Stage 4, launch_bound: the app's device time where launching costs as much as computing.

Small models whose calls launch in about the time their kernels run: the
app-run model (bf16) and the seed MLP, each as eager, default and
reduce-overhead. Per variant four figures of one call's GPU time:

* the app's device median (``CallTimer.time``: a busy-stream event pair per call);
* ``triton.testing.do_bench``'s median (L2 cleared before each call: reported only);
* the profiler's kernel time per call (the sum of the GPU activities' durations);
* a busy-stream event pair of this stage's own around N back-to-back calls.

The kernels cannot take longer than the pair that brackets them, and a
pair that brackets only them (not the CPU launching them) comes close to
their sum. ``do_bench_cudagraph`` is not used: reduce-overhead replays a CUDA
graph already, and capturing it again would be nested capture.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable
from typing import Any

import torch

from compile_studio.core.config import BenchmarkConfig
from compile_studio.engine.environment import compile_modes
from compile_studio.engine.mlp import TORCH_DTYPES
from compile_studio.engine.run_state import apply_precision
from compile_studio.engine.runner import make_input
from compile_studio.engine.timing import CallTimer
from compile_studio.engine.variant import build_variant

from .figures import agrees, at_most, us
from .loops import (
    app_loop,
    busy_pair_ms,
    do_bench_ms,
    profiler_kernel_ms,
    sleep_cycles_per_ms,
    warm_profiler,
    warm_up,
)
from .plan import LaunchModel, Plan
from .report import CUDA_ONLY, Report

#: The kernel time may exceed the device median by this much (profiler timestamps, rounding).
KERNEL_SLACK_REL, KERNEL_SLACK_MS = 0.02, 0.001
#: The device median must lie within ±10 % or ±2 µs (whichever is larger) of the kernel time.
AGREE_REL, AGREE_MS = 0.10, 0.002


def check_names(model: LaunchModel, variant: str) -> list[tuple[str, str]]:
    """(id, name) of the two checks of one model's variant."""
    base = f"launch.{model.label}.{variant}"
    what = f"{model.label} {variant}"
    return [
        (f"{base}.kernels_le_device",
         f"{what}: profiler kernel time per call ≤ the app's device median (+2 % or 1 µs)"),
        (f"{base}.device_matches_kernels",
         f"{what}: the app's device median within ±10 % or ±2 µs of the kernel time per call"),
    ]


def all_checks(plan: Plan) -> list[tuple[str, str]]:
    """Every check of the stage, in order (skipped as a whole on the CPU)."""
    return [c for m in plan.launch_models for v in plan.launch_variants for c in check_names(m, v)]


def stage_launch_bound(
    report: Report, plan: Plan, device: torch.device, figures: dict[str, Any]
) -> None:
    """Measure each model's variants four ways and judge the app's device median."""
    warm_profiler()
    cycles_per_ms = sleep_cycles_per_ms()
    figures["sleep_cycles_per_ms"] = cycles_per_ms
    figures["models"] = {}
    for model in plan.launch_models:
        with report.guard(f"launch.{model.label}.ran", f"launch-bound {model.label} measured"):
            figures["models"][model.label] = out = {"layers": model.layers, "batch": model.batch,
                                                    "dtype": model.dtype, "variants": {}}
            _one_model(report, plan, device, model, cycles_per_ms, out["variants"])
        _release(device)


def _one_model(
    report: Report, plan: Plan, device: torch.device, model: LaunchModel, cycles_per_ms: float,
    out: dict[str, dict[str, Any]],
) -> None:
    cfg = BenchmarkConfig(layers=model.layers, batch_size=model.batch, dtype=model.dtype,
                          device=str(device), variants=list(plan.launch_variants))
    apply_precision(cfg.dtype)
    dtype = TORCH_DTYPES[cfg.dtype]
    x = make_input(cfg).to(device, dtype)
    timer = CallTimer(device, use_events=True)
    modes = compile_modes()
    report.say(f"   {model.label}: MLP {model.layers}, batch {model.batch}, {model.dtype}")
    steps: dict[str, Callable[[], Any]] = {}
    with torch.inference_mode():
        for name in plan.launch_variants:
            v = build_variant(cfg, name, device, dtype, modes)

            def fn(step: Callable[[tuple[Any, ...]], Any] = v.step,
                   xx: torch.Tensor = x) -> Any:
                return step((xx,))

            fn()
            warm_up(fn, timer, plan.warmup_s)
            steps[name] = fn
        for name, fn in steps.items():
            uncovered = timer.uncovered
            loop = app_loop(timer, fn, plan.launch_calls)
            pair = busy_pair_ms(fn, plan.launch_pair_calls, plan.launch_pair_repeats, cycles_per_ms)
            bench: float | None = None
            bench_error = ""
            try:
                bench = do_bench_ms(fn, plan.bench_rep_ms)
            except Exception as exc:  # noqa: BLE001 - reported as the method's figure
                bench_error = f"{type(exc).__name__}: {str(exc)[:200]}"
                with contextlib.suppress(Exception):
                    torch.cuda.synchronize()
            out[name] = {
                "app_host_median_ms": loop.host_median,
                "app_device_median_ms": loop.device_median,
                "app_uncovered": timer.uncovered - uncovered,
                "do_bench_ms": bench,
                "do_bench_error": bench_error or None,
                "busy_pair_ms": pair.per_call_ms,
                "busy_pair_repeats_ms": pair.repeats,
                "busy_pair_covered": f"{pair.covered}/{len(pair.repeats)}",
                "busy_pair_sleep_ms": pair.sleep_ms,
                "launch_ms_per_call": pair.launch_ms / max(1, plan.launch_pair_calls),
            }
        for name, fn in steps.items():
            kernels = profiler_kernel_ms(fn, plan.launch_profile_calls)
            out[name].update(kernel_ms=kernels.per_call_ms, kernels_per_call=kernels.kernels_per_call,
                             kernel_names=kernels.names)
    for name in steps:
        judge(report, model, name, out[name])
    steps.clear()


def judge(report: Report, model: LaunchModel, name: str, f: dict[str, Any]) -> None:
    (le_id, le_name), (eq_id, eq_name) = check_names(model, name)
    device, kernels = f["app_device_median_ms"], f["kernel_ms"]
    figure = (f"app device median {us(device)} (host {us(f['app_host_median_ms'])}, "
              f"{f['app_uncovered']} uncovered), kernels {us(kernels)} "
              f"({f['kernels_per_call']:.1f} per call), busy pair {us(f['busy_pair_ms'])} "
              f"(covered {f['busy_pair_covered']}), do_bench {us(f['do_bench_ms'])}, "
              f"launch {us(f['launch_ms_per_call'])} per call")
    report.say(f"   {model.label} {name}: {figure}")
    if device is None:
        for id_, text in ((le_id, le_name), (eq_id, eq_name)):
            report.check(id_, text, False, "the app's timer gave no device time: " + figure,
                         cuda_only=True)
        return
    if not kernels or kernels <= 0:
        reason = "the profiler recorded no GPU activity for this variant"
        for id_, text in ((le_id, le_name), (eq_id, eq_name)):
            report.skip(id_, text, reason, figure, cuda_only=True)
        return
    f["gap_ms"] = device - kernels
    report.check(le_id, le_name, at_most(kernels, device, KERNEL_SLACK_REL, KERNEL_SLACK_MS),
                 figure, cuda_only=True)
    report.check(eq_id, eq_name, agrees(device, kernels, AGREE_REL, AGREE_MS),
                 f"{figure}; device − kernels {us(device - kernels)} "
                 f"({(device / kernels - 1) * 100:+.1f} %)", cuda_only=True)


def skip_on_cpu(report: Report, plan: Plan) -> None:
    """The stage's checks, skipped on the CPU."""
    report.skip_stage("launch_bound", CUDA_ONLY, all_checks(plan), cuda_only=True)


def _release(device: torch.device) -> None:
    from torch._dynamo import reset as dynamo_reset

    gc.collect()
    dynamo_reset()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
