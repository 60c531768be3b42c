"""The timed loop: builds each variant, compiles it, warms it up, measures it.

Reports everything through an :class:`EventSink` (protocol events); holds no
state a supervisor needs after the fact. Pure torch, no Qt.
"""

from __future__ import annotations

import math
import re
import resource
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from .. import protocol
from ..config import CUDAGRAPH_VARIANTS, BenchmarkConfig, format_bytes
from .model import MLP, TORCH_DTYPES, build_model

#: allclose tolerances against the fp64 reference, per dtype
TOLERANCES = {
    "fp32": (1e-4, 1e-4),
    "tf32": (2e-2, 2e-2),
    "bf16": (5e-2, 5e-2),
    "fp16": (1e-2, 1e-2),
}


class EventSink(Protocol):
    def event(self, event: protocol.Event) -> None: ...

    def sample(
        self, variant: str, phase: str, iteration: int, wall_ms: float, device_ms: float | None
    ) -> None: ...

    def flush(self) -> None: ...


class Stopped(Exception):
    """Raised inside the loop when a stop was asked for."""


def classify_error(exc: BaseException) -> protocol.ErrorKind:
    """Protocol error kind for an exception raised while running a variant."""
    if isinstance(exc, MemoryError) or "bad_alloc" in str(exc) or "MemoryError" in str(exc):
        return protocol.ErrorKind.OOM
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(exc, oom_type):
        return protocol.ErrorKind.OOM
    text = str(exc)
    if "out of memory" in text.lower() or "not enough memory" in text.lower() or (
        "can't allocate memory" in text.lower()
    ):
        return protocol.ErrorKind.OOM
    mod = type(exc).__module__
    if mod.startswith(("torch._dynamo", "torch._inductor")) or "Compiler" in type(exc).__name__:
        return protocol.ErrorKind.COMPILE_FAILED
    return protocol.ErrorKind.INTERNAL


def _alloc_size(text: str) -> str | None:
    m = re.search(r"allocate (\d+) bytes", text)
    if m:
        return format_bytes(int(m.group(1)))
    m = re.search(r"allocate ([\d.]+ [KMGT]i?B)", text)
    return m.group(1) if m else None


def _first_line(exc: BaseException, limit: int = 600) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # Dynamo wraps the real cause: prefer its most specific line.
    msg = lines[0] if lines else text
    for ln in lines:
        if "Error" in ln and ln is not lines[0] and len(ln) < 300:
            msg = f"{msg} — {ln.strip()}"
            break
    return msg[:limit]


@dataclass
class _Variant:
    name: str
    model: MLP
    call: Any
    optimizer: torch.optim.Optimizer | None = None
    iteration: int = 0
    compiled: bool = False
    #: frames Dynamo compiled during this variant's own calls after the first
    recompiles: int = 0
    #: ... of which inside the timed window
    recompiles_in_window: int = 0
    first_output: torch.Tensor | None = None
    mem_before: int = 0
    failed: bool = False


def _dynamo_counts() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return {
        "frames": int(counters["frames"].get("total", 0)),
        "graphs": int(counters["stats"].get("unique_graphs", 0)),
        "breaks": int(sum(counters["graph_break"].values())),
    }


def _break_reasons() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return dict(counters["graph_break"])


def _rss_peak_bytes() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


class BenchmarkRunner:
    """Runs one validated :class:`BenchmarkConfig` and reports through a sink."""

    def __init__(
        self,
        config: BenchmarkConfig,
        sink: EventSink,
        stop: threading.Event | None = None,
        device: str | None = None,
    ):
        self.config = config
        self.sink = sink
        self.stop = stop or threading.Event()
        self.device = torch.device(device or _resolve_device(config.device))
        self.is_cuda = self.device.type == "cuda"
        if self.is_cuda:
            # CUDA events and streams belong to the current device
            torch.cuda.set_device(self.device)
        self.dtype = TORCH_DTYPES[config.dtype]
        self.use_events = self.is_cuda and config.timer in ("auto", "cuda_events")
        self.training = config.workload == "training"
        self._flush_buf: torch.Tensor | None = None

    # -- public -----------------------------------------------------------
    def run(self) -> protocol.RunStatus:
        """Run every variant: ``complete``, ``stopped``, or ``failed`` (nothing could run)."""
        cfg = self.config
        self._set_precision()
        try:
            self._prepare_inputs()
        except BaseException as exc:  # noqa: BLE001 - reported; nothing was measured yet
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._error(None, exc, "preparing the input and the fp64 reference")
            return protocol.RunStatus.FAILED
        try:
            if cfg.interleave:
                self._run_interleaved()
            else:
                for name in cfg.variants:
                    v = self._prepare(name)
                    if v is None:
                        continue
                    self._measure(v, cfg.iterations)
                    self._finish(v)
                    del v
                    if self.is_cuda:
                        torch.cuda.empty_cache()
        except Stopped:
            self.sink.flush()
            return protocol.RunStatus.STOPPED
        self.sink.flush()
        return protocol.RunStatus.COMPLETE

    # -- steps -------------------------------------------------------------
    def _prepare_inputs(self) -> None:
        """The input batch, and the fp64 reference output every variant is checked against."""
        cfg = self.config
        sizes = cfg.layer_sizes()
        torch.manual_seed(cfg.seed)
        gen = torch.Generator().manual_seed(cfg.seed + 1)
        x_cpu = torch.randn(cfg.batch_size, sizes[0], generator=gen)
        self.x = x_cpu.to(self.device, self.dtype)
        self._sync()
        reference = build_model(sizes, cfg.activation, cfg.seed).double()
        with torch.no_grad():
            self.reference = reference(x_cpu.double())
        del reference
        if cfg.cold_l2:
            self._flush_buf = torch.empty(
                _l2_flush_elems(self.device), dtype=torch.int8, device=self.device
            )

    def _set_precision(self) -> None:
        tf32 = self.config.dtype == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.set_float32_matmul_precision("high" if tf32 else "highest")

    def _check_stop(self) -> None:
        if self.stop.is_set():
            raise Stopped

    def _phase(self, name: str, phase: str, planned: int) -> None:
        self.sink.event(
            protocol.PhaseEvent(variant=name, phase=protocol.Phase(phase), iterations=planned)
        )

    def _error(self, name: str | None, exc: BaseException, what: str) -> None:
        kind = classify_error(exc)
        msg = _first_line(exc)
        if kind == protocol.ErrorKind.OOM:
            size = _alloc_size(str(exc))
            est = format_bytes(self.config.estimated_memory_bytes())
            tried = f"tried to allocate {size}; " if size else ""
            msg = (
                f"out of memory on {self.device} while {what} "
                f"({tried}this model and batch need about {est}). "
                "Use a smaller batch or model."
            )
        elif kind == protocol.ErrorKind.COMPILE_FAILED:
            msg = f"torch.compile failed for {name}: {msg}"
        self.sink.event(
            protocol.ErrorEvent(
                kind=kind,
                message=msg,
                variant=name or None,
                traceback="".join(traceback.format_exception(exc))[-8000:],
            )
        )

    def _prepare(self, name: str) -> _Variant | None:
        """Build, compile (first call) and warm up one variant; None if it failed."""
        cfg = self.config
        self._check_stop()
        self._phase(name, "build", 0)
        mem_before = self._memory_mark()
        try:
            model = build_model(cfg.layer_sizes(), cfg.activation, cfg.seed, name)
            model = model.to(self.device, self.dtype)
            model.train(self.training)
            optimizer = (
                torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
                if self.training
                else None
            )
            call: Any = model
            if name != "eager":
                call = self._compile(model, name)
            v = _Variant(name, model, call, optimizer, mem_before=mem_before)
        except Stopped:
            raise
        except BaseException as exc:  # noqa: BLE001 - reported, others go on
            self._error(name, exc, "building the model")
            return None
        # first call: compile time for compiled variants, reported on its own
        if name != "eager":
            self._phase(name, "compile", 1)
        before = _dynamo_counts()
        reasons_before = _break_reasons()
        try:
            t0 = time.perf_counter_ns()
            out = self._step(v)
            self._sync()
            first_ms = (time.perf_counter_ns() - t0) / 1e6
        except Stopped:
            raise
        except BaseException as exc:  # noqa: BLE001
            self._error(name, exc, "compiling" if name != "eager" else "running the first call")
            return None
        after = _dynamo_counts()
        v.first_output = out.detach().to("cpu", torch.float64)
        if name != "eager":
            reasons = {
                k: n - reasons_before.get(k, 0)
                for k, n in _break_reasons().items()
                if n - reasons_before.get(k, 0) > 0
            }
            self.sink.event(
                protocol.CompiledEvent(
                    variant=name,
                    compile_s=first_ms / 1000.0,
                    first_call_ms=first_ms,
                    graphs=after["graphs"] - before["graphs"],
                    graph_breaks=after["breaks"] - before["breaks"],
                    break_reasons=[_short_reason(r) for r in reasons],
                    recompiles=0,
                )
            )
            v.compiled = True
        # warm-up: recorded, excluded from stats
        if cfg.warmup:
            self._phase(name, "warmup", cfg.warmup)
            try:
                self._calls(v, "warmup", cfg.warmup)
            except Stopped:
                raise
            except BaseException as exc:  # noqa: BLE001
                self._error(name, exc, "warming up")
                return None
        return v

    def _calls(self, v: _Variant, phase: str, count: int) -> None:
        """``count`` timed calls of one variant; recompiles they caused are its own.

        Variants never run concurrently, so the change of Dynamo's global frame
        counter around a group of one variant's calls belongs to that variant
        (also in interleaved mode, where another variant may compile in between).
        """
        before = _dynamo_counts()["frames"]
        try:
            for _ in range(count):
                self._timed(v, phase)
        finally:
            new = _dynamo_counts()["frames"] - before
            v.recompiles += new
            if phase == "measure":
                v.recompiles_in_window += new

    def _compile(self, model: MLP, name: str) -> Any:
        from ..engine.environment import compile_modes

        kwargs: dict[str, Any] = {"fullgraph": self.config.fullgraph}
        if self.config.dynamic:
            kwargs["dynamic"] = True
        if name in compile_modes():
            kwargs["backend"] = "inductor"
            if name != "default":
                kwargs["mode"] = name
        else:
            kwargs["backend"] = name
        return torch.compile(model, **kwargs)

    def _step(self, v: _Variant) -> torch.Tensor:
        cudagraphs = v.name in CUDAGRAPH_VARIANTS and self.is_cuda
        if cudagraphs:
            torch.compiler.cudagraph_mark_step_begin()
        if not self.training:
            with torch.inference_mode():
                out = v.call(self.x)
            return out.clone() if cudagraphs else out
        assert v.optimizer is not None
        v.optimizer.zero_grad(set_to_none=True)
        out = v.call(self.x)
        loss = out.float().square().mean()
        loss.backward()
        v.optimizer.step()
        return out.detach().clone() if cudagraphs else out.detach()

    def _timed(self, v: _Variant, phase: str) -> None:
        self._check_stop()
        if self._flush_buf is not None:
            self._flush_buf.zero_()
            self._sync()
        if self.use_events:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter_ns()
            start.record()
            self._step(v)
            end.record()
            torch.cuda.synchronize(self.device)
            wall = (time.perf_counter_ns() - t0) / 1e6
            device_ms: float | None = float(start.elapsed_time(end))
        else:
            t0 = time.perf_counter_ns()
            self._step(v)
            self._sync()
            wall = (time.perf_counter_ns() - t0) / 1e6
            device_ms = None
        self.sink.sample(v.name, phase, v.iteration, wall, device_ms)
        v.iteration += 1

    def _measure(self, v: _Variant, count: int) -> None:
        self._phase(v.name, "measure", self.config.iterations)
        self._calls(v, "measure", count)

    def _finish(self, v: _Variant) -> None:
        in_window = v.recompiles_in_window
        total = v.recompiles
        rtol, atol = TOLERANCES[self.config.dtype]
        out = v.first_output
        assert out is not None
        ref = self.reference
        diff = (out - ref).abs()
        max_abs = float(diff.max()) if diff.numel() else 0.0
        scale = float(ref.abs().max()) if ref.numel() else 0.0
        max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
        ok = bool(torch.allclose(out, ref, rtol=rtol, atol=atol)) and bool(
            torch.isfinite(out).all()
        )
        peak, memory_kind = self._memory_report(v)
        event = protocol.VariantDoneEvent(
            variant=v.name,
            status=protocol.VariantStatus.DONE,
            recompiles=total if v.compiled else None,
            recompiles_in_window=in_window if v.compiled else None,
            max_abs_error=max_abs if math.isfinite(max_abs) else None,
            max_rel_error=max_rel if math.isfinite(max_rel) else None,
            allclose=ok,
            tolerance={"rtol": rtol, "atol": atol},
            peak_memory_bytes=peak,
            memory_kind=memory_kind,
        )
        if v.compiled and in_window:
            self.sink.event(
                protocol.WarningEvent(
                    variant=v.name,
                    message=f"{v.name} recompiled {in_window}x inside the timed window: "
                    "its samples are not steady state",
                )
            )
        self.sink.event(event)

    def _run_interleaved(self) -> None:
        cfg = self.config
        live = [v for v in (self._prepare(n) for n in cfg.variants) if v is not None]
        for v in live:
            self._phase(v.name, "measure", cfg.iterations)
        done = 0
        while done < cfg.iterations and live:
            block = min(cfg.interleave_block, cfg.iterations - done)
            for v in list(live):
                try:
                    self._calls(v, "measure", block)
                except Stopped:
                    raise
                except BaseException as exc:  # noqa: BLE001
                    self._error(v.name, exc, "measuring")
                    live.remove(v)
            done += block
        for v in live:
            self._finish(v)

    # -- helpers -----------------------------------------------------------
    def _sync(self) -> None:
        """Wait for the device: host timings then cover the work, not its launch."""
        if self.is_cuda:
            torch.cuda.synchronize(self.device)
        elif self.device.type == "mps":
            torch.mps.synchronize()

    def _memory_mark(self) -> int:
        if self.is_cuda:
            self._sync()
            torch.cuda.reset_peak_memory_stats(self.device)
            return int(torch.cuda.memory_allocated(self.device))
        return _rss_peak_bytes()

    def _memory_report(self, v: _Variant) -> tuple[int, str]:
        """(peak bytes, what kind of peak it is) for one variant."""
        if self.is_cuda:
            return int(torch.cuda.max_memory_allocated(self.device)), "cuda_allocator_peak"
        return max(0, _rss_peak_bytes() - v.mem_before), "rss_peak_growth"


def _short_reason(reason: str) -> str:
    lines = [ln.strip() for ln in reason.splitlines() if ln.strip()]
    head = lines[0] if lines else reason
    expl = next((ln for ln in lines if ln.startswith("Explanation:")), "")
    return f"{head} — {expl[len('Explanation:'):].strip()}" if expl else head


def _resolve_device(device: str) -> str:
    if device == "auto":
        if torch.cuda.is_available():
            return "cuda:0"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    return "cuda:0" if device == "cuda" else device


def _l2_flush_elems(device: torch.device) -> int:
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        return max(2 * l2, 64 << 20)
    return 64 << 20
