"""Stage 2, gemm: a bf16 Linear timed by the app's loop, against the device's dense bf16 peak."""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from compile_studio.core.config import BenchmarkConfig
from compile_studio.engine.environment import compile_modes
from compile_studio.engine.run_state import apply_precision
from compile_studio.engine.runner import make_input
from compile_studio.engine.timing import CallTimer
from compile_studio.engine.variant import build_variant

from .figures import ms
from .loops import app_loop, do_bench_ms, warm_up
from .plan import Plan
from .report import Report

#: Fraction of the dense bf16 peak the GEMM must reach.
GEMM_MIN_FRACTION = 0.60
GEMM_LAYERS = "4096,4096"
GEMM_BATCH = 8192
CHECK = ("gemm.bf16_peak", f"bf16 GEMM ≥ {GEMM_MIN_FRACTION:.0%} of dense peak")

#: Dense bf16 tensor-core peak (TFLOP/s) by a part of the device name, first match wins,
#: with its source. NVIDIA quotes bf16 "with sparsity": the dense figure is half of it.
PEAK_BF16_TFLOPS: list[tuple[str, float, str]] = [
    ("H100 PCIe", 756.0, "NVIDIA H100 datasheet, H100 PCIe: 1,513 TFLOPS bf16 with sparsity"),
    ("H100 NVL", 835.0, "NVIDIA H100 datasheet, H100 NVL: 1,671 TFLOPS bf16 with sparsity"),
    ("H200 NVL", 835.0, "NVIDIA H200 datasheet, H200 NVL: 1,671 TFLOPS bf16 with sparsity"),
    ("H200", 989.0, "NVIDIA H200 datasheet, H200 SXM: 1,979 TFLOPS bf16 with sparsity"),
    ("H100", 989.0, "NVIDIA H100 datasheet, H100 SXM: 1,979 TFLOPS bf16 with sparsity"),
    ("A100", 312.0, "NVIDIA A100 datasheet: 312 TFLOPS bf16 dense"),
]


def peak_bf16(name: str) -> tuple[float, str] | None:
    """(dense bf16 TFLOP/s, source) for a device name; None for a device not in the table."""
    for key, tflops, source in PEAK_BF16_TFLOPS:
        if key.lower() in name.lower():
            return tflops, source
    return None


def stage_gemm(report: Report, plan: Plan, device: torch.device, figures: dict[str, Any]) -> None:
    """Time the GEMM by device time and judge it against the peak table."""
    name = torch.cuda.get_device_properties(device).name
    cfg = BenchmarkConfig(layers=GEMM_LAYERS, batch_size=GEMM_BATCH, dtype="bf16",
                          device=str(device), variants=["eager"])
    apply_precision(cfg.dtype)
    v = build_variant(cfg, "eager", device, torch.bfloat16, compile_modes())
    x = make_input(cfg).to(device, torch.bfloat16)
    timer = CallTimer(device, use_events=True)
    with torch.inference_mode():

        def fn() -> Any:
            return v.step((x,))

        warm_up(fn, timer, 0.5)
        loop = app_loop(timer, fn, plan.gemm_calls)
        bench = None
        with contextlib.suppress(Exception):
            bench = do_bench_ms(fn, plan.bench_rep_ms)
    flops = cfg.flops_per_call()
    assert loop.device_median is not None
    tflops = flops / (loop.device_median / 1e3) / 1e12
    figures.update(device=name, flops=flops, device_median_ms=loop.device_median,
                   host_median_ms=loop.host_median, do_bench_ms=bench, tflops=tflops)
    peak = peak_bf16(name)
    text = (f"{tflops:.0f} TFLOP/s (device median {ms(loop.device_median)}, do_bench "
            f"{ms(bench)}) for {GEMM_BATCH}×{GEMM_LAYERS.replace(',', '×')} bf16")
    if peak is None:
        report.skip(*CHECK, f"{name} is not in the peak table", text, cuda_only=True)
        return
    figures.update(peak_tflops=peak[0], peak_source=peak[1], fraction=tflops / peak[0])
    report.check(
        *CHECK, tflops >= GEMM_MIN_FRACTION * peak[0],
        f"{text} = {tflops / peak[0]:.0%} of {peak[0]:.0f} ({peak[1]})", cuda_only=True,
    )
