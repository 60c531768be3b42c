"""The steady-state profile: a few calls under torch.profiler and the per-call figures from its events."""

from __future__ import annotations

import bisect
import contextlib
import math
import os
import re
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

#: Steady-state calls profiled per variant (fewer when one call is slow).
PROFILE_CALLS = 5
#: The profiled calls stop being added past this many milliseconds.
PROFILE_BUDGET_MS = 250.0
#: Largest Chrome trace sent to the supervisor; a larger one is left out, saying so.
MAX_TRACE_BYTES = 16 * 1024 * 1024
#: Rows of the top-operators table.
TOP_OPS = 12
#: The marker around each profiled call (its events are the call's).
CALL_MARK = "compile_studio call"

#: Names of GEMM/convolution operators and kernels (library matrix multiplies).
GEMM_RE = re.compile(
    r"(addmm|(^|[^a-z])mm($|[^a-z])|bmm|matmul|linear|baddbmm|conv|gemm|cublas|cutlass|"
    r"xmma|wgmma|sm\d+_|ampere_|hopper_|volta_|turing_|_mkl|onednn|mkldnn)",
    re.IGNORECASE,
)

#: Inductor's own fused kernels: named after the ops they fuse ("…_fused_addmm_gelu"), not GEMMs.
_FUSED_RE = re.compile(r"^(triton_(poi|red|per)_|cpp_fused_)")


def is_gemm(name: str) -> bool:
    """A matrix multiply or convolution (an op or a library kernel), not a fused epilogue."""
    return GEMM_RE.search(name) is not None and _FUSED_RE.match(name) is None


class ProfiledRun(Protocol):
    """What the profile reads from the benchmark runner."""

    device: torch.device
    x: tuple[Any, ...]
    stop: Any
    timer: Any

    def no_grad(self) -> contextlib.AbstractContextManager[Any]: ...


def profile_calls(
    runner: ProfiledRun,
    step: Callable[[tuple[Any, ...]], Any],
    ms_per_call: float | None,
    missing: list[str],
) -> tuple[dict[str, Any] | None, str | None]:
    """A few steady-state calls under torch.profiler: the figures and the Chrome trace."""
    try:
        from torch.profiler import ProfilerActivity, profile, record_function
    except Exception as exc:  # noqa: BLE001
        missing.append(f"profile: torch.profiler is not available ({exc})")
        return None, None
    cuda = runner.device.type == "cuda"
    activities = [ProfilerActivity.CPU]
    if cuda:
        activities.append(ProfilerActivity.CUDA)
    per_call = ms_per_call if ms_per_call and ms_per_call > 0 else None
    calls = PROFILE_CALLS if per_call is None else max(1, min(PROFILE_CALLS, int(PROFILE_BUDGET_MS / per_call)))
    x, sync = runner.x, runner.timer.sync
    with runner.no_grad(), profile(activities=activities, record_shapes=True) as prof:
        for k in range(calls):
            if runner.stop.is_set():
                break
            with record_function(f"{CALL_MARK} {k}"):
                step(x)
                sync()
    events = list(prof.events())
    figures = profile_figures(events, cuda)
    if figures is None:
        missing.append("profile: the profiler saw none of the calls")
        return None, None
    if cuda and not figures.get("kernels"):
        missing.append("profile: no CUDA kernel events (CUPTI unavailable?): device figures left out")
    trace = None
    fd, path = tempfile.mkstemp(prefix="compile-studio-trace-", suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        size = os.path.getsize(path)
        if size > MAX_TRACE_BYTES:
            missing.append(f"trace: {size / 1e6:.0f} MB is larger than {MAX_TRACE_BYTES // 2**20} MiB; not kept")
        else:
            with open(path, encoding="utf-8", errors="replace") as fh:
                trace = fh.read()
    except Exception as exc:  # noqa: BLE001
        missing.append(f"trace: could not be exported ({type(exc).__name__}: {exc})"[:300])
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return figures, trace


def _is_cuda_event(e: Any) -> bool:
    dt = getattr(e, "device_type", None)
    return dt is not None and getattr(dt, "name", str(dt)).upper().endswith("CUDA")


def _us(e: Any) -> float:
    tr = getattr(e, "time_range", None)
    return float(tr.end - tr.start) if tr is not None else 0.0


def _call_of(e: Any) -> Any:
    p = getattr(e, "cpu_parent", None)
    while p is not None and not str(p.name).startswith(CALL_MARK):
        p = p.cpu_parent
    return p


def _outermost_op(e: Any) -> bool:
    """An operator no other operator called (what the call itself dispatched)."""
    if not str(e.name).startswith("aten::"):
        return False
    p = e.cpu_parent
    while p is not None and not str(p.name).startswith(CALL_MARK):
        if str(p.name).startswith("aten::"):
            return False
        p = p.cpu_parent
    return True


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


#: Operators that only make a view or change metadata: the elements of their inputs are not work.
_VIEW_OPS = frozenset(
    "aten::" + n for n in (
        "view", "reshape", "_reshape_alias", "_unsafe_view", "t", "transpose", "permute", "expand",
        "as_strided", "unsqueeze", "squeeze", "flatten", "select", "slice", "detach", "alias",
        "contiguous", "numpy_T", "unflatten", "split", "chunk", "narrow", "view_as", "expand_as",
    )
)


def _elements(e: Any) -> int:
    """Elements of an operator's largest input (``record_shapes``), 0 for a view or without shapes."""
    if str(e.name) in _VIEW_OPS:
        return 0
    best = 0
    for shape in getattr(e, "input_shapes", None) or []:
        if isinstance(shape, (list, tuple)) and shape and all(
            isinstance(d, int) and not isinstance(d, bool) for d in shape
        ):
            best = max(best, math.prod(shape))
    return best


def _spread(values: list[float]) -> float | None:
    """Largest over smallest of per-call figures (1 when they agree); None when one is 0."""
    low = min(values) if values else 0.0
    return round(max(values) / low, 3) if low > 0 else None


def _call_index(marks: list[Any]) -> Callable[[float], int | None]:
    """The index of the profiled call whose time range holds a moment (a kernel's start)."""
    spans = sorted(
        (float(m.time_range.start), float(m.time_range.end), k) for k, m in enumerate(marks)
        if getattr(m, "time_range", None) is not None
    )
    starts = [s for s, _, _ in spans]

    def find(t: float) -> int | None:
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0 and spans[i][0] <= t <= spans[i][1]:
            return spans[i][2]
        return None

    return find


@dataclass
class _CallTally:
    """What the profiler's CPU events say about each profiled call (lists: one entry per call)."""

    calls: int
    #: self CPU time of each operator (and other CPU event) name, per call
    self_us: dict[str, list[float]] = field(default_factory=dict)
    #: events of each name over all the calls
    counts: dict[str, int] = field(default_factory=dict)
    #: time inside the outermost operators and compiled graphs (CPU)
    busy: list[float] = field(init=False)
    #: the GEMMs' part of ``busy`` (CPU)
    gemm: list[float] = field(init=False)
    #: outermost operators, and the GEMMs among them
    outer: list[int] = field(init=False)
    gemms: list[int] = field(init=False)
    #: compiled graphs called
    graphs: list[int] = field(init=False)
    #: elements of the outermost operators' largest inputs
    elements: list[int] = field(init=False)

    def __post_init__(self) -> None:
        n = self.calls
        self.busy, self.gemm = [0.0] * n, [0.0] * n
        self.outer, self.gemms, self.graphs, self.elements = [0] * n, [0] * n, [0] * n, [0] * n


def _tally_calls(events: list[Any], marks: list[Any], cuda: bool) -> _CallTally:
    """Each CPU event counted against the profiled call it ran in."""
    n = len(marks)
    index = {id(m): k for k, m in enumerate(marks)}
    tally = _CallTally(n)
    for e in events:
        if _is_cuda_event(e) or str(e.name).startswith(CALL_MARK):
            continue
        call = _call_of(e)
        if call is None or id(call) not in index:
            continue
        k = index[id(call)]
        name = str(e.name)
        tally.self_us.setdefault(name, [0.0] * n)[k] += float(getattr(e, "self_cpu_time_total", 0.0) or 0.0)
        tally.counts[name] = tally.counts.get(name, 0) + 1
        if name.startswith("## Call CompiledFxGraph"):
            tally.graphs[k] += 1
            if not cuda:  # Inductor's own C++ kernels run inside it, unseen by the profiler
                own = float(getattr(e, "self_cpu_time_total", 0.0) or 0.0)
                tally.busy[k] += own
        if _outermost_op(e):
            tally.outer[k] += 1
            tally.elements[k] += _elements(e)
            if not cuda:
                total = _us(e)
                tally.busy[k] += total
                if is_gemm(name):
                    tally.gemm[k] += total
                    tally.gemms[k] += 1
    return tally


def _top_ops(tally: _CallTally, marks: list[Any], wall_us: float) -> list[dict[str, Any]]:
    """The top-operators table: self time per call (median), calls per call, share of the call;
    the time outside any operator is a row of its own."""
    n = tally.calls
    ops: list[dict[str, Any]] = []
    for name, per in tally.self_us.items():
        ops.append(
            {
                "name": name[:200],
                "self_ms_per_call": round(_median(per) / 1000.0, 6),
                "calls_per_call": round(tally.counts[name] / n, 3),
                "share": round(_median(per) / wall_us, 4) if wall_us > 0 else None,
            }
        )
    outside = [max(0.0, _us(m) - sum(_us(c) for c in (m.cpu_children or []))) for m in marks]
    ops.append(
        {
            "name": "(Python and framework, outside any operator)",
            "self_ms_per_call": round(_median(outside) / 1000.0, 6),
            "calls_per_call": 1.0,
            "share": round(_median(outside) / wall_us, 4) if wall_us > 0 else None,
        }
    )
    ops.sort(key=lambda o: -o["self_ms_per_call"])
    return ops[:TOP_OPS]


def profile_figures(events: list[Any], cuda: bool) -> dict[str, Any] | None:
    """Per-call figures from profiler events (FunctionEvent-like objects).

    Per operator: self time per call (the median over the profiled calls, so
    one preempted call does not rename the top operator), calls per call and
    share of the call. ``busy`` is the share of the call inside operators
    (CPU: outermost operators and compiled graphs' own kernels) or inside
    CUDA kernels (GPU), ``gemm_share`` the share in matrix multiplies — both
    shares of wall time, which machine load changes.

    The figures the classification reads do not depend on how fast the
    machine ran the calls: operators (kernels) per call, ``elements_per_call``
    (the elements of each outermost operator's largest input, views left
    out) and ``gemm_share_of_ops``, the GEMMs' share of the operators' own
    time (CPU: outermost operators and compiled graphs; CUDA: kernels),
    the median over the calls; each call's share is in
    ``gemm_share_of_ops_calls`` and its operator time, in the same order, in
    ``op_ms_calls`` (calls with any operator time).
    ``op_spread`` and ``wall_spread`` say how much the calls differed
    (largest over smallest operator or wall time).
    """
    marks = [e for e in events if str(e.name).startswith(CALL_MARK) and not _is_cuda_event(e)]
    if not marks:
        return None
    n = len(marks)
    wall = [_us(m) for m in marks]
    wall_us = _median(wall)
    tally = _tally_calls(events, marks, cuda)
    figures: dict[str, Any] = {
        "calls": n,
        "wall_ms_per_call": round(wall_us / 1000.0, 6),
        "ops": _top_ops(tally, marks, wall_us),
        "ops_per_call": round(sum(tally.outer) / n, 3),
        "compiled_graphs_per_call": round(sum(tally.graphs) / n, 3),
        "elements_per_call": round(_median([float(x) for x in tally.elements]), 1),
    }
    if cuda:
        busy, gemm = _kernel_figures(figures, events, marks, wall)
    else:
        busy, gemm = _cpu_op_figures(figures, tally, wall)
    shares = [round(min(1.0, g / b), 4) for g, b in zip(gemm, busy) if b > 0]
    figures["gemm_share_of_ops"] = round(_median(shares), 4) if shares else None
    figures["gemm_share_of_ops_calls"] = shares
    figures["op_ms_per_call"] = round(_median(busy) / 1000.0, 6) if any(busy) else None
    figures["op_ms_calls"] = [round(b / 1000.0, 6) for b in busy if b > 0]
    figures["wall_ms_calls"] = [round(w / 1000.0, 6) for w in wall]
    figures["op_spread"] = _spread(busy)
    figures["wall_spread"] = _spread(wall)
    return figures


def _kernel_figures(
    figures: dict[str, Any], events: list[Any], marks: list[Any], wall: list[float]
) -> tuple[list[float], list[float]]:
    """The CUDA kernels' figures added to ``figures``; returns each call's kernel time and the
    GEMM kernels' part of it."""
    n = len(marks)
    kernels = [e for e in events if _is_cuda_event(e)]
    by_name: dict[str, list[float]] = {}
    kt = 0.0
    gt = 0.0
    # kernel time per call: a call ends with a synchronize, so its kernels start inside it
    busy = [0.0] * n
    gemm = [0.0] * n
    find = _call_index(marks)
    for e in kernels:
        d = _us(e)
        kt += d
        g = is_gemm(str(e.name))
        if g:
            gt += d
        by_name.setdefault(str(e.name)[:200], []).append(d)
        tr = getattr(e, "time_range", None)
        at = find(float(tr.start)) if tr is not None else None
        if at is not None:
            busy[at] += d
            if g:
                gemm[at] += d
    total_wall = sum(wall)
    rows: list[dict[str, Any]] = [
        {
            "name": k,
            "self_ms_per_call": round(sum(v) / n / 1000.0, 6),
            "calls_per_call": round(len(v) / n, 3),
            "share": round(sum(v) / total_wall, 4) if total_wall > 0 else None,
        }
        for k, v in by_name.items()
    ]
    rows = sorted(rows, key=lambda o: -float(o["self_ms_per_call"]))[:TOP_OPS]
    figures["kernels"] = rows
    figures["kernels_per_call"] = round(len(kernels) / n, 3) if kernels else None
    figures["gemm_per_call"] = round(
        sum(1 for e in kernels if is_gemm(str(e.name))) / n, 3
    )
    figures["kernels_counted"] = "CUDA kernels launched per call (profiler, CUPTI)"
    figures["device_ms_per_call"] = round(kt / n / 1000.0, 6) if kernels else None
    figures["busy"] = round(min(1.0, kt / total_wall), 4) if kernels and total_wall > 0 else None
    figures["busy_counted"] = "CUDA kernel time ÷ wall time of the call"
    figures["gemm_share"] = round(gt / total_wall, 4) if kernels and total_wall > 0 else None
    figures["gemm_share_of_ops_counted"] = "GEMM kernel time ÷ kernel time of the call"
    if kernels and not any(busy) and kt > 0:  # kernels outside the calls' spans: totals only
        busy, gemm = [kt / n] * n, [gt / n] * n
    return busy, gemm


def _cpu_op_figures(
    figures: dict[str, Any], tally: _CallTally, wall: list[float]
) -> tuple[list[float], list[float]]:
    """The CPU operators' figures added to ``figures``; returns each call's operator time and
    the GEMM operators' part of it."""
    figures["kernels_per_call"] = figures["ops_per_call"]
    figures["gemm_per_call"] = round(sum(tally.gemms) / tally.calls, 3)
    figures["kernels_counted"] = (
        "operators the call dispatched (aten ops no other op called); a compiled "
        "graph's fused C++ kernels are counted from its output code"
    )
    busy, gemm = tally.busy, tally.gemm
    figures["busy"] = round(min(1.0, _median([b / w for b, w in zip(busy, wall) if w > 0])), 4)
    figures["busy_counted"] = (
        "time inside those operators and inside compiled graphs ÷ wall time of the call"
    )
    figures["gemm_share"] = round(_median([g / w for g, w in zip(gemm, wall) if w > 0]), 4)
    figures["gemm_share_of_ops_counted"] = (
        "GEMM operators' time ÷ time inside the outermost operators and compiled graphs"
    )
    return busy, gemm
