"""A variant's first call (build, compile, CUDA-graph recording), timed in the run or a fresh process."""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass

import torch

from ..core import protocol
from ..core.config import BenchmarkConfig
from .compile_logs import BreakCount
from .randomness import use_eager_random_numbers
from .run_errors import Stopped
from .run_state import RunState, apply_dynamo_config, apply_precision, resolve_device
from .timing import CallTimer
from .variant import Variant, build_variant, checked_output, variant_of
from .workloads import build_workload, call_model, conversion_dtype, output_leaves


def dynamo_counts() -> dict[str, int]:
    """Dynamo's global counters: frames compiled (and compiled whole: ``ok``), unique graphs, breaks.

    ``breaks`` is the ``graph_break`` counter alone: torch 2.13 records a data-dependent
    branch or an unsupported call only under ``unimplemented``, which older torch also
    fills for what it then handled; :class:`~.compile_logs.BreakCount` hears every break.
    """
    from torch._dynamo.utils import counters

    return {
        "frames": int(counters["frames"].get("total", 0)),
        "frames_ok": int(counters["frames"].get("ok", 0)),
        "graphs": int(counters["stats"].get("unique_graphs", 0)),
        "breaks": int(sum(counters["graph_break"].values())),
    }


def break_reasons() -> dict[str, int]:
    """Graph breaks so far, by reason."""
    from torch._dynamo.utils import counters

    return dict(counters["graph_break"])


def compile_threads() -> int | None:
    """Inductor's ``compile_threads`` (sized from the cores this process may use at its import)."""
    try:
        import torch._inductor.config as inductor_config

        n = inductor_config.compile_threads
    except Exception:  # noqa: BLE001 - a torch without Inductor
        return None
    return n if isinstance(n, int) else None


def _short_reason(reason: str) -> str:
    lines = [ln.strip() for ln in reason.splitlines() if ln.strip()]
    head = lines[0] if lines else reason
    expl = next((ln for ln in lines if ln.startswith("Explanation:")), "")
    return f"{head} — {expl[len('Explanation:'):].strip()}" if expl else head


def first_call_ms(config: BenchmarkConfig, name: str, fallback_random: bool = False) -> float:
    """Milliseconds of variant ``name``'s first call (its compile), CUDA-graph recording included.

    ``fallback_random``: Inductor draws random numbers as eager does (set for a random model,
    as the run itself compiles it).
    """
    from .environment import compile_modes

    device = torch.device(resolve_device(config.device))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    apply_precision(config.dtype)
    apply_dynamo_config(config)
    if fallback_random:
        use_eager_random_numbers()
    workload = build_workload(config, name).to(device, conversion_dtype(config.dtype))
    x = workload.inputs
    v = variant_of(config, name, workload, device, compile_modes())
    timer = CallTimer(device)
    training = config.workload == "training"
    grad = contextlib.nullcontext() if training else torch.inference_mode()
    # one untimed eager call first, on the same inputs in the same grad mode (for training
    # with its backward): the device's and libraries' one-off start-up (cuBLAS handles,
    # lazily loaded CUDA modules, the autograd engine, CPU library init) is not compile time
    with grad:
        out = call_model(workload.model, x)
        if training and workload.loss is not None:
            workload.loss(out).backward()
    del out
    workload.model.zero_grad(set_to_none=True)
    timer.sync()
    with grad:
        timer.sync()
        t0 = time.perf_counter_ns()
        v.step(x)
        if v.uses_cudagraphs:
            v.step(x)
        timer.sync()
    return (time.perf_counter_ns() - t0) / 1e6


def start_libraries(run: RunState, v: Variant) -> None:
    """One untimed eager call of ``v``'s model (for training with a backward), state put back.

    The device's and libraries' one-off start-up (cuBLAS/cuDNN handles, lazily loaded
    CUDA modules, the autograd engine's device threads, CPU library init) happens on
    the first call of any model: made before a compile timed in the run, it is not
    counted as compile time, whichever variant is listed first — as the isolated
    compiles do (see :func:`first_call_ms`).
    """
    out = call_model(v.model, run.x)
    if run.training:
        leaves = [
            t for _, t in output_leaves(out)
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad
        ]
        if leaves:
            torch.autograd.backward([t.sum() for t in leaves])
        v.model.zero_grad(set_to_none=True)
        if v.initial_params is not None:
            v.restore()  # buffers (batch-norm statistics) as built
    del out
    run.timer.sync()


@dataclass
class _BeforeFirstCall:
    """Dynamo's counters and logs as a first call starts: what differs after it is that call's."""

    counts: dict[str, int]
    reasons: dict[str, int]
    skips: int
    #: the graph breaks and skipped frames that call's compile logs
    heard: BreakCount

    @classmethod
    def now(cls, run: RunState) -> _BeforeFirstCall:
        return cls(dynamo_counts(), break_reasons(), run.skip_log.count(), BreakCount())


def prepare_variant(run: RunState, name: str) -> Variant | None:
    """Build and compile (first call) one variant; None if it failed."""
    v = _build(run, name)
    if v is None:
        return None
    compile_s: float | None = None
    if v.compiled:
        run.send_phase(name, protocol.Phase.COMPILE, 1)
        if run.isolated_compile is not None:
            try:
                compile_s = run.isolated_compile(name)
            except Stopped:
                raise
            except BaseException as exc:  # noqa: BLE001
                run.check_stop()
                run.send_error(name, exc, "compiling in a fresh process")
                return None
    if v.compiled and not run.libraries_started:
        try:
            with run.no_grad(), contextlib.redirect_stdout(sys.stderr):
                start_libraries(run, v)
        except Stopped:
            raise
        except BaseException:  # noqa: BLE001 - the timed first call reports the model's failure
            pass
        run.libraries_started = True
    run.why.first_call_starts(name)
    before = _BeforeFirstCall.now(run)
    first_ms = _time_first_call(run, v, before.heard)
    if first_ms is None:
        return None
    run.libraries_started = True
    run.memory.mark_recorded(name)
    after = dynamo_counts()
    run.why.first_call_done(name, first_ms + (v.cudagraph_record_ms or 0.0))
    v.cudagraph_skips = run.skip_log.since(before.skips)
    if v.compiled:
        _report_compile(run, v, before, after, first_ms, compile_s)
    return v


def _build(run: RunState, name: str) -> Variant | None:
    """Variant ``name`` built (for training, its parameters kept); None if that failed."""
    from .environment import compile_modes

    run.check_stop()
    run.send_phase(name, protocol.Phase.BUILD, 0)
    try:
        v = build_variant(run.config, name, run.device, run.dtype, compile_modes())
    except Stopped:
        raise
    except BaseException as exc:  # noqa: BLE001 - reported, others go on
        run.send_error(name, exc, "building the model")
        return None
    # CUDA-graph pools created from here on are this variant's
    run.memory.mark_built(name)
    if run.training:
        v.snapshot()
    return v


def _time_first_call(run: RunState, v: Variant, heard: BreakCount) -> float | None:
    """``v``'s first call timed (ms; its output kept for the checks) and, for CUDA graphs, the
    second call that records the graph; None (the error said) if it failed."""
    try:
        # what the model prints on its first call (a compile) goes to the log
        with heard, run.no_grad(), contextlib.redirect_stdout(sys.stderr):
            if run.random_kind is not None:
                run.reseed()
            t0 = time.perf_counter_ns()
            out = v.step(run.x)
            run.timer.sync()
            first_ms = (time.perf_counter_ns() - t0) / 1e6
            v.first_output = checked_output(out)
            if run.training:
                v.first_grads = v.grads_cpu()
            if v.uses_cudagraphs:
                # the second call records the CUDA graph: a one-off cost like the compile,
                # and what it allocates is what the graph holds (see memory.PeakMeter)
                run.memory.mark_recording(v.name)
                t0 = time.perf_counter_ns()
                v.step(run.x)
                run.timer.sync()
                v.cudagraph_record_ms = (time.perf_counter_ns() - t0) / 1e6
    except Stopped:
        raise
    except BaseException as exc:  # noqa: BLE001
        run.send_error(v.name, exc, "compiling" if v.compiled else "running the first call")
        return None
    return first_ms


def _report_compile(
    run: RunState,
    v: Variant,
    before: _BeforeFirstCall,
    after: dict[str, int],
    first_ms: float,
    compile_s: float | None,
) -> None:
    """The ``compiled`` event of ``v``: its compile time, graphs, breaks and skipped frames
    (warning when compile captured nothing)."""
    name, heard = v.name, before.heard
    reasons = [
        _short_reason(k)
        for k, n in break_reasons().items()
        if n - before.reasons.get(k, 0) > 0
    ]
    reasons += [b["reason"] for b in heard.breaks if b["reason"] not in reasons]
    # three records, whichever saw most: the graph_break counter (an unsupported call, every
    # torch); the graph_breaks log (also a data-dependent branch from about 2.6 on: 2.13
    # counts it only under "unimplemented"); the frames compiled whole beyond the model's
    # own (each break resumes in a frame of its own: torch 2.4/2.5 log and count a
    # data-dependent branch nowhere else)
    counts = before.counts
    resumed = (after["frames_ok"] - counts["frames_ok"]) - 1
    breaks = max(after["breaks"] - counts["breaks"], len(heard.breaks), resumed)
    not_ok = (after["frames"] - after["frames_ok"]) - (counts["frames"] - counts["frames_ok"])
    skipped = max(len(heard.skipped), not_ok)
    skip_reasons = list(dict.fromkeys(b["reason"] for b in heard.skipped))
    if skipped and after["graphs"] == counts["graphs"]:
        run.send_warning(
            name,
            f"{name}: compile captured nothing: Dynamo gave up on the model"
            + (f" ({skip_reasons[0].split(' (hint:')[0]})" if skip_reasons else "")
            + " and its calls ran eager",
        )
    run.sink.event(
        protocol.CompiledEvent(
            variant=name,
            compile_s=compile_s
            if compile_s is not None
            else (first_ms + (v.cudagraph_record_ms or 0.0)) / 1000.0,
            compile_timing="isolated" if compile_s is not None else "in_run",
            first_call_ms=first_ms,
            graphs=after["graphs"] - counts["graphs"],
            graph_breaks=breaks,
            break_reasons=reasons,
            recompiles=0,
            frames_skipped=skipped,
            skip_reasons=skip_reasons,
        )
    )
