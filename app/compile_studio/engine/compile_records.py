"""Torch's compile records and Inductor's output code, read: phases, caches, recompiles, kernels.

Function names are shown as the user wrote them: each variant's ``forward``
is a renamed copy (``forward_<variant>``) and :func:`user_names` takes the
suffix off again.
"""

from __future__ import annotations

import math
import re
from typing import Any

#: Longest output code file sent (per compiled graph) and most graphs sent.
MAX_CODE_BYTES = 512 * 1024
MAX_CODE_FILES = 8


def compile_metrics() -> list[Any]:
    """Torch's compile records so far (``get_compilation_metrics``); none on an older torch."""
    try:
        from torch._dynamo.utils import get_compilation_metrics

        return list(get_compilation_metrics())
    except Exception:  # noqa: BLE001 - an older torch
        return []


def record_key(m: Any) -> tuple[Any, ...]:
    """What tells one compile record from another."""
    return (getattr(m, "compile_id", None), getattr(m, "start_time_us", None), id(m))


class CompileRecords:
    """The compile records (``get_compilation_metrics``) torch adds after this object was made."""

    def __init__(self) -> None:
        self._seen = {record_key(m) for m in compile_metrics()}

    def new(self) -> list[Any]:
        """Records added since the last call (or since the object was made)."""
        out = []
        for m in compile_metrics():
            key = record_key(m)
            if key not in self._seen:
                self._seen.add(key)
                out.append(m)
        return out


def guard_reasons(records: list[Any], variant: str = "", limit: int = 3, chars: int = 300) -> list[str]:
    """Dynamo's guard-failure reasons of the recompiles among ``records``: the first ``limit``, cut."""
    out: list[str] = []
    for m in records:
        reason = getattr(m, "recompile_reason", None)
        if not reason:
            continue
        text = " ".join(user_names(str(reason), variant).split())
        text = text if len(text) <= chars else text[: chars - 1] + "…"
        if text not in out:
            out.append(text)
        if len(out) >= limit:
            break
    return out


def timed_lengths() -> dict[str, int]:
    """How many times each of torch's compile timers has run so far (marks for :func:`timed_since`)."""
    try:
        from torch._dynamo.utils import compilation_time_metrics

        return {k: len(v) for k, v in compilation_time_metrics.items()}
    except Exception:  # noqa: BLE001
        return {}


def timed_since(marks: dict[str, int], key: str) -> float:
    """Seconds compile timer ``key`` counted since ``marks`` were taken."""
    try:
        from torch._dynamo.utils import compilation_time_metrics

        return float(sum(compilation_time_metrics.get(key, [])[marks.get(key, 0):]))
    except Exception:  # noqa: BLE001
        return 0.0


def seconds(value: Any) -> float:
    """A compile record's figure as a float; 0 when missing or not finite."""
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def compile_phases(records: list[Any], build_s: float) -> dict[str, float]:
    """Seconds per named compile phase, from torch's nested compile timers.

    Each timer contains the next (whole frame ⊃ backend ⊃ Inductor ⊃ codegen),
    so the phases are their differences: they add up to the frames' compile
    time. ``build_s`` is the C++ compile and Triton wait measured inside
    codegen (``compile_file``, ``async_compile.wait``). On an FX-graph or
    AOT-autograd cache hit Inductor does not run: the backend's time is
    ``cache load``.
    """
    phases = {
        "Dynamo tracing": 0.0,
        "AOT autograd": 0.0,
        "Inductor lowering": 0.0,
        "autotuning": 0.0,
        "Inductor codegen": 0.0,
        "C++/Triton build": 0.0,
        "cache load": 0.0,
    }
    for m in records:
        whole = seconds(getattr(m, "entire_frame_compile_time_s", None))
        backend = min(whole, seconds(getattr(m, "backend_compile_time_s", None)))
        inductor = min(backend, seconds(getattr(m, "inductor_compile_time_s", None)))
        codegen = min(inductor, seconds(getattr(m, "code_gen_time_s", None)))
        autotune = min(inductor - codegen, seconds(getattr(m, "compile_time_autotune_time_us", None)) / 1e6)
        phases["Dynamo tracing"] += whole - backend
        hits = int(getattr(m, "inductor_fx_local_cache_hit_count", 0) or 0) + int(
            getattr(m, "aotautograd_local_cache_hit_count", 0) or 0
        )
        # a cache hit skips Inductor: the backend's time is loading the cached graph
        phases["cache load" if hits and not inductor else "AOT autograd"] += backend - inductor
        phases["Inductor lowering"] += inductor - codegen - autotune
        phases["autotuning"] += autotune
        phases["Inductor codegen"] += codegen
    build = min(build_s, phases["Inductor codegen"])
    phases["Inductor codegen"] -= build
    phases["C++/Triton build"] = build
    return {k: round(v, 6) for k, v in phases.items()}


def cache_counts(records: list[Any]) -> dict[str, int]:
    """FX-graph and AOT-autograd cache hits and misses of ``records``."""
    out = {"fx_graph_hits": 0, "fx_graph_misses": 0, "aot_hits": 0, "aot_misses": 0}
    for m in records:
        out["fx_graph_hits"] += int(getattr(m, "inductor_fx_local_cache_hit_count", 0) or 0)
        out["fx_graph_misses"] += int(getattr(m, "inductor_fx_local_cache_miss_count", 0) or 0)
        out["aot_hits"] += int(getattr(m, "aotautograd_local_cache_hit_count", 0) or 0)
        out["aot_misses"] += int(getattr(m, "aotautograd_local_cache_miss_count", 0) or 0)
    return out


def frame_text(m: Any) -> str:
    """``name (file:line)`` of the frame a compile record is about; "" when torch named none.

    A recompile that Dynamo refused at its recompile limit is recorded without
    its frame: the collector names it from the frame's earlier records.
    """
    name = getattr(m, "co_name", None)
    if not name:
        return ""
    file = getattr(m, "co_filename", None)
    line = getattr(m, "co_firstlineno", None)
    if not file:
        return str(name)
    return f"{name} ({file}:{line})" if line else f"{name} ({file})"


def frame_id(m: Any) -> str:
    """The frame part of a compile id (``"3"`` of ``"3/1"``)."""
    return str(getattr(m, "compile_id", "") or "").split("/", 1)[0]


def refused(m: Any) -> bool:
    """A compile record of a recompile Dynamo refused because its recompile limit was hit."""
    text = str(getattr(m, "fail_reason", "") or "").lower()
    return "recompile limit" in text or "cache_size_limit" in text or "cache size limit" in text


LIMIT_FRAME = re.compile(r"function: '([^']+)' \(([^)]*)\)")


def variant_tag(variant: str) -> str:
    """How a variant's name appears in its forward's own code object (see ``models.own_forward``)."""
    return variant.replace("-", "_")


def user_names(text: str, variant: str) -> str:
    """``text`` with the user's function names: ``forward_<variant>`` is shown as ``forward``.

    Each variant calls a copy of the model's ``forward`` renamed
    ``<name>_<variant>`` (Dynamo's resume functions carry the name too, as in
    ``torch_dynamo_resume_in_forward_default_at_13``); the suffix is the
    app's, not the user's.
    """
    tag = variant_tag(variant)
    if not tag or not text:
        return text
    return re.sub(rf"(?<=[A-Za-z0-9])_{re.escape(tag)}(?=_at_\d|[^A-Za-z0-9_]|$)", "", text)


def code_kernels(code: str) -> dict[str, int]:
    """Kernels Inductor's output code calls per call: its fused kernels and library calls."""
    head = re.search(r"^([ \t]*)def call\(", code, re.MULTILINE)
    body = code
    if head is not None:
        indent = len(head.group(1))
        lines = []
        for ln in code[head.end():].splitlines()[1:]:
            if ln.strip() and len(ln) - len(ln.lstrip()) <= indent:
                break
            lines.append(ln)
        body = "\n".join(lines)
    fused = len(re.findall(r"\b(?:cpp_fused_\w+|triton_\w+)(?:\.run)?\(", body))
    extern = len(re.findall(r"\bextern_kernels\.\w+\(|\btorch\.ops\.\w+\.\w+(?:\.\w+)?\(", body))
    return {"fused": fused, "library": extern}



def output_code(paths: list[str], missing: list[str]) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The text of each output code file (capped) and the kernels each calls."""
    code: list[dict[str, str]] = []
    kernels: list[dict[str, Any]] = []
    for path in paths[:MAX_CODE_FILES]:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read(MAX_CODE_BYTES + 1)
        except OSError as exc:
            missing.append(f"output code {path}: cannot be read ({exc.strerror or exc})")
            kernels.append({"path": path})
            continue
        if len(text) > MAX_CODE_BYTES:
            text = text[:MAX_CODE_BYTES] + "\n# … cut: the file is longer than 512 KiB\n"
        code.append({"path": path, "code": text})
        kernels.append({"path": path, **code_kernels(text)})
    if len(paths) > MAX_CODE_FILES:
        missing.append(f"output code: {len(paths) - MAX_CODE_FILES} more graphs not kept")
    return code, kernels
