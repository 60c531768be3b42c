"""Why a variant is as fast as it is: evidence collected in the worker, outside every timed window.

Per variant, a :class:`WhyCollector` gathers

- what Dynamo compiled for its first call and for any recompile, from torch's
  own compile metrics (``torch._dynamo.utils.get_compilation_metrics``): the
  compile time split into named phases, the FX-graph cache hits, each
  recompile's guard reason, the recompile limit when it was hit;
- graph breaks with their reason and the user's source line, heard on
  Dynamo's ``graph_breaks`` log while the real compile ran (no re-trace),
  and apart from them the functions Dynamo gave up on (``frames_skipped``:
  they ran eagerly, e.g. one holding a GRU);
- the path and text of Inductor's output code for each compiled graph;
- after the variant's timed window and checks: a short ``torch.profiler``
  capture of a few steady-state calls (Chrome trace, top operators, kernels
  or operators per call, the elements they work on, time inside operators
  or kernels and the GEMMs' share of it, call by call).

Function names are shown as the user wrote them: each variant's ``forward``
is a renamed copy (``forward_<variant>``) and
:func:`~.compile_records.user_names` takes the suffix off again.

The collector and the event live here; what it listens to and reads lives in
:mod:`.compile_logs` (Dynamo's and Inductor's logs), :mod:`.compile_records`
(torch's compile records, the output code) and :mod:`.profiling` (the
steady-state profile and its figures).

Everything degrades to words: a figure that cannot be had is named in
``missing`` with the reason, and nothing here ever fails a run. The worker
writes no files: the evidence travels as one ``diagnostics`` event and the
supervising side writes it into the run folder (``results.explain.why``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from ..core import protocol
from .compile_logs import LogTap
from .compile_records import (
    LIMIT_FRAME,
    cache_counts,
    compile_metrics,
    compile_phases,
    frame_id,
    frame_text,
    output_code,
    record_key,
    refused,
    seconds,
    timed_lengths,
    timed_since,
    user_names,
)
from .profiling import ProfiledRun, profile_calls


@dataclass
class _Evidence:
    """What is known about one variant so far."""

    name: str
    first_records: list[Any] = field(default_factory=list)
    first_call_ms: float | None = None
    build_s: float = 0.0
    recompiles: list[dict[str, Any]] = field(default_factory=list)
    breaks: list[dict[str, Any]] = field(default_factory=list)
    #: functions Dynamo gave up on (run eagerly, no graph), with the reason and the place
    skipped: list[dict[str, Any]] = field(default_factory=list)
    code_paths: list[str] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)


class RunnerView(ProfiledRun, Protocol):
    """What the collector reads from the benchmark runner."""

    sink: Any


class WhyCollector:
    """Collects each variant's evidence and sends it as a ``diagnostics`` event."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._tap: LogTap | None = LogTap() if enabled else None
        self._seen = {record_key(m) for m in compile_metrics()} if enabled else set()
        self._variants: dict[str, _Evidence] = {}
        self._marks: dict[str, int] = {}
        self._heard = (0, 0, 0)
        #: frame id (of compile ids "<frame>/<n>") -> the frame's name and place
        self._frames: dict[str, str] = {}

    def _ev(self, name: str) -> _Evidence:
        return self._variants.setdefault(name, _Evidence(name))

    def _new_records(self) -> list[Any]:
        new = []
        for m in compile_metrics():
            key = record_key(m)
            if key not in self._seen:
                self._seen.add(key)
                new.append(m)
            text = frame_text(m)
            if text:
                self._frames[frame_id(m)] = text
        return new

    def _frame_of(self, m: Any, limits: list[str]) -> str:
        """The frame of a compile record, from its earlier records or the limit warning when unnamed."""
        text = frame_text(m) or self._frames.get(frame_id(m), "")
        if not text:
            found = next((f for f in map(LIMIT_FRAME.search, limits) if f is not None), None)
            if found is not None:
                text = f"{found.group(1)} ({found.group(2)})"
        return text

    def _new_logs(self, ev: _Evidence) -> None:
        tap = self._tap
        if tap is None:
            return
        b, c, lim = self._heard
        for found in tap.breaks[b:]:
            rows = ev.skipped if found.get("skipped") else ev.breaks
            same = next(
                (x for x in rows if (x["file"], x["line"], x["reason"]) ==
                 (found["file"], found["line"], found["reason"])),
                None,
            )
            if same is not None:
                same["count"] += 1
            else:
                rows.append({k: v for k, v in found.items() if k != "skipped"} | {"count": 1})
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
            self._marks = timed_lengths()
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
            ev.build_s = timed_since(self._marks, "compile_file") + timed_since(
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
                        "compile_s": seconds(getattr(m, "entire_frame_compile_time_s", None)),
                        "in_window": in_window,
                        "refused": refused(m),
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
            why["frames_skipped"] = [
                {**b, "reason": user_names(str(b.get("reason", "")), name)} for b in ev.skipped
            ]
            why["recompiles"] = [
                {**r, "frame": user_names(r["frame"], name), "reason": user_names(r["reason"], name)}
                for r in ev.recompiles
            ]
            why["recompile_limit"] = user_names(ev.limits[0], name) if ev.limits else None
            info = why["compile"]
            if isinstance(info, dict) and info.get("frames"):
                info["frames"] = [user_names(f, name) for f in info["frames"]]
            code, kernels = output_code(ev.code_paths, missing)
            why["output_code"] = kernels
        profile, trace = profile_calls(runner, step, ms_per_call, missing)
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
            "compiled_s": round(sum(seconds(getattr(m, "entire_frame_compile_time_s", None))
                                    for m in records), 6),
            "phases": phases,
            "cache": cache_counts(records),
            "cudagraph_skips": skips,
        }
