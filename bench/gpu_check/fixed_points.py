"""Stage fixed_points: one check per figure a reading found wrong, each able to fail on the old app.

Each part runs the app's own code in this process, on the device (a small run of
:class:`~compile_studio.engine.runner.BenchmarkRunner`, the shape sweep's timed
pairs, the app's NVML lookup), records what happened in order, and a judge —
a function of that record alone — decides. Where the effect cannot be forced on
a machine (cuBLAS start-up is long paid in this process), a stand-in marks the
moment it would happen. tests/test_gpu_check.py feeds each judge the old
behaviour and sees it fail.

- ``fixed.cold_l2_order``: cold L2 flushes before the wall-timed *and* the device-timed call;
- ``fixed.uncovered_reported``: a model with ``.item()`` inside has its device samples
  counted as holding launch gaps, and the run says so (CUDA);
- ``fixed.lowp_training``: a bf16 training check is judged, or the run says why not;
- ``fixed.startup_outside_compile``: one-off start-up is paid before an in-run compile
  listed before eager, not inside it;
- ``fixed.pinning_around_compiles``: the timing thread has every core while a variant
  compiles and its one core while calls are timed (Linux, two cores or more);
- ``fixed.sweep_order``: the shape sweep alternates which side of a pair goes first and
  flushes before each timed call in cold-L2 mode;
- ``fixed.triton_recorded`` and ``fixed.app_nvml``: the environment records Triton against
  torch's requirement, and the app finds the GPU's NVML handle itself (CUDA).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig

from .app_checks import judge_drift_judged_or_said
from .report import CUDA_ONLY, Report

#: A model that reads a Python float with ``.item()`` each call: the host waits for the stream.
SYNC_MODEL = '''
import torch
from torch import nn


class Synced(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(256, 256)
        self.out = nn.Linear(256, 16)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        scale = h.abs().max().item()
        return self.out(h / (scale + 1.0))


def make_model(batch_size: int = 64):
    return Synced(), torch.randn(batch_size, 256)
'''


@contextlib.contextmanager
def patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    """``owner.name`` is ``value`` inside the block."""
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


def _config(device: str, **changes: Any) -> BenchmarkConfig:
    base = {"layers": "64,64,8", "batch_size": 8, "device": device, "iterations": 6, "warmup": 2,
            "warmup_min_ms": 0, "rounds": 1, "compile_timing": "in_run", "diagnostics": False,
            "variants": ["eager"]}
    return BenchmarkConfig.from_dict({**base, **changes})


def _run(config: BenchmarkConfig) -> list[protocol.Event]:
    from compile_studio.engine.runner import BenchmarkRunner
    from compile_studio.engine.sink import ListSink

    sink = ListSink()
    status = BenchmarkRunner(config, sink).run()
    if status != protocol.RunStatus.COMPLETE:
        raise RuntimeError(f"the in-process run ended {status}")
    return sink.events


def _done(events: list[protocol.Event]) -> dict[str, protocol.VariantDoneEvent]:
    return {e.variant: e for e in events if isinstance(e, protocol.VariantDoneEvent)}


def _warnings(events: list[protocol.Event]) -> list[str]:
    return [e.message for e in events if isinstance(e, protocol.WarningEvent)]


# -- cold L2 ----------------------------------------------------------------------------------


def record_cold_l2(device: str) -> str:
    """The order of flushes (f) and timed calls — wall (w) and device (d) on CUDA, plain (t)
    elsewhere — in a cold-L2 run of eager (the harness floor left out)."""
    from compile_studio.engine.cache_flush import CacheFlush
    from compile_studio.engine.timing import CallTimer

    log: list[str] = []
    quiet: list[bool] = []
    evict, wall_call, device_call = CacheFlush.evict, CallTimer._wall_call, CallTimer._device_call
    time_call, floor = CallTimer.time, CallTimer.floor

    def logged(mark: str, fn: Any) -> Any:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not quiet:
                log.append(mark)
            return fn(self, *args, **kwargs)
        return call

    def timed(self: Any, fn: Any) -> Any:
        if not self.use_events and not quiet:
            log.append("t")
        return time_call(self, fn)

    def floor_quiet(self: Any, *args: Any, **kwargs: Any) -> Any:
        quiet.append(True)
        try:
            return floor(self, *args, **kwargs)
        finally:
            quiet.pop()

    with patched(CacheFlush, "evict", logged("f", evict)), \
            patched(CallTimer, "_wall_call", logged("w", wall_call)), \
            patched(CallTimer, "_device_call", logged("d", device_call)), \
            patched(CallTimer, "time", timed), patched(CallTimer, "floor", floor_quiet):
        _run(_config(device, cold_l2=True))
    return "".join(log)


def judge_cold_l2_order(seq: str, cuda: bool) -> tuple[bool, str]:
    """Every timed call right after a flush: on CUDA the device-timed one too (not ``wd``)."""
    calls = "wd" if cuda else "t"
    timed = sum(seq.count(c) for c in calls)
    flushed = sum(seq.count("f" + c) for c in calls)
    ok = timed > 0 and flushed == timed
    return ok, f"{flushed} of {timed} timed calls right after a flush; order {seq[:24]}…"


# -- launch gaps in device time ------------------------------------------------------------------


def record_uncovered(device: str, work: Path) -> dict[str, Any]:
    """A run of a model with ``.item()`` inside: its device-time counts and the run's words."""
    factory = work / "synced_model.py"
    factory.write_text(SYNC_MODEL, encoding="utf-8")
    events = _run(_config(device, model="custom", factory=f"{factory}:make_model", iterations=12))
    done = _done(events)["eager"]
    return {"device_time": (done.checks or {}).get("device_time"),
            "warned": [w for w in _warnings(events) if "launch gaps" in w]}


def judge_uncovered(found: dict[str, Any]) -> tuple[bool, str]:
    """Every device sample of a host-synchronising model counted uncovered, and said."""
    counts = found.get("device_time") or {}
    samples, uncovered = counts.get("samples"), counts.get("uncovered")
    ok = bool(samples) and uncovered == samples and bool(found.get("warned"))
    return ok, (f"device samples {samples}, uncovered {uncovered}; warning: "
                f"{(found.get('warned') or ['none'])[0][:160]}")


# -- one-off start-up outside an in-run compile ------------------------------------------------------


def record_startup(device: str, compiled: str) -> list[str]:
    """The moment a stand-in one-off start-up (the first Linear call after a variant is built)
    happens, against the start of the timed first call of ``compiled`` listed before eager."""
    from compile_studio.engine.diagnostics import WhyCollector
    from compile_studio.engine.memory import PeakMeter

    log: list[str] = []
    armed: list[bool] = []

    @torch.compiler.disable
    def start_up() -> None:
        if armed and "start-up" not in log:
            log.append("start-up")

    linear_forward = torch.nn.Linear.forward
    mark_built, starts = PeakMeter.mark_built, WhyCollector.first_call_starts

    def forward(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
        start_up()
        return linear_forward(self, x)

    def built(self: Any, name: str) -> None:
        armed.append(True)
        mark_built(self, name)

    def first_call(self: Any, name: str) -> None:
        log.append(f"timed {name}")
        starts(self, name)

    torch._dynamo.reset()
    with patched(torch.nn.Linear, "forward", forward), patched(PeakMeter, "mark_built", built), \
            patched(WhyCollector, "first_call_starts", first_call):
        _run(_config(device, variants=[compiled, "eager"], iterations=3))
    torch._dynamo.reset()
    return log


def judge_startup(log: list[str], compiled: str) -> tuple[bool, str]:
    ok = log[:2] == ["start-up", f"timed {compiled}"]
    return ok, "order: " + " → ".join(log[:3])


# -- pinning around compiles -------------------------------------------------------------------------


def record_pinning(device: str, compiled: str) -> dict[str, Any] | None:
    """The timing thread's cores while ``compiled`` compiles and while calls are timed; None
    where nothing can be pinned (one core, not Linux). Every thread's cores are put back."""
    from compile_studio.core import affinity
    from compile_studio.engine.diagnostics import WhyCollector
    from compile_studio.engine.timing import CallTimer

    if not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    timing_cpu = cpus[-1]
    seen: dict[str, list[list[int]]] = {"compile": [], "timed": []}
    starts, time_call = WhyCollector.first_call_starts, CallTimer.time

    def first_call(self: Any, name: str) -> None:
        if name == compiled:
            seen["compile"].append(sorted(os.sched_getaffinity(0)))
        starts(self, name)

    def timed(self: Any, fn: Any) -> Any:
        now = sorted(os.sched_getaffinity(0))
        if now not in seen["timed"]:
            seen["timed"].append(now)
        return time_call(self, fn)

    old_env = os.environ.get(affinity.TIMING_CPU_ENV)
    os.environ[affinity.TIMING_CPU_ENV] = str(timing_cpu)
    torch._dynamo.reset()
    try:
        with patched(WhyCollector, "first_call_starts", first_call), patched(CallTimer, "time", timed):
            _run(_config(device, variants=["eager", compiled], iterations=3))
    finally:
        if old_env is None:
            os.environ.pop(affinity.TIMING_CPU_ENV, None)
        else:
            os.environ[affinity.TIMING_CPU_ENV] = old_env
        affinity.pin_process(set(cpus))  # every thread of this process back on its cores
        torch._dynamo.reset()
    return {"cpus": cpus, "timing_cpu": timing_cpu, **seen}


def judge_pinning(found: dict[str, Any]) -> tuple[bool, str]:
    """Compiles on every core (what they start inherits them); timed calls on the timing core."""
    cpus, core = found["cpus"], found["timing_cpu"]
    ok = (bool(found["compile"]) and all(a == cpus for a in found["compile"])
          and bool(found["timed"]) and all(a == [core] for a in found["timed"]))
    return ok, (f"cores {cpus}: while compiling {found['compile']}, while timing "
                f"{found['timed']} (timing core {core})")


# -- the shape sweep's pairs ------------------------------------------------------------------------


def record_sweep_order(device: str) -> tuple[str, int]:
    """The order of eager (E), the variant (V) and flushes (f) in a cold-L2 shape-sweep point's
    timed pairs (one warm-up pair first), through the sweep's own timing; and the flushes
    made inside timed samples (on CUDA: before each device-timed call).

    A CUDA sample calls its step twice (wall, then device): each sample is one letter.
    """
    from compile_studio.engine.cache_flush import CacheFlush
    from compile_studio.engine.shape_sweep import ShapeSweepRunner

    log: list[str] = []
    inside: list[int] = []
    between = [0]
    evict = CacheFlush.evict

    def flush(self: Any) -> None:
        if inside:
            between[0] += 1
        else:
            log.append("f")
        evict(self)

    def step(mark: str) -> Any:
        def call(x: Any) -> None:
            if not inside:
                log.append(mark)  # a warm-up call
            elif inside[-1] == 0:
                log.append(mark)
                inside[-1] += 1
        return call

    config = _config(device, cold_l2=True, warmup=1)
    request = protocol.ShapeSweepRequest(config=config.to_dict(), batches=[8], repeats=4)
    with patched(CacheFlush, "evict", flush):
        runner = ShapeSweepRunner(config, request, sink=None)
        time_call = runner.timer.time

        def time_once(fn: Any) -> Any:
            inside.append(0)
            try:
                return time_call(fn)
            finally:
                inside.pop()

        runner.timer.time = time_once  # type: ignore[method-assign]
        log.clear()
        runner._timed(step("E"), step("V"), (None,))
    return "".join(log), between[0]


def judge_sweep_order(seq: str, between: int = 0, cuda: bool = False) -> tuple[bool, str]:
    """After the warm-up pair: each side first in half the pairs, a flush before every timed
    sample, and on CUDA a flush before each device-timed call too."""
    calls = seq.replace("f", "")
    timed = calls[2:]
    pairs = [timed[i:i + 2] for i in range(0, len(timed), 2)]
    alternates = bool(pairs) and pairs.count("EV") == pairs.count("VE") and \
        all(p in ("EV", "VE") for p in pairs)
    # the warm-up pair is not timed; every timed call comes right after a flush
    seen, cut = 0, len(seq)
    for i, c in enumerate(seq):
        if c != "f":
            seen += 1
            if seen == 2:
                cut = i + 1
                break
    rest = seq[cut:]
    flushed = bool(timed) and rest == "".join("f" + c for c in timed)
    cold_device = not cuda or between == len(timed)
    return alternates and flushed and cold_device, (
        f"pairs {' '.join(pairs)}; order {seq}"
        + (f"; {between} flushes before {len(timed)} device-timed calls" if cuda else "")
    )


# -- the stage ---------------------------------------------------------------------------------------


def stage_fixed_points(report: Report, device: torch.device, dev: str, work: Path,
                       figures: dict[str, Any]) -> None:
    """Every part, each guarded: one that breaks is a failed check, the others go on."""
    cuda = device.type == "cuda"
    compiled = "aot_eager"

    name = "cold L2: a flush right before each timed call (on CUDA the device-timed one too)"
    with report.guard("fixed.cold_l2_order", name):
        seq = record_cold_l2(dev)
        figures["cold_l2_order"] = seq
        report.check("fixed.cold_l2_order", name, *judge_cold_l2_order(seq, cuda))

    name = "a model with .item() inside: every device sample counted as holding launch gaps, and said"
    if cuda:
        with report.guard("fixed.uncovered_reported", name):
            found = record_uncovered(dev, work)
            figures["uncovered"] = found
            report.check("fixed.uncovered_reported", name, *judge_uncovered(found), cuda_only=True)
    else:
        report.skip("fixed.uncovered_reported", name, CUDA_ONLY, cuda_only=True)

    name = "bf16 training: the parameters judged by a bound, or the run says why not"
    with report.guard("fixed.lowp_training", name):
        events = _run(_config(dev, workload="training", dtype="bf16",
                              variants=["eager", "eager-aa"], iterations=4))
        done = {n: SimpleNamespace(checks=e.checks or {}) for n, e in _done(events).items()}
        figures["lowp_training"] = {n: v.checks.get("params_drift_not_judged") for n, v in done.items()}
        judge_drift_judged_or_said(report, "fixed.lowp_training", done, ["eager-aa"])

    name = f"one-off start-up paid before an in-run compile listed first ({compiled}), not in it"
    with report.guard("fixed.startup_outside_compile", name):
        log = record_startup(dev, compiled)
        figures["startup"] = log
        report.check("fixed.startup_outside_compile", name, *judge_startup(log, compiled))

    name = "the timing thread on every core while compiling, on its own core while timing"
    with report.guard("fixed.pinning_around_compiles", name):
        found = record_pinning(dev, compiled)
        figures["pinning"] = found
        if found is None:
            report.skip("fixed.pinning_around_compiles", name, "one core, or no sched_setaffinity")
        else:
            report.check("fixed.pinning_around_compiles", name, *judge_pinning(found))

    name = "shape sweep: each side first in half the timed pairs, cold L2 flushed before each call"
    with report.guard("fixed.sweep_order", name):
        seq, between = record_sweep_order(dev)
        figures["sweep_order"] = {"order": seq, "flushes_before_device_calls": between}
        report.check("fixed.sweep_order", name, *judge_sweep_order(seq, between, cuda))

    name = "the environment records Triton and torch's requirement, and says when they differ"
    with report.guard("fixed.triton_recorded", name):
        from compile_studio.engine import environment as env

        probe = env.probe()
        said = env.triton_warning("cuda", ["eager", "default"])
        differs = env.triton_mismatch(env.triton_installed(), env.triton_required(),
                                      torch.__version__) is not None
        ok = "triton" in probe and "triton_required" in probe and (said is not None) == differs
        figures["triton"] = {"installed": probe.get("triton"), "required": probe.get("triton_required"),
                             "warning": said}
        report.check("fixed.triton_recorded", name, ok,
                     f"installed {probe.get('triton')}, torch requires {probe.get('triton_required')}"
                     + (f"; says: {said[:160]}" if said else ""))

    name = "the app finds the GPU's NVML handle itself (nvidia-ml-py or ctypes)"
    if cuda:
        with report.guard("fixed.app_nvml", name):
            from compile_studio.engine.gpu_monitor import nvml_handle

            found_nvml = nvml_handle(device)
            binding = type(found_nvml[0]).__name__ if found_nvml else None
            report.check("fixed.app_nvml", name, found_nvml is not None,
                         f"binding {binding}, UUID {found_nvml[2] if found_nvml else None}",
                         cuda_only=True)
    else:
        report.skip("fixed.app_nvml", name, CUDA_ONLY, cuda_only=True)
