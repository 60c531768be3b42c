"""Stage 5, cudagraph_skip: a CUDA-graph skip forced on purpose must reach the app's skip log.

A function that mutates its input in place, compiled with
``mode="reduce-overhead"``: Inductor cannot replay it as a CUDA graph and
skips, giving its reason. The app's :class:`CudagraphSkipLog` must count
the skip and keep a reason that says something.
"""

from __future__ import annotations

import gc
from typing import Any

import torch

from .report import CUDA_ONLY, Report

CHECK = ("cudagraph_skip.recorded",
         "a forced CUDA-graph skip (an input mutated in place) is in the app's skip log, "
         "with its reason")
CALLS = 3
#: What the app's log says for a skip Inductor counted without a reason heard.
NO_REASON = "no reason logged"


def stage_cudagraph_skip(report: Report, device: torch.device, figures: dict[str, Any]) -> None:
    """Compile an in-place mutation with reduce-overhead; judge what the skip log kept."""
    try:
        from compile_studio.engine.cudagraphs import CudagraphSkipLog
    except ImportError as exc:
        report.skip(*CHECK, f"the app has no CudagraphSkipLog ({exc})", cuda_only=True)
        return

    def bump_in_place(x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x * 2

    log = CudagraphSkipLog()
    try:
        before = log.count()
        compiled = torch.compile(bump_in_place, mode="reduce-overhead")
        x = torch.zeros(256, device=device)
        with torch.no_grad():
            for _ in range(CALLS):
                torch.compiler.cudagraph_mark_step_begin()
                out = compiled(x)
        torch.cuda.synchronize(device)
        count = log.count() - before
        reasons = log.since(before)
    finally:
        log.close()
    value = float(x[0])
    figures.update(skips=count, reasons=reasons, input_after=value, output=float(out[0]))
    heard = [r for r in reasons if r.strip() and NO_REASON not in r]
    report.check(
        *CHECK, count >= 1 and bool(heard),
        f"{count} skip(s); reasons: " + ("; ".join(r[:160] for r in reasons) or "none")
        + f"; the input after {CALLS} calls = {value:g} (expected {CALLS})",
        cuda_only=True,
    )
    from torch._dynamo import reset as dynamo_reset

    del compiled, x, out
    gc.collect()
    dynamo_reset()


def skip_on_cpu(report: Report) -> None:
    report.skip_stage("cudagraph_skip", CUDA_ONLY, [CHECK], cuda_only=True)
