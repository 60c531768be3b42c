"""The rule that classifies what bounds eager's calls, and the evidence it reads from a run.

:class:`Evidence` holds a variant's figures, read from run.json's compact copy
(:func:`evidence_of`, :func:`evidence`); :meth:`Evidence.judge` is the rule.

The class is read only from figures that machine load does not change — a
competing process on the same core stretches every time figure of a CPU
profile (self time is wall time there) and lowers the share of the call
spent inside operators, but it does not change how many operators a call
dispatches or how much work each does, and it moves how the operators' own
time divides between them far less:

1. **launch** (CUDA) / **dispatch** (CPU): each operator (CPU) or kernel
   (CUDA) does too little work to outweigh its fixed cost: FLOPs per
   operator (the run's FLOP count ÷ operators per call) below
   :data:`TINY_FLOPS` *and* elements per operator (each outermost
   operator's largest input, views left out) below :data:`TINY_ELEMENTS`,
   for the device. A figure that is not known is left out of the test;
   with neither known, a CUDA call is launch-bound when the GPU is idle
   for at least :data:`LAUNCH_BOUND_IDLE` of it.
2. Otherwise by the GEMMs' share of the operators' own time (CPU: the
   outermost operators and compiled graphs; CUDA: the kernels), the median
   over the fastest calls — more than half of the profiled calls, ranked by
   their operator time (:func:`fastest_majority`: a call preempted or
   slowed in one operator only gains time, so the fastest are the least
   disturbed): **gemm** (compute-bound) from :data:`GEMM_BOUND` (70 %),
   **mixed** from :data:`MIXED_FROM` (35 %) up to it, **other**
   (elementwise, normalisation: where fusion helps) below.
3. **noisy** — "the profile is too noisy to classify (…)" — instead of a
   share class when that median lies within :data:`MARGIN` (10 points) of
   either line (or, in the idle-share fallback, of the launch line): load
   does not stretch every kind of operator alike, and a share that close
   to a line can cross it on a busier machine — unless the run's own load
   readings say the machine was quiet (:func:`machine_quiet`) and the calls
   agree, where such a share is **mixed** (GEMMs and the other operators
   both count: that is not noise); or when those fastest calls
   disagree: one of their own shares falls in another class (the sentence
   gives their range and how much the calls' operator time varied, largest
   over smallest). The slower calls, where a preemption landed, are not
   counted, so a model clear of the lines classifies even on a busy
   machine, and a quiet run of one always does.

With these lines a share classifies as other below 25 %, mixed from 45 % to
60 %, gemm from 80 %, and is too close to call in between.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..analysis.summary import achieved_tflops, run_flops_per_call, summarize
from ..records.schema import RunDamaged
from .why_files import MAX_BREAK_AT, MAX_CALL_SHARES, MAX_SHORT_TEXT, _cut, _numbers

#: FLOPs per operator (CPU) or kernel (CUDA) below which each does too little work to hide
#: its dispatch or launch cost (about 10 µs of a CPU core, 5 µs of an H100).
TINY_FLOPS = {"cuda": 1e8, "cpu": 1e6}
#: Elements per operator (of its largest input) below which, with few FLOPs, the same holds.
TINY_ELEMENTS = {"cuda": float(2**21), "cpu": float(2**15)}
#: The GEMMs' share of the operators' own time from which a call is compute-bound on them.
GEMM_BOUND = 0.70
#: ... and from which (up to GEMM_BOUND) it is mixed; below it, other operators bound it.
MIXED_FROM = 0.35
#: A share closer than this to a line between two classes is not classified: load can slow
#: one kind of operator more than another (a busy neighbour slowed elementwise operators
#: 2-2.5x and left GEMMs as they were), and 10 points either side of a line absorb that.
MARGIN = 0.10
#: A quiet run's profiled calls vary less than this in operator time (largest over smallest).
QUIET_SPREAD = 1.2
#: Machine load readings under which a run counts as quiet: no other process using this much
#: of a core, and a 1-minute load average per CPU below this.
QUIET_PROCESS_PCT = 25.0
QUIET_LOAD_PER_CPU = 1.0
#: CUDA, when no work figure is known: share of the call with no kernel running from which
#: the call is launch-bound.
LAUNCH_BOUND_IDLE = 0.5

#: Dense (no sparsity) peak TFLOP/s by device name and dtype. Source: NVIDIA's
#: H100 and H200 Tensor Core GPU datasheets (SXM: 989 TFLOP/s bf16/fp16, 495 tf32,
#: 67 fp32; PCIe: 756, 378, 51). Matched in order: the first name found in the device's.
PEAK_TFLOPS: list[tuple[str, dict[str, float]]] = [
    ("H100 PCIe", {"bf16": 756.0, "fp16": 756.0, "tf32": 378.0, "fp32": 51.0}),
    ("H200", {"bf16": 989.0, "fp16": 989.0, "tf32": 495.0, "fp32": 67.0}),
    ("H100", {"bf16": 989.0, "fp16": 989.0, "tf32": 495.0, "fp32": 67.0}),
]
PEAK_SOURCE = "NVIDIA H100/H200 datasheets, dense (no sparsity)"


def peak_tflops(device_name: str | None, dtype: str | None) -> float | None:
    """The dense peak of a known GPU for ``dtype``; None for any other device."""
    if not device_name or not dtype:
        return None
    for key, table in PEAK_TFLOPS:
        if key.lower() in device_name.lower():
            return table.get(dtype)
    return None


#: The classes :meth:`Evidence.bound` gives.
BOUNDS = ("launch", "gemm", "mixed", "other", "noisy", "unknown")
_SHARE_NAMES = {"gemm": "GEMM-bound", "mixed": "mixed", "other": "bound by the other operators"}


def fastest_majority(op_ms: Sequence[float], shares: Sequence[float]) -> list[float]:
    """The GEMM shares of the fastest calls, more than half of them (by operator time; all of one or two).

    A call preempted or slowed in one operator only gains time: the fastest
    calls are the least disturbed. Without each call's operator time (an
    older file), all the calls' shares.
    """
    if len(op_ms) != len(shares):
        return list(shares)
    ranked = sorted(zip(op_ms, shares))
    return [share for _, share in ranked[: len(ranked) // 2 + 1]]


def _share_class(share: float) -> str:
    if share >= GEMM_BOUND:
        return "gemm"
    return "mixed" if share >= MIXED_FROM else "other"


@dataclass(frozen=True)
class Evidence:
    """What the sentence is made from, for one variant."""

    name: str
    device: str = "cpu"
    #: ms per call (the run's median, or the profiled calls') — shown, never classified on
    ms: float | None = None
    #: CUDA kernels per call, or on CPU operators dispatched (plus fused kernels)
    kernels: float | None = None
    #: share of the call inside kernels (CUDA) or operators (CPU)
    busy: float | None = None
    #: share of the call inside GEMMs
    gemm_share: float | None = None
    gemm_per_call: float | None = None
    flops_per_call: float | None = None
    peak_tflops: float | None = None
    compiled: bool = False
    cudagraphs: bool = False
    #: the GEMMs' share of the operators' (kernels') own time, the profiled calls' median
    op_gemm_share: float | None = None
    #: each profiled call's own share, and its operator time (ms) in the same order
    op_gemm_calls: tuple[float, ...] = ()
    op_ms_calls: tuple[float, ...] = ()
    #: largest over smallest operator time of the profiled calls
    op_spread: float | None = None
    calls: int | None = None
    #: operators the call dispatched (on CPU the same as ``kernels`` for eager)
    ops: float | None = None
    #: elements of each outermost operator's largest input, summed per call
    elements_per_call: float | None = None
    graph_breaks: int = 0
    #: where (``file.py:line``, at most a few) and why (in a few words) the first broke
    break_at: tuple[str, ...] = ()
    break_places: int = 0
    break_reason: str = ""
    #: Dynamo's recompile limit was hit (what it said, in a line)
    recompile_limit: str | None = None
    #: functions Dynamo gave up on (they ran eagerly) and why the first was; graphs compiled
    frames_skipped: int = 0
    skip_reason: str = ""
    graphs: int | None = None
    #: the machine was quiet before and after the run (its load readings): a share near a line
    #: is then mixed, not noise (:meth:`judge`)
    machine_quiet: bool = False
    #: FLOPs per call of the achieved rate (:attr:`tflops`) when not ``flops_per_call``: the
    #: MLP's analytic count for a run without a counted one (the rule reads only the count)
    rate_flops_per_call: float | None = None

    @property
    def tflops(self) -> float | None:
        """The achieved rate (``summary.FLOP_RATE_DEFINITION``): FLOPs per call / ``ms``."""
        flops = self.rate_flops_per_call if self.rate_flops_per_call is not None else self.flops_per_call
        return achieved_tflops(flops, self.ms)

    @property
    def gemm_of_ops(self) -> float | None:
        """The GEMMs' share of the operators' own time (from the shares of the call when not kept)."""
        if self.op_gemm_share is not None:
            return self.op_gemm_share
        if self.gemm_share is not None and self.busy:
            return min(1.0, self.gemm_share / self.busy)
        return None

    @property
    def flops_per_op(self) -> float | None:
        if self.flops_per_call is None or not self.kernels:
            return None
        return self.flops_per_call / self.kernels

    @property
    def elements_per_op(self) -> float | None:
        per = self.ops or self.kernels
        if self.elements_per_call is None or not per:
            return None
        return self.elements_per_call / per

    def judge(self) -> tuple[str, str]:
        """The class (one of :data:`BOUNDS`) and, for ``noisy``, why — the module's rule."""
        gpu = self.device == "cuda"
        key = "cuda" if gpu else "cpu"
        tiny = [
            figure < limits[key]
            for figure, limits in ((self.flops_per_op, TINY_FLOPS), (self.elements_per_op, TINY_ELEMENTS))
            if figure is not None
        ]
        if tiny and all(tiny):
            return "launch", ""
        if not tiny and gpu and self.busy is not None:
            idle = 1.0 - self.busy
            if abs(idle - LAUNCH_BOUND_IDLE) < MARGIN:
                return "noisy", (
                    f"the GPU is idle {_pct(idle)} of each call, within {MARGIN * 100:.0f} points "
                    f"of the {_pct(LAUNCH_BOUND_IDLE)} line of launch-bound"
                )
            if idle >= LAUNCH_BOUND_IDLE:
                return "launch", ""
        picked = fastest_majority(self.op_ms_calls, self.op_gemm_calls)
        share = statistics.median(picked) if picked else self.gemm_of_ops
        if share is None:
            return "unknown", ""
        for line, below, above in ((MIXED_FROM, "other", "mixed"), (GEMM_BOUND, "mixed", "gemm")):
            if abs(share - line) < MARGIN:
                if self.machine_quiet and all(abs(x - line) < MARGIN or _share_class(x) in (below, above)
                                              for x in picked) and (self.op_spread or 1.0) < QUIET_SPREAD:
                    # a quiet machine, calls that agree: GEMMs and the other operators both count
                    return "mixed", ""
                return "noisy", (
                    f"GEMMs hold {_pct(share)} of the operators' time, within {MARGIN * 100:.0f} points "
                    f"of the {_pct(line)} line ({_SHARE_NAMES[below]} below, {_SHARE_NAMES[above]} above)"
                )
        bound = _share_class(share)
        if any(_share_class(x) != bound for x in picked):
            n = len(self.op_gemm_calls)
            why = (
                f"the {len(picked)} fastest of the {n} profiled calls disagree: GEMMs hold "
                f"{100.0 * min(picked):.0f}–{_pct(max(picked))} of the operators' time call by call"
            )
            if self.op_spread is not None and self.op_spread >= 1.05:
                why += f", operator time per call varies {self.op_spread:.1f}×"
            return "noisy", why
        return bound, ""

    def bound(self) -> str:
        """``launch``, ``gemm``, ``mixed``, ``other``, ``noisy`` — or ``unknown`` without a profile."""
        return self.judge()[0]


def _pct(x: float) -> str:
    if not math.isfinite(x) or abs(x) > 1e6:
        return "out of range"
    return f"{100.0 * x:.0f} %"


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _text(value: Any, limit: int = MAX_SHORT_TEXT) -> str:
    return _cut(value, limit) if isinstance(value, str) else ""


def evidence_of(
    data: dict[str, Any],
    name: str,
    flops_per_call: float | None = None,
    ms: float | None = None,
    dtype: str | None = None,
) -> Evidence:
    """The sentence's evidence from a compact copy (:func:`compact`) of variant ``name``'s figures."""
    from ...core.variants import records_cudagraphs

    device = "cuda" if data.get("device") == "cuda" else "cpu"
    kernels = _num(data.get("kernels_per_call"))
    fused = _num(data.get("fused_kernels_in_code"))
    if device == "cpu" and kernels is not None and fused:
        kernels += fused
    dev_name = data.get("device_name") if isinstance(data.get("device_name"), str) else None
    at = data.get("break_at")
    places = tuple(_text(p, 100) for p in at[:MAX_BREAK_AT] if isinstance(p, str)) if isinstance(at, list) else ()
    breaks = _num(data.get("graph_breaks"))
    calls = _num(data.get("calls"))
    return Evidence(
        name=name,
        device=device,
        ms=ms if ms is not None else _num(data.get("wall_ms_per_call")),
        kernels=kernels,
        busy=_num(data.get("busy")),
        gemm_share=_num(data.get("gemm_share")),
        gemm_per_call=_num(data.get("gemm_per_call")),
        flops_per_call=flops_per_call,
        peak_tflops=peak_tflops(dev_name, dtype) if device == "cuda" else None,
        compiled=data.get("compiled") is True,
        cudagraphs=records_cudagraphs(name) and device == "cuda",
        op_gemm_share=_num(data.get("gemm_share_of_ops")),
        op_gemm_calls=tuple(_numbers(data.get("gemm_share_of_ops_calls"))[:MAX_CALL_SHARES]),
        op_ms_calls=tuple(_numbers(data.get("op_ms_calls"))[:MAX_CALL_SHARES]),
        op_spread=_num(data.get("op_spread")),
        calls=int(calls) if calls is not None else None,
        ops=_num(data.get("ops_per_call")),
        elements_per_call=_num(data.get("elements_per_call")),
        graph_breaks=int(breaks) if breaks is not None and breaks > 0 else 0,
        break_at=places,
        break_places=int(_num(data.get("break_places")) or len(places)),
        break_reason=_text(data.get("break_reason")),
        recompile_limit=_text(data.get("recompile_limit"), 240) or None,
        frames_skipped=int(_num(data.get("frames_skipped")) or 0),
        skip_reason=_text(data.get("skip_reason")),
        graphs=int(g) if (g := _num(data.get("graphs"))) is not None else None,
    )


def machine_quiet(measurement: Any) -> bool:
    """Whether the run's machine load readings (before and after) say the machine was quiet."""
    if not isinstance(measurement, dict):
        return False
    readings = [r for k in ("load_before", "load_after") if isinstance(r := measurement.get(k), dict)]
    if len(readings) != 2:
        return False
    for r in readings:
        for p in r.get("busiest") or []:
            used = _num(p.get("cpu_percent")) if isinstance(p, dict) else None
            if used is not None and used >= QUIET_PROCESS_PCT:
                return False
        la, n = r.get("load_average"), r.get("cpu_count")
        first = _num(la[0]) if isinstance(la, list) and la else None
        if first is not None and isinstance(n, int) and n > 0 and first / n >= QUIET_LOAD_PER_CPU:
            return False
    return True


def evidence(run: Any, name: str) -> Evidence | None:
    """The sentence's evidence for variant ``name`` of a run (from run.json's compact copy)."""
    table = run.measurement.get("why") if isinstance(run.measurement, dict) else None
    data = table.get(name) if isinstance(table, dict) else None
    if not isinstance(data, dict):
        return None
    dtype = run.config.dtype if getattr(run, "config", None) is not None else None
    ran = run.measurement.get("model_dtype")
    if isinstance(ran, str) and dtype in (None, "as_given", "fp32", "bf16", "fp16"):
        dtype = ran  # the dtype the model ran in (a factory's own: "as given")
    found = evidence_of(
        data, name,
        flops_per_call=_num(run.measurement.get("flops_per_call")),
        dtype=dtype,
    )
    # the achieved rate is the summary's (summary.FLOP_RATE_DEFINITION): its FLOPs and the
    # variant's median time per call, never the profiled calls' time
    flops, _ = run_flops_per_call(run)
    return replace(
        found, ms=_median_ms(run, name), rate_flops_per_call=flops,
        machine_quiet=machine_quiet(run.measurement),
    )


def summary_row(run: Any, name: str) -> Any | None:
    """Variant ``name``'s summary row (read back with the run, or computed); None without one."""
    rows = run.known_summary() if hasattr(run, "known_summary") else None
    if rows is None:
        try:
            rows = summarize(run)
        except RunDamaged:
            return None
    return next((r for r in rows if r.name == name), None)


def _median_ms(run: Any, name: str) -> float | None:
    """Variant ``name``'s median time per call as the summary gives it."""
    row = summary_row(run, name)
    return _num(row.median_ms) if row is not None else None
