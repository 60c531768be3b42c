"""Why is it faster — or slower? The diagnostics of a run: files, loading, and the sentence.

The worker sends one ``diagnostics`` event per variant (see
``engine.diagnostics``). :func:`record_diagnostics` writes it into the run
folder: ``why.json`` (the figures of every variant), ``trace_<variant>.json``
(the profiled calls as a Chrome trace, for ui.perfetto.dev) and
``code_<variant>_<k>.py`` (Inductor's output code per compiled graph). A
compact copy of the figures the sentence needs goes into run.json's
``measurement["why"]``, so a verdict line can say why without reading
why.json.

:func:`load_why` reads a folder back with the same care as
``results.schema``: regular files under a size cap, typed and bounded
values, problems listed, file names made from variant names (never taken
from the content). :func:`classify` turns the evidence into one sentence:
launch- (or dispatch-) bound, compute-bound on GEMMs, or bound by the
operators between them. No Qt, no torch.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
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

#: Share of the call outside any kernel (operator) above which a call is launch-bound.
LAUNCH_BOUND_IDLE = 0.5
#: Microseconds per kernel (CUDA) or operator (CPU) below which each one does too
#: little work to hide its launch or dispatch cost.
TINY_WORK_US = {"cuda": 8.0, "cpu": 15.0}
#: Share of the busy time in GEMMs above which a call is compute-bound on them.
GEMM_BOUND = 0.6

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

def compact(why: dict[str, Any]) -> dict[str, Any]:
    """The figures the sentence needs, small enough for run.json."""
    found = why.get("profile")
    prof: dict[str, Any] = found if isinstance(found, dict) else {}
    keys = (
        "wall_ms_per_call", "kernels_per_call", "ops_per_call", "busy", "gemm_share",
        "gemm_per_call", "fused_kernels_in_code", "device_ms_per_call",
    )
    out: dict[str, Any] = {k: prof.get(k) for k in keys}
    out["device"] = why.get("device")
    out["device_name"] = why.get("device_name")
    out["compiled"] = why.get("compiled")
    out["graph_breaks"] = sum(
        int(b.get("count", 1)) for b in why.get("graph_breaks") or [] if isinstance(b, dict)
    )
    out["recompiles"] = len(why.get("recompiles") or [])
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

@dataclass(frozen=True)
class Evidence:
    """What the sentence is made from, for one variant."""

    name: str
    device: str = "cpu"
    #: ms per call (the run's median, or the profiled calls')
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

    @property
    def tflops(self) -> float | None:
        if self.flops_per_call and self.ms:
            return self.flops_per_call / (self.ms / 1000.0) / 1e12
        return None

    def bound(self) -> str:
        """``launch``, ``gemm``, ``other`` — or ``unknown`` without a profile."""
        if self.busy is None:
            return "unknown"
        tiny = TINY_WORK_US.get(self.device, TINY_WORK_US["cpu"])
        per_kernel = self.ms * 1000.0 / self.kernels if self.ms and self.kernels else None
        if self.busy < LAUNCH_BOUND_IDLE or (per_kernel is not None and per_kernel < tiny):
            return "launch"
        if (self.gemm_share or 0.0) >= GEMM_BOUND * self.busy:
            return "gemm"
        return "other"


def _pct(x: float) -> str:
    return f"{100.0 * x:.0f} %"


def _n(x: float | None) -> str:
    if x is None:
        return "?"
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.1f}"


def _rate(e: Evidence) -> str:
    t = e.tflops
    if t is None:
        return ""
    if e.peak_tflops:
        return f"{_pct(t / e.peak_tflops)} of peak ({t:.0f} of {e.peak_tflops:.0f} TFLOP/s)"
    return f"{t * 1000:.1f} GFLOP/s" if t < 1 else f"{t:.1f} TFLOP/s"


def classify(eager: Evidence, other: Evidence | None = None) -> str:
    """One sentence: what bounds eager's calls and what the compiled variant changes."""
    gpu = eager.device == "cuda"
    unit = "kernels" if gpu else "operators"
    verb = "launching" if gpu else "dispatching"
    bound = eager.bound()
    if bound == "unknown":
        return "no profile of eager: nothing can be said about why"
    o = other
    if bound == "launch":
        idle = 1.0 - (eager.busy or 0.0)
        per = eager.ms * 1000.0 / eager.kernels if eager.ms and eager.kernels else None
        if (gpu and idle >= LAUNCH_BOUND_IDLE) or per is None:
            s = f"eager spends {_pct(idle)} of each call {verb} {_n(eager.kernels)} {unit}"
        else:
            kind = "launch" if gpu else "dispatch"
            s = f"eager is {kind}-bound: {_n(eager.kernels)} {unit} of {per:.0f} µs each"
            s += (
                f", {_pct(idle)} of each call outside any {unit[:-1]}" if idle >= 0.1
                else f" — too little work each to outweigh the cost of {verb} it"
            )
        if o is not None and o.kernels is not None and eager.kernels is not None:
            if o.kernels < eager.kernels - 0.05:
                s += f"; {o.name} fuses them into {_n(o.kernels)}"
            else:
                s += f"; {o.name} still runs {_n(o.kernels)}"
        if gpu:
            if o is not None and o.cudagraphs and o.busy is not None and o.busy >= LAUNCH_BOUND_IDLE:
                s += "; its CUDA graph replays them with one launch"
            else:
                s += "; try reduce-overhead to remove launches"
        else:
            s += "; on CPU this fixed cost stays in every call — a larger batch amortises it"
        return s
    if bound == "gemm":
        rate = _rate(eager)
        if o is not None and o.bound() == "gemm" and rate and eager.peak_tflops:
            return f"both run the same GEMM kernels at {rate.split(' (')[0]}; compile cannot help here"
        s = f"eager is compute-bound: GEMMs hold {_pct(eager.gemm_share or 0.0)} of each call"
        detail = ", ".join(
            x for x in (
                f"{_n(eager.gemm_per_call)} per call" if eager.gemm_per_call else "",
                rate,
            ) if x
        )
        if detail:
            s += f" ({detail})"
        if o is None or o.bound() == "gemm":
            who = f"{o.name} runs the same library GEMMs" if o is not None else "compile keeps the library GEMMs"
            return s + f"; {who} — compile cannot help here"
        return s + f"; {o.name} adds {_pct(1.0 - (o.busy or 0.0))} of each call outside them"
    s = (
        f"operators other than GEMMs take {_pct((eager.busy or 0.0) - (eager.gemm_share or 0.0))} "
        f"of each eager call ({_n(eager.kernels)} {unit})"
    )
    if o is not None and o.kernels is not None and eager.kernels is not None:
        if o.kernels < eager.kernels - 0.05:
            s += f"; {o.name} fuses them into {_n(o.kernels)} — this is where compile helps"
        else:
            s += f"; {o.name} runs as many ({_n(o.kernels)}): no fusion found"
    return s


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def evidence(run: Any, name: str) -> Evidence | None:
    """The sentence's evidence for variant ``name`` of a run (from run.json's compact copy)."""
    from ..config import CUDAGRAPH_VARIANTS

    table = run.measurement.get("why") if isinstance(run.measurement, dict) else None
    data = table.get(name) if isinstance(table, dict) else None
    if not isinstance(data, dict):
        return None
    v = run.variants.get(name)
    st = v.stats() if v is not None and run.samples_loaded else None
    ms = _num(getattr(st, "median", None)) or _num(data.get("wall_ms_per_call"))
    device = "cuda" if data.get("device") == "cuda" else "cpu"
    kernels = _num(data.get("kernels_per_call"))
    fused = _num(data.get("fused_kernels_in_code"))
    if device == "cpu" and kernels is not None and fused:
        kernels += fused
    dtype = run.config.dtype if getattr(run, "config", None) is not None else None
    dev_name = data.get("device_name") if isinstance(data.get("device_name"), str) else None
    return Evidence(
        name=name,
        device=device,
        ms=ms,
        kernels=kernels,
        busy=_num(data.get("busy")),
        gemm_share=_num(data.get("gemm_share")),
        gemm_per_call=_num(data.get("gemm_per_call")),
        flops_per_call=_num(run.measurement.get("flops_per_call")),
        peak_tflops=peak_tflops(dev_name, dtype) if device == "cuda" else None,
        compiled=data.get("compiled") is True,
        cudagraphs=name in CUDAGRAPH_VARIANTS and device == "cuda",
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


def variant_lines(v: VariantWhy, run: Any | None = None, ops: bool = True) -> list[str]:
    """The evidence of one variant as plain text lines (``ops``: with the top operators)."""
    out = [f"== {v.name} ({v.device or '?'}{', ' + v.device_name if v.device_name else ''})"]
    if run is not None:
        why = sentence(run, v.name)
        if why:
            out.append(f"why: {why}")
    p = v.profile
    if p is not None:
        out.append(
            f"profile: {p.calls} steady-state calls, {_ms(p.wall_ms_per_call)} per call; "
            f"{_n(p.kernels_per_call)} {p.kernels_counted or 'kernels'}"
        )
        if p.fused_kernels_in_code:
            out.append(f"  + {p.fused_kernels_in_code} fused kernels called by the output code")
        if p.busy is not None:
            out.append(f"  busy {_pct(p.busy)} ({p.busy_counted}); GEMMs {_pct(p.gemm_share or 0.0)}")
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
                out.append(f"    {b.reason}")
        else:
            out.append("graph breaks: none")
        if v.recompiles:
            out.append(f"recompiles: {len(v.recompiles)}")
            for rc in v.recompiles:
                where = " (inside the timed window)" if rc.in_window else ""
                out.append(f"  {rc.frame}{where}: {rc.reason}")
        else:
            out.append("recompiles: none")
        if v.recompile_limit:
            out.append(f"recompile limit hit: {v.recompile_limit}")
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
