"""The diagnostics files of a run folder: writing why.json and its companions, and reading them back.

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
``results.records.schema``: regular files under a size cap, typed and bounded
values, problems listed, file names made from variant names (never taken
from the content). No Qt, no torch.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.protocol import DiagnosticsEvent
from ..records.schema import (
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
    skipped = [b for b in why.get("frames_skipped") or [] if isinstance(b, dict)]
    out["frames_skipped"] = len(skipped)
    out["skip_reason"] = _cut(str(skipped[0].get("reason") or ""), 300) or None if skipped else None
    info = why.get("compile")
    graphs = info.get("graphs") if isinstance(info, dict) else None
    out["graphs"] = graphs if isinstance(graphs, int) and not isinstance(graphs, bool) else None
    out["recompiles"] = len(why.get("recompiles") or [])
    limit = why.get("recompile_limit")
    out["recompile_limit"] = short_limit(limit) if isinstance(limit, str) and limit.strip() else None
    return out


def record_diagnostics(folder: Path, event: DiagnosticsEvent) -> None:
    """Write one variant's diagnostics into the run folder (atomically, file by file)."""
    from ..storage.file_io import atomic_write_text

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
    #: functions Dynamo gave up on: they ran eagerly (no graph), e.g. one holding a GRU
    frames_skipped: list[GraphBreak] = field(default_factory=list)
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
    skip=("name", "profile", "compile", "graph_breaks", "frames_skipped", "recompiles", "code", "trace"),
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
    v.frames_skipped = _rows(data.get("frames_skipped"), _BREAK, GraphBreak, problems)
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
