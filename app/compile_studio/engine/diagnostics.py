"""Why a variant is as fast as it is: evidence collected in the worker, outside every timed window.

Per variant, a :class:`WhyCollector` gathers

- what Dynamo compiled for its first call and for any recompile, from torch's
  own compile metrics (``torch._dynamo.utils.get_compilation_metrics``): the
  compile time split into named phases, the FX-graph cache hits, each
  recompile's guard reason, the recompile limit when it was hit;
- graph breaks with their reason and the user's source line, heard on
  Dynamo's ``graph_breaks`` log while the real compile ran (no re-trace);
- the path and text of Inductor's output code for each compiled graph;
- after the variant's timed window and checks: a short ``torch.profiler``
  capture of a few steady-state calls (Chrome trace, top operators, kernels
  or operators per call, the elements they work on, time inside operators
  or kernels and the GEMMs' share of it, call by call).

Function names are shown as the user wrote them: each variant's ``forward``
is a renamed copy (``forward_<variant>``) and :func:`user_names` takes the
suffix off again.

Everything degrades to words: a figure that cannot be had is named in
``missing`` with the reason, and nothing here ever fails a run. The worker
writes no files: the evidence travels as one ``diagnostics`` event and the
supervising side writes it into the run folder (``results.why``).
"""

from __future__ import annotations

import bisect
import contextlib
import linecache
import logging
import math
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from .. import protocol

#: Steady-state calls profiled per variant (fewer when one call is slow).
PROFILE_CALLS = 5
#: The profiled calls stop being added past this many milliseconds.
PROFILE_BUDGET_MS = 250.0
#: Largest Chrome trace sent to the supervisor; a larger one is left out, saying so.
MAX_TRACE_BYTES = 16 * 1024 * 1024
#: Longest output code file sent (per compiled graph) and most graphs sent.
MAX_CODE_BYTES = 512 * 1024
MAX_CODE_FILES = 8
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


_GRAPH_BREAK_LOGGERS = (
    "torch._dynamo.symbolic_convert.__graph_breaks",
    "torch._dynamo.convert_frame.__graph_breaks",
)
_OUTPUT_CODE_LOGGERS = (
    "torch._inductor.graph.__output_code",
    "torch._inductor.codecache.__output_code",
)
_LIMIT_LOGGER = "torch._dynamo.convert_frame"
_BREAK_AT = re.compile(r"[Gg]raph break.*? in user code at (.+):(\d+)\s*$", re.MULTILINE)


class _LogTap(logging.Handler):
    """Listens to Dynamo's and Inductor's own logs for graph breaks, output code and limits.

    Loggers that the user did not switch on (``TORCH_LOGS``) are raised to
    DEBUG for this handler only: their lines are not passed on to stderr.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.breaks: list[dict[str, Any]] = []
        self.code_paths: list[str] = []
        self.limits: list[str] = []
        self._restore: list[tuple[logging.Logger, int, bool]] = []
        for name in (*_GRAPH_BREAK_LOGGERS, *_OUTPUT_CODE_LOGGERS):
            lg = logging.getLogger(name)
            self._restore.append((lg, lg.level, lg.propagate))
            if not lg.isEnabledFor(logging.DEBUG):
                lg.setLevel(logging.DEBUG)
                lg.propagate = False
            lg.addHandler(self)
        limit = logging.getLogger(_LIMIT_LOGGER)
        self._restore.append((limit, limit.level, limit.propagate))
        limit.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            fmt = record.msg if isinstance(record.msg, str) else ""
            if record.name in _OUTPUT_CODE_LOGGERS:
                if fmt.startswith("Output code written to"):
                    args = record.args if isinstance(record.args, tuple) else ()
                    path = str(args[0]) if args else record.getMessage().split(": ", 1)[-1]
                    if path not in self.code_paths:
                        self.code_paths.append(path)
            elif record.name in _GRAPH_BREAK_LOGGERS:
                found = parse_graph_break(record.getMessage())
                if found is not None:
                    self.breaks.append(found)
            elif fmt.startswith("torch._dynamo hit config."):
                lines = record.getMessage().splitlines()
                self.limits.append(" ".join(ln.strip() for ln in lines[:3])[:400])
        except Exception:  # noqa: BLE001 - a log line never fails a run
            pass

    def close(self) -> None:
        for lg, level, propagate in self._restore:
            lg.removeHandler(self)
            lg.setLevel(level)
            lg.propagate = propagate
        super().close()


def parse_graph_break(message: str) -> dict[str, Any] | None:
    """Reason, file, line and source text of one ``graph_breaks`` log message."""
    at = _BREAK_AT.search(message)
    if at is None:
        return None
    file, line = at.group(1).strip(), int(at.group(2))
    reason = short_reason(message.split("Graph Break Reason:", 1)[-1])
    source = linecache.getline(file, line).strip() if os.path.isfile(file) else ""
    return {"reason": reason, "file": file, "line": line, "source": source[:300]}


def short_reason(text: str) -> str:
    """A graph break's reason in a line: what Dynamo could not trace, and its explanation."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("Encountered graph break when attempting")]
    head = lines[0] if lines else text.strip()
    expl = next((ln for ln in lines if ln.startswith("Explanation:")), "")
    hint = next((ln for ln in lines if ln.startswith("Hint:")), "")
    out = head
    if expl:
        out += " — " + expl[len("Explanation:"):].strip()
    if hint:
        out += " (hint: " + hint[len("Hint:"):].strip() + ")"
    return out[:600]


def _compile_metrics() -> list[Any]:
    try:
        from torch._dynamo.utils import get_compilation_metrics

        return list(get_compilation_metrics())
    except Exception:  # noqa: BLE001 - an older torch
        return []


def _record_key(m: Any) -> tuple[Any, ...]:
    return (getattr(m, "compile_id", None), getattr(m, "start_time_us", None), id(m))


class CompileRecords:
    """The compile records (``get_compilation_metrics``) torch adds after this object was made."""

    def __init__(self) -> None:
        self._seen = {_record_key(m) for m in _compile_metrics()}

    def new(self) -> list[Any]:
        """Records added since the last call (or since the object was made)."""
        out = []
        for m in _compile_metrics():
            key = _record_key(m)
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


def _timed_lengths() -> dict[str, int]:
    try:
        from torch._dynamo.utils import compilation_time_metrics

        return {k: len(v) for k, v in compilation_time_metrics.items()}
    except Exception:  # noqa: BLE001
        return {}


def _timed_since(marks: dict[str, int], key: str) -> float:
    try:
        from torch._dynamo.utils import compilation_time_metrics

        return float(sum(compilation_time_metrics.get(key, [])[marks.get(key, 0):]))
    except Exception:  # noqa: BLE001
        return 0.0


def _s(value: Any) -> float:
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
        whole = _s(getattr(m, "entire_frame_compile_time_s", None))
        backend = min(whole, _s(getattr(m, "backend_compile_time_s", None)))
        inductor = min(backend, _s(getattr(m, "inductor_compile_time_s", None)))
        codegen = min(inductor, _s(getattr(m, "code_gen_time_s", None)))
        autotune = min(inductor - codegen, _s(getattr(m, "compile_time_autotune_time_us", None)) / 1e6)
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


def _cache_counts(records: list[Any]) -> dict[str, int]:
    out = {"fx_graph_hits": 0, "fx_graph_misses": 0, "aot_hits": 0, "aot_misses": 0}
    for m in records:
        out["fx_graph_hits"] += int(getattr(m, "inductor_fx_local_cache_hit_count", 0) or 0)
        out["fx_graph_misses"] += int(getattr(m, "inductor_fx_local_cache_miss_count", 0) or 0)
        out["aot_hits"] += int(getattr(m, "aotautograd_local_cache_hit_count", 0) or 0)
        out["aot_misses"] += int(getattr(m, "aotautograd_local_cache_miss_count", 0) or 0)
    return out


def _frame_text(m: Any) -> str:
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


def _frame_id(m: Any) -> str:
    """The frame part of a compile id (``"3"`` of ``"3/1"``)."""
    return str(getattr(m, "compile_id", "") or "").split("/", 1)[0]


def _refused(m: Any) -> bool:
    """A compile record of a recompile Dynamo refused because its recompile limit was hit."""
    text = str(getattr(m, "fail_reason", "") or "").lower()
    return "recompile limit" in text or "cache_size_limit" in text or "cache size limit" in text


_LIMIT_FRAME = re.compile(r"function: '([^']+)' \(([^)]*)\)")


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


@dataclass
class _Evidence:
    """What is known about one variant so far."""

    name: str
    first_records: list[Any] = field(default_factory=list)
    first_call_ms: float | None = None
    build_s: float = 0.0
    recompiles: list[dict[str, Any]] = field(default_factory=list)
    breaks: list[dict[str, Any]] = field(default_factory=list)
    code_paths: list[str] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)


class RunnerView(Protocol):
    """What the collector reads from the benchmark runner."""

    sink: Any
    device: torch.device
    x: tuple[Any, ...]
    stop: Any
    timer: Any

    def _no_grad(self) -> contextlib.AbstractContextManager[Any]: ...


class WhyCollector:
    """Collects each variant's evidence and sends it as a ``diagnostics`` event."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._tap: _LogTap | None = _LogTap() if enabled else None
        self._seen = {_record_key(m) for m in _compile_metrics()} if enabled else set()
        self._variants: dict[str, _Evidence] = {}
        self._marks: dict[str, int] = {}
        self._heard = (0, 0, 0)
        #: frame id (of compile ids "<frame>/<n>") -> the frame's name and place
        self._frames: dict[str, str] = {}

    def _ev(self, name: str) -> _Evidence:
        return self._variants.setdefault(name, _Evidence(name))

    def _new_records(self) -> list[Any]:
        new = []
        for m in _compile_metrics():
            key = _record_key(m)
            if key not in self._seen:
                self._seen.add(key)
                new.append(m)
            text = _frame_text(m)
            if text:
                self._frames[_frame_id(m)] = text
        return new

    def _frame_of(self, m: Any, limits: list[str]) -> str:
        """The frame of a compile record, from its earlier records or the limit warning when unnamed."""
        text = _frame_text(m) or self._frames.get(_frame_id(m), "")
        if not text:
            found = next((f for f in map(_LIMIT_FRAME.search, limits) if f is not None), None)
            if found is not None:
                text = f"{found.group(1)} ({found.group(2)})"
        return text

    def _new_logs(self, ev: _Evidence) -> None:
        tap = self._tap
        if tap is None:
            return
        b, c, lim = self._heard
        for found in tap.breaks[b:]:
            same = next(
                (x for x in ev.breaks if (x["file"], x["line"], x["reason"]) ==
                 (found["file"], found["line"], found["reason"])),
                None,
            )
            if same is not None:
                same["count"] += 1
            else:
                ev.breaks.append({**found, "count": 1})
        ev.code_paths += [p for p in tap.code_paths[c:] if p not in ev.code_paths]
        ev.limits += tap.limits[lim:]
        self._heard = (len(tap.breaks), len(tap.code_paths), len(tap.limits))

    # -- hooks the runner calls ----------------------------------------------------------
    def first_call_starts(self, name: str) -> None:
        """Before a variant's first call: what Dynamo did before is not its own."""
        if not self.enabled:
            return
        try:
            self._new_records()
            if self._tap is not None:
                self._heard = (len(self._tap.breaks), len(self._tap.code_paths), len(self._tap.limits))
            self._marks = _timed_lengths()
        except Exception:  # noqa: BLE001
            pass

    def first_call_done(self, name: str, first_call_ms: float) -> None:
        """After a variant's first call (and its CUDA-graph recording): its compiles."""
        if not self.enabled:
            return
        try:
            ev = self._ev(name)
            ev.first_records = self._new_records()
            ev.first_call_ms = first_call_ms
            ev.build_s = _timed_since(self._marks, "compile_file") + _timed_since(
                self._marks, "async_compile.wait"
            )
            self._new_logs(ev)
        except Exception:  # noqa: BLE001
            pass

    def recompiled(self, name: str, in_window: bool) -> None:
        """Dynamo compiled again during this variant's calls: keep each recompile's reason."""
        if not self.enabled:
            return
        try:
            ev = self._ev(name)
            records = self._new_records()
            self._new_logs(ev)
            for m in records:
                reason = getattr(m, "recompile_reason", None) or getattr(m, "fail_reason", None)
                ev.recompiles.append(
                    {
                        "reason": str(reason or "no reason recorded by Dynamo")[:1000],
                        "frame": self._frame_of(m, ev.limits)[:400],
                        "compile_id": str(getattr(m, "compile_id", "") or ""),
                        "compile_s": _s(getattr(m, "entire_frame_compile_time_s", None)),
                        "in_window": in_window,
                        "refused": _refused(m),
                    }
                )
        except Exception:  # noqa: BLE001
            pass

    def report(self, runner: RunnerView, name: str, step: Callable[[tuple[Any, ...]], Any],
               compiled: bool, extra: dict[str, Any] | None = None,
               ms_per_call: float | None = None) -> None:
        """After the variant's timed window and checks: profile it and send the event."""
        if not self.enabled or runner.stop.is_set():
            return
        t0 = time.perf_counter()
        missing: list[str] = []
        try:
            why, trace, code = self._evidence(runner, name, step, compiled, ms_per_call, missing)
        except Exception as exc:  # noqa: BLE001 - diagnostics never fail a run
            why, trace, code = {}, None, []
            missing.append(f"diagnostics could not be collected: {type(exc).__name__}: {exc}"[:400])
        why.update(extra or {})
        why["missing"] = missing
        why["overhead_s"] = round(time.perf_counter() - t0, 4)
        try:
            runner.sink.event(
                protocol.DiagnosticsEvent(variant=name, why=why, trace=trace, code=code)
            )
        except Exception:  # noqa: BLE001
            pass

    def close(self) -> None:
        if self._tap is not None:
            self._tap.close()
            self._tap = None

    # -- the evidence ----------------------------------------------------------------------
    def _evidence(
        self,
        runner: RunnerView,
        name: str,
        step: Callable[[tuple[Any, ...]], Any],
        compiled: bool,
        ms_per_call: float | None,
        missing: list[str],
    ) -> tuple[dict[str, Any], str | None, list[dict[str, str]]]:
        ev = self._ev(name)
        self._new_logs(ev)
        why: dict[str, Any] = {
            "version": 1,
            "device": runner.device.type,
            "compiled": compiled,
            "torch": torch.__version__,
        }
        if runner.device.type == "cuda":
            with contextlib.suppress(Exception):
                why["device_name"] = torch.cuda.get_device_name(runner.device)
        code: list[dict[str, str]] = []
        if compiled:
            why["compile"] = self._compile_info(ev, missing)
            why["graph_breaks"] = [
                {**b, "reason": user_names(str(b.get("reason", "")), name)} for b in ev.breaks
            ]
            why["recompiles"] = [
                {**r, "frame": user_names(r["frame"], name), "reason": user_names(r["reason"], name)}
                for r in ev.recompiles
            ]
            why["recompile_limit"] = user_names(ev.limits[0], name) if ev.limits else None
            info = why["compile"]
            if isinstance(info, dict) and info.get("frames"):
                info["frames"] = [user_names(f, name) for f in info["frames"]]
            code, kernels = _output_code(ev.code_paths, missing)
            why["output_code"] = kernels
        profile, trace = _profile(runner, step, ms_per_call, missing)
        if profile is not None and compiled and why.get("output_code"):
            fused = sum(k.get("fused", 0) for k in why["output_code"])
            profile["fused_kernels_in_code"] = fused
        why["profile"] = profile
        return why, trace, code

    def _compile_info(self, ev: _Evidence, missing: list[str]) -> dict[str, Any] | None:
        records = ev.first_records
        if not records:
            missing.append(
                "compile phases: torch recorded no compile for the first call "
                "(a cached or skipped frame, or an older torch without compile metrics)"
            )
            return {"graphs": 0, "first_call_ms": ev.first_call_ms, "phases": {}}
        phases = compile_phases(records, ev.build_s)
        skips = sorted({str(r) for m in records if (r := getattr(m, "cudagraph_skip_reason", None))})
        return {
            "graphs": sum(1 for m in records if getattr(m, "has_guarded_code", True)),
            "frames": [f[:400] for f in (self._frame_of(m, ev.limits) for m in records) if f][:50],
            "first_call_ms": ev.first_call_ms,
            "compiled_s": round(sum(_s(getattr(m, "entire_frame_compile_time_s", None))
                                    for m in records), 6),
            "phases": phases,
            "cache": _cache_counts(records),
            "cudagraph_skips": skips,
        }


def _output_code(paths: list[str], missing: list[str]) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
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


def _profile(
    runner: RunnerView,
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
    with runner._no_grad(), profile(activities=activities, record_shapes=True) as prof:
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
    index = {id(m): k for k, m in enumerate(marks)}
    self_us: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    busy = [0.0] * n
    gemm = [0.0] * n
    outer = [0] * n
    gemms = [0] * n
    graphs = [0] * n
    elements = [0] * n
    for e in events:
        if _is_cuda_event(e) or str(e.name).startswith(CALL_MARK):
            continue
        call = _call_of(e)
        if call is None or id(call) not in index:
            continue
        k = index[id(call)]
        name = str(e.name)
        self_us.setdefault(name, [0.0] * n)[k] += float(getattr(e, "self_cpu_time_total", 0.0) or 0.0)
        counts[name] = counts.get(name, 0) + 1
        if name.startswith("## Call CompiledFxGraph"):
            graphs[k] += 1
            if not cuda:  # Inductor's own C++ kernels run inside it, unseen by the profiler
                own = float(getattr(e, "self_cpu_time_total", 0.0) or 0.0)
                busy[k] += own
        if _outermost_op(e):
            outer[k] += 1
            elements[k] += _elements(e)
            if not cuda:
                total = _us(e)
                busy[k] += total
                if is_gemm(name):
                    gemm[k] += total
                    gemms[k] += 1
    ops: list[dict[str, Any]] = []
    for name, per in self_us.items():
        ops.append(
            {
                "name": name[:200],
                "self_ms_per_call": round(_median(per) / 1000.0, 6),
                "calls_per_call": round(counts[name] / n, 3),
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
    figures: dict[str, Any] = {
        "calls": n,
        "wall_ms_per_call": round(wall_us / 1000.0, 6),
        "ops": ops[:TOP_OPS],
        "ops_per_call": round(sum(outer) / n, 3),
        "compiled_graphs_per_call": round(sum(graphs) / n, 3),
        "elements_per_call": round(_median([float(x) for x in elements]), 1),
    }
    if cuda:
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
    else:
        figures["kernels_per_call"] = figures["ops_per_call"]
        figures["gemm_per_call"] = round(sum(gemms) / n, 3)
        figures["kernels_counted"] = (
            "operators the call dispatched (aten ops no other op called); a compiled "
            "graph's fused C++ kernels are counted from its output code"
        )
        figures["busy"] = round(min(1.0, _median([b / w for b, w in zip(busy, wall) if w > 0])), 4)
        figures["busy_counted"] = (
            "time inside those operators and inside compiled graphs ÷ wall time of the call"
        )
        figures["gemm_share"] = round(_median([g / w for g, w in zip(gemm, wall) if w > 0]), 4)
        figures["gemm_share_of_ops_counted"] = (
            "GEMM operators' time ÷ time inside the outermost operators and compiled graphs"
        )
    shares = [round(min(1.0, g / b), 4) for g, b in zip(gemm, busy) if b > 0]
    figures["gemm_share_of_ops"] = round(_median(shares), 4) if shares else None
    figures["gemm_share_of_ops_calls"] = shares
    figures["op_ms_per_call"] = round(_median(busy) / 1000.0, 6) if any(busy) else None
    figures["op_ms_calls"] = [round(b / 1000.0, 6) for b in busy if b > 0]
    figures["wall_ms_calls"] = [round(w / 1000.0, 6) for w in wall]
    figures["op_spread"] = _spread(busy)
    figures["wall_spread"] = _spread(wall)
    return figures
