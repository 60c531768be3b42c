"""The stages in order, under one deadline; the exit status says how it went."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from compile_studio import __version__ as APP_VERSION
from compile_studio.engine.run_state import resolve_device

from . import cudagraph_skip, launch_bound, tf32_probe
from .app_runs import app_config, open_store, stage_app
from .cudagraph_skip import stage_cudagraph_skip
from .deadline import Deadline
from .environment import clocks_at_end, numpy_version, stage_environment
from .fixed_points import stage_fixed_points
from .gemm import CHECK as GEMM_CHECK
from .gemm import stage_gemm
from .imports import stage_imports
from .launch_bound import stage_launch_bound
from .nvml import Nvml
from .plan import Plan, make_plan
from .report import CUDA_ONLY, NO_NUMPY, Report
from .same_process import stage_same_process
from .tf32_probe import stage_tf32_probe

CACHE_ENV = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="gpu_check",
        description="Self-checking proof of Compile Studio's figures on a CUDA GPU, or on the CPU.",
    )
    ap.add_argument("--out", type=Path, default=None,
                    help="folder for the three files (default: a new temporary folder)")
    ap.add_argument("--deadline", type=float, default=230.0,
                    help="seconds after which the check stops with what it has (exit 2)")
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    ap.add_argument("--tiny", action="store_true", help="tiny sizes (the test's CPU run)")
    return ap.parse_args(argv)


def shared_compile_cache(work: Path) -> dict[str, Any]:
    """One warm Inductor (and Triton) cache for this process and the warm-cache app runs.

    A cache folder named in the environment is kept (it is warm and shared
    already); otherwise both point into ``work``. The in-process stages fill it,
    so a warm app run does not compile cold what they compiled, and max-autotune
    compiles cold once for the two runs that use it.
    """
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return {k: os.environ.get(k) for k in CACHE_ENV} | {"kept": True}
    folder = work / "compile-cache"
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder / "inductor")
    os.environ.setdefault("TRITON_CACHE_DIR", str(folder / "triton"))
    return {k: os.environ.get(k) for k in CACHE_ENV} | {"kept": False}


def device_name(device: torch.device) -> str:
    """The device as a run config names it."""
    if device.type != "cuda":
        return device.type
    return f"cuda:{device.index}" if device.index else "cuda"


def run_stages(report: Report, plan: Plan, device: torch.device, no_numpy: str | None) -> None:
    """Every stage in order, each started only with the time it needs left."""
    cuda = device.type == "cuda"
    needs = plan.stage_needs_s
    nvml: Nvml | None = None
    with report.stage_of("environment") as figures:
        nvml = stage_environment(report, device, figures)
    if not cuda:
        report.skip_stage("gemm", CUDA_ONLY, [GEMM_CHECK], cuda_only=True)
    elif report.may_start("gemm", needs["gemm"]):
        with report.stage_of("gemm") as figures:
            stage_gemm(report, plan, device, figures)
    if report.may_start("same_process", needs["same_process"]):
        with report.stage_of("same_process") as figures:
            stage_same_process(report, plan, device, figures)
    if not cuda:
        launch_bound.skip_on_cpu(report, plan)
        cudagraph_skip.skip_on_cpu(report)
    else:
        if report.may_start("launch_bound", needs["launch_bound"]):
            with report.stage_of("launch_bound") as figures:
                stage_launch_bound(report, plan, device, figures)
        if report.may_start("cudagraph_skip", needs["cudagraph_skip"]):
            with report.stage_of("cudagraph_skip") as figures:
                stage_cudagraph_skip(report, device, figures)

    dev = device_name(device)
    if report.may_start("fixed_points", needs["fixed_points"]):
        with report.stage_of("fixed_points") as figures:
            stage_fixed_points(report, device, dev, Path(tempfile.mkdtemp(prefix="gpu-check-fixed-")),
                               figures)
    runs = [
        ("app_rounds", app_config(plan, dev, rounds=plan.app_rounds, compile_cache="warm")),
        ("app_sequential", app_config(plan, dev, compile_cache="warm")),
        ("app_training", app_config(
            plan, dev, workload="training", dtype=plan.train_dtype,
            variants=list(plan.train_variants), iterations=plan.train_iterations,
            compile_timing=plan.train_compile_timing,
        )),
    ]
    store = None if no_numpy else open_store(report.runs_root or Path(tempfile.mkdtemp()))
    for tag, config in runs:
        if no_numpy:
            report.skip_stage(tag, no_numpy)
        elif report.may_start(tag, needs[tag]):
            with report.stage_of(tag) as figures:
                stage_app(report, store, tag, config, cuda, nvml, figures)
    with report.stage_of("imports") as figures:
        stage_imports(report, figures)

    if not cuda:
        tf32_probe.skip(report, CUDA_ONLY)
    elif no_numpy:
        tf32_probe.skip(report, no_numpy)
    elif report.left() < needs["tf32_probe"]:
        tf32_probe.skip(report, f"deadline: {report.left():.0f} s left, the probe needs about "
                                f"{needs['tf32_probe']:.0f} s")
    else:
        with report.stage_of("tf32_probe") as figures:
            stage_tf32_probe(report, store, plan, dev, figures)
    if nvml is not None:
        with contextlib.suppress(Exception):
            clocks_at_end(report, device, nvml)


def main(argv: list[str] | None = None) -> int:
    """Run the check; 0 passed, 1 a check failed, 2 the deadline hit."""
    with contextlib.suppress(Exception):
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    args = parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="gpu-check-"))
    report = Report(out, {k: str(v) for k, v in vars(args).items()}, args.deadline, APP_VERSION)
    deadline = Deadline(args.deadline, report.expire)
    deadline.start()
    device = torch.device(resolve_device(args.device))
    cuda = device.type == "cuda"
    plan = make_plan(cuda, args.tiny)
    report.data["plan"] = asdict(plan)
    report.say(f"gpu_check: device {device}, {'tiny' if args.tiny else 'full'} sizes, "
               f"deadline {args.deadline:.0f} s, files in {out}")
    work = Path(tempfile.mkdtemp(prefix="gpu-check-runs-"))
    report.runs_root = work / "runs"
    report.data["compile_cache"] = shared_compile_cache(work)
    no_numpy = None if numpy_version() else NO_NUMPY
    if no_numpy:
        report.say(f"   {no_numpy}: the app-run stages are skipped, the others run")
    if cuda and not torch.cuda.is_available():
        with report.stage_of("environment"):
            report.check("env.cuda", "CUDA available", False,
                         f"torch {torch.__version__} sees no CUDA device", cuda_only=True)
        deadline.cancel()
        return report.close("failed")
    if cuda:
        torch.cuda.set_device(device)
    run_stages(report, plan, device, no_numpy)
    deadline.cancel()
    report.pack_runs()
    shutil.rmtree(work, ignore_errors=True)
    return report.close(report.final_status())
