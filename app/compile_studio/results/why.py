"""Why is it faster — or slower? The diagnostics of a run: files, loading, and the sentence.

The worker sends one ``diagnostics`` event per variant (see
``engine.diagnostics``). :func:`record_diagnostics` writes it into the run
folder: ``why.json`` (the figures of every variant), ``trace_<variant>.json``
(the profiled calls as a Chrome trace, for ui.perfetto.dev) and
``code_<variant>_<k>.py`` (Inductor's output code per compiled graph). A
compact copy of the figures the sentence needs (:func:`compact`, a few
numbers, at most :data:`MAX_BREAK_AT` graph-break places and short texts)
goes into run.json's ``measurement["why"]``, so a verdict line can say why
without reading why.json.

:func:`load_why` reads a folder back with the same care as
``results.schema``: regular files under a size cap, typed and bounded
values, problems listed, file names made from variant names (never taken
from the content). No Qt, no torch.

The sentence (:func:`classify`)
-------------------------------
What compile could not do comes first. When Dynamo hit its recompile limit
for the compiled variant, the sentence leads with "compile did not run your
model: the recompile limit was hit (…); the timed calls ran eager"; when it
split the model, with "compile did not run your model as one graph: N graph
breaks, at file.py:16 and :18 (reason)". Then it says what bounds eager's
calls (:meth:`Evidence.bound`). The class is read only from figures that
machine load does not change — a competing process on the same core
stretches every time figure of a CPU profile (self time is wall time there)
and lowers the share of the call spent inside operators, but it does not
change how many operators a call dispatches or how much work each does, and
it moves how the operators' own time divides between them far less:

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
   to a line can cross it on a busier machine; or when those fastest calls
   disagree: one of their own shares falls in another class (the sentence
   gives their range and how much the calls' operator time varied, largest
   over smallest). The slower calls, where a preemption landed, are not
   counted, so a model clear of the lines classifies even on a busy
   machine, and a quiet run of one always does.

With these lines a share classifies as other below 25 %, mixed from 45 % to
60 %, gemm from 80 %, and is too close to call in between.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol import DiagnosticsEvent
from .schema import (
    MAX_NAME,
    MAX_VARIANTS,
    RunDamaged,
    Schema,
    parse_json_document,
    read_bytes_capped,
)

WHY_JSON = "why.json"
WHY_SCHEMA_VERSION = 1
#: Largest why.json read; largest trace or code file shown.
MAX_WHY_BYTES = 8 * 1024 * 1024
MAX_TRACE_BYTES = 64 * 1024 * 1024
MAX_CODE_BYTES = 1024 * 1024
MAX_CODE_FILES = 8
#: Rows kept from each list read (operators, breaks, recompiles).
MAX_ROWS = 200
#: Graph-break places kept in run.json's compact copy; longest short text kept there.
MAX_BREAK_AT = 3
MAX_SHORT_TEXT = 160
#: Per-call shares kept there (the profile takes a few calls).
MAX_CALL_SHARES = 16

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


# -- file names ------------------------------------------------------------------------------

def _stem(variant: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.+-]", "-", variant)[:80] or "variant"
    if safe != variant:
        safe += "-" + hashlib.sha1(variant.encode("utf-8", "replace")).hexdigest()[:8]
    return safe


def trace_file(variant: str) -> str:
    """The Chrome-trace file of a variant (in its run folder)."""
    return f"trace_{_stem(variant)}.json"


def code_file(variant: str, k: int) -> str:
    """The ``k``-th output code file of a variant (in its run folder)."""
    return f"code_{_stem(variant)}_{k}.py"


# -- writing (the supervising side) ------------------------------------------------------------

def _base_name(path: str) -> str:
    return re.split(r"[\\/]", path)[-1]


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _cut(text: str, limit: int = MAX_SHORT_TEXT) -> str:
    """``text`` on one line, without control or bidi characters, at most ``limit`` long."""
    text = " ".join(_CONTROL.sub(" ", text[: limit * 4]).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def short_break_reason(reason: str, source: str = "") -> str:
    """A graph break's reason in a few words (its first clause) and the source line it broke at."""
    head = reason.split(" — ", 1)[0].split(" (hint:", 1)[0].strip()
    source = source.strip()
    text = f"{head}: {source}" if head and source else head or source
    return _cut(text, 120)


_LIMIT_HIT = re.compile(r"hit config\.(\w+) \((\d+)\)")
_LIMIT_FUNCTION = re.compile(r"function: '([^']+)' \(([^)]*?)(?::(\d+))?\)")
_LIMIT_REASON = re.compile(r"last reason: (?:\d+/\d+: )?(.*)")


def short_limit(text: str) -> str:
    """Dynamo's recompile-limit warning in a line: the limit, the function, the last guard failure."""
    hit, func, last = _LIMIT_HIT.search(text), _LIMIT_FUNCTION.search(text), _LIMIT_REASON.search(text)
    if hit is None and func is None:
        return _cut(text.replace("torch._dynamo ", ""), 200)
    out = f"{hit.group(1)} = {hit.group(2)}" if hit is not None else "the limit"
    if func is not None:
        where = _base_name(func.group(2)) + (f":{func.group(3)}" if func.group(3) else "")
        out += f" for {func.group(1)} ({where})" if where else f" for {func.group(1)}"
    if last is not None:
        out += f"; last guard failure: {last.group(1).strip()}"
    return _cut(out, 200)


def _numbers(value: Any) -> list[float]:
    if not isinstance(value, list):
        return []
    return [float(v) for v in value if isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v)]


def compact(why: dict[str, Any]) -> dict[str, Any]:
    """The figures the sentence needs, small enough for run.json (bounded lists and texts)."""
    found = why.get("profile")
    prof: dict[str, Any] = found if isinstance(found, dict) else {}
    keys = (
        "wall_ms_per_call", "kernels_per_call", "ops_per_call", "busy", "gemm_share",
        "gemm_per_call", "fused_kernels_in_code", "device_ms_per_call", "calls",
        "gemm_share_of_ops", "op_spread", "elements_per_call",
    )
    out: dict[str, Any] = {k: prof.get(k) for k in keys}
    out["gemm_share_of_ops_calls"] = [round(x, 4) for x in _numbers(prof.get("gemm_share_of_ops_calls"))][
        :MAX_CALL_SHARES
    ]
    out["op_ms_calls"] = [round(x, 6) for x in _numbers(prof.get("op_ms_calls"))][:MAX_CALL_SHARES]
    out["device"] = why.get("device")
    out["device_name"] = why.get("device_name")
    out["compiled"] = why.get("compiled")
    breaks = [b for b in why.get("graph_breaks") or [] if isinstance(b, dict)]
    out["graph_breaks"] = sum(
        b["count"] if isinstance(b.get("count"), int) and b["count"] > 0 else 1 for b in breaks
    )
    places: list[str] = []
    for b in breaks:
        file, line = b.get("file"), b.get("line")
        if isinstance(file, str) and file:
            place = _cut(_base_name(file), 80) + (f":{line}" if isinstance(line, int) else "")
            if place not in places:
                places.append(place)
    out["break_at"] = places[:MAX_BREAK_AT]
    out["break_places"] = len(places)
    first = breaks[0] if breaks else {}
    out["break_reason"] = (
        short_break_reason(str(first.get("reason") or ""), str(first.get("source") or "")) or None
        if breaks else None
    )
    out["recompiles"] = len(why.get("recompiles") or [])
    limit = why.get("recompile_limit")
    out["recompile_limit"] = short_limit(limit) if isinstance(limit, str) and limit.strip() else None
    return out


def record_diagnostics(folder: Path, event: DiagnosticsEvent) -> None:
    """Write one variant's diagnostics into the run folder (atomically, file by file)."""
    from .store import atomic_write_text

    folder = Path(folder)
    why = dict(event.why)
    if event.trace is not None:
        atomic_write_text(folder / trace_file(event.variant), event.trace)
        why["trace_file"] = trace_file(event.variant)
    files = []
    for k, item in enumerate(event.code[:MAX_CODE_FILES]):
        text = item.get("code") if isinstance(item, dict) else None
        if isinstance(text, str):
            atomic_write_text(folder / code_file(event.variant, k), text)
            files.append({"file": code_file(event.variant, k), "path": str(item.get("path", ""))})
    why["code_files"] = files
    doc: dict[str, Any] = {"schema_version": WHY_SCHEMA_VERSION, "variants": {}}
    path = folder / WHY_JSON
    if path.exists():
        try:
            old = parse_json_document(read_bytes_capped(path, MAX_WHY_BYTES), WHY_JSON)
            if isinstance(old, dict) and isinstance(old.get("variants"), dict):
                doc["variants"] = old["variants"]
        except RunDamaged:
            pass
    doc["variants"][event.variant] = why
    atomic_write_text(path, json.dumps(_finite(doc), indent=1) + "\n")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


# -- reading -----------------------------------------------------------------------------------

@dataclass
class OpRow:
    """One row of a top-operators (or kernels) table, per profiled call."""

    name: str = ""
    self_ms_per_call: float | None = None
    calls_per_call: float | None = None
    share: float | None = None


@dataclass
class Profile:
    """Figures of the profiled steady-state calls."""

    calls: int | None = None
    wall_ms_per_call: float | None = None
    ops_per_call: float | None = None
    kernels_per_call: float | None = None
    kernels_counted: str = ""
    busy: float | None = None
    busy_counted: str = ""
    gemm_share: float | None = None
    gemm_per_call: float | None = None
    device_ms_per_call: float | None = None
    fused_kernels_in_code: int | None = None
    compiled_graphs_per_call: float | None = None
    #: elements of each outermost operator's largest input, summed per call
    elements_per_call: float | None = None
    #: the GEMMs' share of the operators' (kernels') own time: the calls' median, and each call's
    gemm_share_of_ops: float | None = None
    gemm_share_of_ops_calls: list[float] = field(default_factory=list)
    gemm_share_of_ops_counted: str = ""
    op_ms_per_call: float | None = None
    op_ms_calls: list[float] = field(default_factory=list)
    wall_ms_calls: list[float] = field(default_factory=list)
    #: largest over smallest operator (wall) time of the profiled calls
    op_spread: float | None = None
    wall_spread: float | None = None
    ops: list[OpRow] = field(default_factory=list)
    kernels: list[OpRow] = field(default_factory=list)


@dataclass
class GraphBreak:
    """A graph break: why, and where in the user's code."""

    reason: str = ""
    file: str = ""
    line: int | None = None
    source: str = ""
    count: int = 1


@dataclass
class Recompile:
    """A recompile: Dynamo's guard-failure reason and the frame it recompiled."""

    reason: str = ""
    frame: str = ""
    compile_id: str = ""
    compile_s: float | None = None
    in_window: bool = False
    #: Dynamo did not recompile: its recompile limit was hit, and the frame ran eager
    refused: bool = False


@dataclass
class CompileInfo:
    """The first call's compile: graphs, phases (seconds), cache hits."""

    graphs: int | None = None
    first_call_ms: float | None = None
    compiled_s: float | None = None
    phases: dict[str, float] = field(default_factory=dict)
    cache: dict[str, int] = field(default_factory=dict)
    frames: list[str] = field(default_factory=list)
    cudagraph_skips: list[str] = field(default_factory=list)

    def named_share(self) -> float | None:
        """The share of the first call's time the named phases account for."""
        if not self.first_call_ms or not self.phases:
            return None
        return sum(self.phases.values()) * 1000.0 / self.first_call_ms


@dataclass
class CodeFile:
    """One compiled graph's output code: where Inductor wrote it, the copy, its kernels."""

    path: str = ""
    file: str | None = None
    fused: int | None = None
    library: int | None = None


@dataclass
class VariantWhy:
    """Everything why.json says about one variant."""

    name: str
    device: str = ""
    device_name: str = ""
    compiled: bool = False
    profile: Profile | None = None
    compile: CompileInfo | None = None
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompile] = field(default_factory=list)
    recompile_limit: str | None = None
    cudagraph_skips: list[str] = field(default_factory=list)
    code: list[CodeFile] = field(default_factory=list)
    trace: str | None = None
    missing: list[str] = field(default_factory=list)
    overhead_s: float | None = None


@dataclass
class WhyReport:
    """The diagnostics of a run folder, as far as they could be read."""

    folder: Path | None
    variants: dict[str, VariantWhy] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: why there is nothing to show (no why.json: diagnostics off, an older run)
    absent: str | None = None


_OP = Schema.of_dataclass("operator", OpRow)
_PROFILE = Schema.of_dataclass("profile", Profile, skip=("ops", "kernels"))
_BREAK = Schema.of_dataclass("graph break", GraphBreak)
_RECOMPILE = Schema.of_dataclass("recompile", Recompile)
_COMPILE = Schema.of_dataclass("compile", CompileInfo)
_CODE = Schema.of_dataclass("output code", CodeFile, skip=("file",))
_VARIANT = Schema.of_dataclass(
    "variant", VariantWhy,
    skip=("name", "profile", "compile", "graph_breaks", "recompiles", "code", "trace"),
)


def _rows(data: Any, schema: Schema, cls: type, problems: list[str]) -> list[Any]:
    if data is None:
        return []
    if not isinstance(data, list):
        problems.append(f"{schema.what} list is not a list")
        return []
    return [cls(**schema.read(item, problems)) for item in data[:MAX_ROWS]]


def _variant(name: str, data: Any, folder: Path | None, problems: list[str]) -> VariantWhy:
    v = VariantWhy(name=name)
    if not isinstance(data, dict):
        problems.append(f"{name[:40]}: not an object")
        return v
    for key, value in _VARIANT.read(data, problems).items():
        if value is not None:
            setattr(v, key, value)
    if isinstance(data.get("profile"), dict):
        p = data["profile"]
        v.profile = Profile(**_PROFILE.read(p, problems))
        v.profile.ops = _rows(p.get("ops"), _OP, OpRow, problems)
        v.profile.kernels = _rows(p.get("kernels"), _OP, OpRow, problems)
    if isinstance(data.get("compile"), dict):
        v.compile = CompileInfo(**_COMPILE.read(data["compile"], problems))
    v.graph_breaks = _rows(data.get("graph_breaks"), _BREAK, GraphBreak, problems)
    v.recompiles = _rows(data.get("recompiles"), _RECOMPILE, Recompile, problems)
    v.code = _rows(data.get("output_code"), _CODE, CodeFile, problems)
    if folder is not None:
        for k, c in enumerate(v.code[:MAX_CODE_FILES]):
            if (folder / code_file(name, k)).is_file():
                c.file = code_file(name, k)
        if (folder / trace_file(name)).is_file():
            v.trace = trace_file(name)
    return v


def load_why(folder: str | Path | None) -> WhyReport:
    """The diagnostics in a run folder; never raises (problems and absences are in words)."""
    if folder is None:
        return WhyReport(
            None, absent="diagnostics are read from the run folder: this run has none in the run store"
        )
    folder = Path(folder)
    if folder.is_file():
        folder = folder.parent
    report = WhyReport(folder)
    path = folder / WHY_JSON
    if not path.exists() and not path.is_symlink():
        report.absent = (
            f"no {WHY_JSON} in {folder.name}: diagnostics were off for this run, "
            "or it was made by an older version"
        )
        return report
    try:
        doc = parse_json_document(read_bytes_capped(path, MAX_WHY_BYTES), WHY_JSON)
    except RunDamaged as exc:
        report.absent = str(exc)
        return report
    variants = doc.get("variants") if isinstance(doc, dict) else None
    if not isinstance(variants, dict):
        report.absent = f"{WHY_JSON} is not a Compile Studio diagnostics file"
        return report
    for name, data in list(variants.items())[:MAX_VARIANTS]:
        if not isinstance(name, str) or not name or len(name) > MAX_NAME:
            report.problems.append("a variant with an unusable name was left out")
            continue
        report.variants[name] = _variant(name, data, folder, report.problems)
    return report


def read_text_file(folder: Path, name: str, limit: int = MAX_CODE_BYTES) -> str:
    """A trace or code file of the run folder (a regular file under ``limit``) as text."""
    if "/" in name or "\\" in name or name.startswith("."):
        raise RunDamaged(f"{name[:40]!r} is not a file of the run folder")
    return read_bytes_capped(Path(folder) / name, limit).decode("utf-8", "replace")


# -- the sentence --------------------------------------------------------------------------------

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

    @property
    def tflops(self) -> float | None:
        if self.flops_per_call and self.ms:
            return self.flops_per_call / (self.ms / 1000.0) / 1e12
        return None

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
    return f"{100.0 * x:.0f} %"


def _n(x: float | None) -> str:
    if x is None:
        return "?"
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.1f}"


def _si(x: float, unit: str) -> str:
    """``3.2 kFLOP``, ``512 elements``: a count with an SI prefix."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.1f} {prefix}{unit}" if unit.isupper() else f"{x / scale:.1f} {prefix} {unit}"
    return f"{x:.0f} {unit}"


def _rate(e: Evidence) -> str:
    t = e.tflops
    if t is None:
        return ""
    if e.peak_tflops:
        return f"{_pct(t / e.peak_tflops)} of peak ({t:.0f} of {e.peak_tflops:.0f} TFLOP/s)"
    return f"{t * 1000:.1f} GFLOP/s" if t < 1 else f"{t:.1f} TFLOP/s"


def _places(at: tuple[str, ...], total: int) -> str:
    """``a.py:3 and :7``, ``a.py:3, :7, b.py:2 and 2 more``: a file named once per run of its lines."""
    shown: list[str] = []
    last = None
    for place in at:
        file, sep, line = place.rpartition(":")
        if sep and file == last:
            shown.append(f":{line}")
        else:
            shown.append(place)
            last = file if sep else None
    more = total - len(at)
    if more > 0:
        return ", ".join(shown) + f" and {more} more"
    if len(shown) > 1:
        return ", ".join(shown[:-1]) + " and " + shown[-1]
    return shown[0] if shown else ""


def lead(other: Evidence) -> str:
    """What compile did not do for ``other`` (the recompile limit, graph breaks); "" when nothing."""
    if other.recompile_limit:
        return (
            f"compile did not run your model: the recompile limit was hit ({other.recompile_limit}); "
            "the timed calls ran eager"
        )
    if other.graph_breaks > 0:
        n = other.graph_breaks
        s = f"compile did not run your model as one graph: {n} graph break{'' if n == 1 else 's'}"
        if other.break_at:
            s += ", at " + _places(other.break_at, max(other.break_places, len(other.break_at)))
        if other.break_reason:
            s += f" ({other.break_reason})"
        return s
    return ""


def _work(e: Evidence) -> str:
    parts = []
    if e.flops_per_op is not None:
        parts.append(_si(e.flops_per_op, "FLOP"))
    if e.elements_per_op is not None:
        parts.append(_si(e.elements_per_op, "elements"))
    return " and ".join(parts) + " each" if parts else ""


def _fusion(e: Evidence, o: Evidence | None, helps: str = "", none_found: bool = True) -> str:
    """What the compiled variant did with eager's operators: fused them into fewer, or not."""
    if o is None or o.kernels is None or e.kernels is None:
        return ""
    if o.kernels < e.kernels - 0.05:
        return f"; {o.name} fuses them into {_n(o.kernels)}{helps}"
    if none_found:
        return f"; {o.name} runs as many ({_n(o.kernels)}): no fusion found"
    return f"; {o.name} still runs {_n(o.kernels)}"


def _body(eager: Evidence, o: Evidence | None) -> str:
    gpu = eager.device == "cuda"
    unit = "kernels" if gpu else "operators"
    verb = "launching" if gpu else "dispatching"
    bound, noise = eager.judge()
    if bound == "unknown":
        return "no profile of eager: nothing can be said about why"
    if bound == "noisy":
        s = f"the profile is too noisy to classify ({noise})"
        if o is not None and o.kernels is not None and eager.kernels is not None:
            s += f"; {o.name} runs {_n(o.kernels)} {unit} per call against eager's {_n(eager.kernels)}"
        return s
    if bound == "launch":
        work = _work(eager)
        if work:
            kind = "launch" if gpu else "dispatch"
            count = eager.kernels if eager.kernels is not None else eager.ops
            s = f"eager is {kind}-bound: {_n(count)} {unit} per call, {work}"
            s += f" — too little work each to outweigh the cost of {verb} it"
            if gpu and eager.busy is not None:
                s += f" (the GPU is idle {_pct(1.0 - eager.busy)} of each call)"
        else:
            s = f"eager spends {_pct(1.0 - (eager.busy or 0.0))} of each call {verb} {_n(eager.kernels)} {unit}"
        s += _fusion(eager, o, none_found=False)
        if gpu:
            s += "; its CUDA graph replays them with one launch" if o is not None and o.cudagraphs \
                else "; try reduce-overhead to remove launches"
        else:
            s += "; on CPU this fixed cost stays in every call — a larger batch amortises it"
        return s
    share = eager.gemm_of_ops or 0.0
    if bound == "gemm":
        rate = _rate(eager)
        if o is not None and o.bound() == "gemm" and rate and eager.peak_tflops:
            return f"both run the same GEMM kernels at {rate.split(' (')[0]}; compile cannot help here"
        s = f"eager is compute-bound: GEMMs hold {_pct(share)} of the operators' time"
        detail = ", ".join(
            x for x in (
                f"{_n(eager.gemm_per_call)} per call" if eager.gemm_per_call else "",
                rate,
            ) if x
        )
        if detail:
            s += f" ({detail})"
        who = f"{o.name} runs the same library GEMMs" if o is not None else "compile keeps the library GEMMs"
        return s + f"; {who} — compile cannot help here"
    if bound == "mixed":
        s = (
            f"eager is mixed: GEMMs hold {_pct(share)} of the operators' time, other operators "
            f"{_pct(1.0 - share)} ({_n(eager.kernels)} {unit} per call)"
        )
        return s + _fusion(eager, o) + "; compile can speed up only the part outside the GEMMs"
    s = (
        f"operators other than GEMMs hold {_pct(1.0 - share)} of eager's operator time "
        f"({_n(eager.kernels)} {unit} per call)"
    )
    return s + _fusion(eager, o, " — this is where compile helps")


def classify(eager: Evidence, other: Evidence | None = None) -> str:
    """One sentence: what compile did not do, what bounds eager's calls, what the compiled variant changes."""
    first = lead(other) if other is not None else ""
    rest = _body(eager, other)
    return f"{first}; {rest}" if first else rest


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
    from ..config import CUDAGRAPH_VARIANTS

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
        cudagraphs=name in CUDAGRAPH_VARIANTS and device == "cuda",
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
    )


def evidence(run: Any, name: str) -> Evidence | None:
    """The sentence's evidence for variant ``name`` of a run (from run.json's compact copy)."""
    table = run.measurement.get("why") if isinstance(run.measurement, dict) else None
    data = table.get(name) if isinstance(table, dict) else None
    if not isinstance(data, dict):
        return None
    v = run.variants.get(name)
    st = v.stats() if v is not None and run.samples_loaded else None
    dtype = run.config.dtype if getattr(run, "config", None) is not None else None
    ran = run.measurement.get("model_dtype")
    if isinstance(ran, str) and dtype in (None, "as_given", "fp32", "bf16", "fp16"):
        dtype = ran  # the dtype the model ran in (a factory's own: "as given")
    return evidence_of(
        data, name,
        flops_per_call=_num(run.measurement.get("flops_per_call")),
        ms=_num(getattr(st, "median", None)),
        dtype=dtype,
    )


def sentence(run: Any, name: str) -> str | None:
    """Why variant ``name`` is as fast as it is against eager, in a sentence; None without evidence."""
    eager = evidence(run, "eager")
    if eager is None:
        return None
    other = evidence(run, name) if name != "eager" else None
    if name != "eager" and other is None:
        return None
    return classify(eager, other)


# -- text ----------------------------------------------------------------------------------------

def _ms(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x * 1000:.1f} µs" if x < 1 else f"{x:.2f} ms"


_REFUSED_FRAME = "the frame over the recompile limit (it ran eager)"


def user_names(text: str, variant: str) -> str:
    """``text`` with the user's function names: ``forward_<variant>``, the app's copy, as ``forward``."""
    tag = variant.replace("-", "_")
    if not tag or not text:
        return text
    return re.sub(rf"(?<=[A-Za-z0-9])_{re.escape(tag)}(?=_at_\d|[^A-Za-z0-9_]|$)", "", text)


def _frame(rc: Recompile, v: VariantWhy) -> str:
    """The recompiled frame as the user named it; words instead of the "? (?)" torch leaves unnamed."""
    frame = user_names(rc.frame, v.name).strip()
    if frame in ("", "? (?)", "?"):
        return _REFUSED_FRAME if rc.refused or v.recompile_limit else "a frame torch did not name"
    return frame + (" — not recompiled: the recompile limit was hit, it ran eager" if rc.refused else "")


def variant_lines(v: VariantWhy, run: Any | None = None, ops: bool = True) -> list[str]:
    """The evidence of one variant as plain text lines (``ops``: with the top operators)."""
    where = ", ".join(x for x in (v.device, v.device_name) if x) or "device not recorded"
    out = [f"== {v.name} ({where})"]
    if run is not None:
        why = sentence(run, v.name)
        if why:
            out.append(f"why: {why}")
    p = v.profile
    if p is not None:
        count = (
            f"{_n(p.kernels_per_call)} {p.kernels_counted or 'kernels'}" if p.kernels_per_call is not None
            else "kernels not counted"
        )
        out.append(f"profile: {p.calls} steady-state calls, {_ms(p.wall_ms_per_call)} per call; {count}")
        if p.fused_kernels_in_code:
            out.append(f"  + {p.fused_kernels_in_code} fused kernels called by the output code")
        if p.busy is not None:
            out.append(f"  busy {_pct(p.busy)} ({p.busy_counted}); GEMMs {_pct(p.gemm_share or 0.0)}")
        picked = fastest_majority(p.op_ms_calls, p.gemm_share_of_ops_calls)
        if picked:
            out.append(
                f"  GEMMs hold {_pct(statistics.median(picked))} of the operators' time (median of the "
                f"{len(picked)} fastest of {len(p.gemm_share_of_ops_calls)} calls)"
            )
            shares = [x for x in p.gemm_share_of_ops_calls if isinstance(x, (int, float))]
            if len(shares) > 1:
                times = ", ".join(_ms(x) for x in p.op_ms_calls[: len(shares)])
                out.append(
                    f"  per call: GEMM share {', '.join(f'{100 * x:.0f}' for x in shares)} %"
                    + (f"; operator time {times}" if times else "")
                    + (f" (varies {p.op_spread:.2f}×)" if p.op_spread is not None else "")
                )
        if p.elements_per_call is not None and p.ops_per_call:
            out.append(
                f"  {_si(p.elements_per_call / p.ops_per_call, 'elements')} per operator "
                "(largest input, views left out)"
            )
        rows = (p.kernels or p.ops) if ops else []
        if rows:
            out.append(f"  {'top kernels' if p.kernels else 'top operators'} (self time per call, calls per call, share):")
            for r in rows[:10]:
                share = _pct(r.share) if r.share is not None else "–"
                out.append(
                    f"    {_ms(r.self_ms_per_call):>10}  {_n(r.calls_per_call):>4}×  {share:>5}  {r.name}"
                )
    else:
        out.append("profile: none")
    c = v.compile
    if v.compiled and c is not None:
        total = c.first_call_ms / 1000.0 if c.first_call_ms else None
        out.append(
            f"compile: {c.graphs} graph(s), first call {total:.2f} s" if total is not None
            else f"compile: {c.graphs} graph(s)"
        )
        if c.phases:
            named = c.named_share()
            parts = ", ".join(f"{k} {s:.2f} s" for k, s in c.phases.items() if s > 0.0005)
            out.append(f"  phases: {parts}" + (f" ({_pct(named)} of the first call)" if named else ""))
        if c.cache:
            out.append(
                "  cache: FX graph {h} hit / {m} miss".format(
                    h=c.cache.get("fx_graph_hits", 0), m=c.cache.get("fx_graph_misses", 0)
                )
            )
    if v.compiled:
        if v.graph_breaks:
            out.append(f"graph breaks: {sum(b.count for b in v.graph_breaks)}")
            for b in v.graph_breaks:
                out.append(f"  {b.file}:{b.line}  {b.source}")
                out.append(f"    {user_names(b.reason, v.name)}")
        else:
            out.append("graph breaks: none")
        if v.recompiles:
            out.append(f"recompiles: {len(v.recompiles)}")
            for rc in v.recompiles:
                inside = " (inside the timed window)" if rc.in_window else ""
                out.append(f"  {_frame(rc, v)}{inside}: {user_names(rc.reason, v.name)}")
        else:
            out.append("recompiles: none")
        if v.recompile_limit:
            out.append(f"recompile limit hit: {user_names(v.recompile_limit, v.name)}")
        skips = list(v.cudagraph_skips) + (c.cudagraph_skips if c is not None else [])
        if skips:
            out.append("CUDA graphs skipped: " + "; ".join(dict.fromkeys(skips)))
        for k in v.code:
            kern = f" ({k.fused} fused kernels, {k.library} library calls)" if k.fused is not None else ""
            out.append(f"output code: {k.file or '(not kept)'}{kern} — written by Inductor to {k.path}")
    if v.trace:
        out.append(f"trace: {v.trace} (open it in ui.perfetto.dev or chrome://tracing)")
    for m in v.missing:
        out.append(f"not available: {m}")
    return out


def why_text(run: Any, report: WhyReport, variant: str | None = None) -> str:
    """What ``compile-studio-cli why`` prints."""
    lines = []
    if report.absent:
        return f"no diagnostics: {report.absent}\n"
    names = [variant] if variant else list(report.variants)
    for name in names:
        v = report.variants.get(name)
        if v is None:
            continue
        lines += variant_lines(v, run)
        lines.append("")
    for p in report.problems[:20]:
        lines.append(f"note: {p}")
    return "\n".join(lines).rstrip() + "\n"


def markdown_lines(run: Any, md_text: Callable[[object], str]) -> list[str]:
    """The report's short "Why" section (empty when the run has no diagnostics)."""
    table = run.measurement.get("why") if isinstance(run.measurement, dict) else None
    if not isinstance(table, dict) or "eager" not in table:
        return []
    out = ["", "### Why", ""]
    for name in run.variants:
        if name == "eager":
            continue
        s = sentence(run, name)
        if s:
            out.append(f"- **{md_text(name)}**: {md_text(s)}")
    e = evidence(run, "eager")
    if e is not None and len(out) == 3:
        out.append(f"- **eager**: {md_text(classify(e))}")
    for name in run.variants:
        found = table.get(name)
        data: dict[str, Any] = found if isinstance(found, dict) else {}
        breaks, recompiles = data.get("graph_breaks"), data.get("recompiles")
        if isinstance(breaks, int) and breaks > 0 or isinstance(recompiles, int) and recompiles > 0:
            out.append(
                f"- {md_text(name)}: {breaks or 0} graph break(s), {recompiles or 0} recompile(s) "
                "(`compile-studio-cli why` lists them with their source lines)"
            )
    out.append("")
    out.append(
        "Per-variant profiler traces (`trace_<variant>.json`, for ui.perfetto.dev), compile "
        "phases and Inductor's output code are in the run folder (`why.json`)."
    )
    return out
