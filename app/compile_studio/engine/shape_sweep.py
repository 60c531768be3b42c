"""The shape sweep: one worker calls each compiled variant at one batch size after another.

For each dynamic mode (``false``, ``auto``, ``true``) and each compiled
variant, Dynamo starts afresh (``torch._dynamo.reset()``), the variant is
built and compiled, and then called at each batch size in turn with a fresh
input of that size. Per point it records the first call at that shape (the
compile or recompile it caused), the graphs Dynamo compiled during it and
Dynamo's guard-failure reasons for recompiling (the first few, cut short),
whether Dynamo hit its recompile limit (and from then on ran the frame
eager), the median of a few timed calls at that shape (with the fastest and
slowest, and the spread of the paired eager/variant ratios), and whether the
output matches the fp64 reference as the dtype's rule asks.

Eager and the compiled variant are timed by the same rules, at the same
moment, so that both see the same machine state (the compile workers
Inductor leaves running, clocks, caches):

- after a compiled point's first call (timed on its own, never in the
  median), eager and the variant are warmed up by alternating calls, the same
  number each: at least ``config.warmup`` pairs, and more until
  ``min(config.warmup_min_ms, SWEEP_WARMUP_MAX_MS)`` has passed (the run's
  warm-up time, capped for a sweep that warms up once per point);
- then ``repeats`` timed calls each, alternating eager and the variant, with
  Python's garbage collector off, through the run's :class:`CallTimer`
  (on CUDA with ``timer`` auto or cuda_events, device time as well). The
  order inside a pair alternates too (eager first, then the variant first,
  …: :func:`pair_order`), and in cold-L2 mode the cache is flushed before
  every timed call, as in a run.

The compiled point carries eager's median measured beside it (``eager_ms``)
and the speedup from the two. Eager's own point at a batch size pools the
eager calls timed beside every compiled point there (eager alone, by the
same rules, where no compiled point ran). Eager's first call at each batch
size (no compile) is timed once, before the compiled variants.

The timed calls are the call and the synchronisation that ends it, nothing
else: Dynamo's counters are read before and after the first call only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import logging
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from ..core import protocol
from ..core.config import BenchmarkConfig, ConfigError, ConfigProblem
from . import checks
from .cache_flush import CacheFlush
from .compile_records import CompileRecords, guard_reasons
from .timing import CallTimer, no_gc
from .variant import Variant, checked_output, variant_of
from .workloads import (
    CallInputs,
    Workload,
    build_workload,
    call_model,
    conversion_dtype,
    describe_inputs,
    kwargs_of,
    model_dtype,
    move_inputs,
)

#: Dynamo's names for its recompile limit: ``recompile_limit`` (torch ≥ 2.6), ``cache_size_limit`` before.
LIMIT_NAMES = ("recompile_limit", "cache_size_limit")
#: The longest a point's warm-up must last (ms): ``config.warmup_min_ms`` where shorter.
SWEEP_WARMUP_MAX_MS = 200
#: Dynamo's guard-failure reasons kept per point, and the longest kept.
MAX_RECOMPILE_REASONS = 3
MAX_REASON_CHARS = 300


class Stopped(Exception):
    """The sweep was asked to stop."""


def read_request(line: str) -> tuple[protocol.ShapeSweepRequest, str]:
    """The request on the worker's stdin line and its config as JSON; ConfigError saying what is wrong."""
    try:
        request = protocol.ShapeSweepRequest.from_json(line)
    except (TypeError, ValueError) as exc:
        raise ConfigError([ConfigProblem("shape sweep", str(exc)[:300])]) from None
    problems = request.problems()
    if problems:
        raise ConfigError([ConfigProblem(f, m) for f, m in problems])
    import json

    return request, json.dumps(request.config)


def set_recompile_limit(limit: int) -> int:
    """Set Dynamo's recompile limit under whichever name this torch has; returns the limit in force."""
    cfg = torch._dynamo.config  # noqa: SLF001 - Dynamo's settings have no public name
    for name in LIMIT_NAMES:
        if hasattr(cfg, name):
            if limit > 0:
                setattr(cfg, name, limit)
            return int(getattr(cfg, name))
    return limit


class LimitLog(logging.Handler):
    """Counts Dynamo's warnings that it hit its recompile limit (either name of the limit)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.hits = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = str(record.msg) + " " + str(record.args or "")
        except Exception:  # noqa: BLE001 - a log record never breaks the sweep
            return
        if "hit config." in text and any(name in text for name in LIMIT_NAMES):
            self.hits += 1

    @contextlib.contextmanager
    def attached(self) -> Iterator[LimitLog]:
        logger = logging.getLogger("torch._dynamo")
        logger.addHandler(self)
        try:
            yield self
        finally:
            logger.removeHandler(self)


def _counts() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return {
        "tried": int(counters["frames"].get("total", 0)),
        "ok": int(counters["frames"].get("ok", 0)),
        "graphs": int(counters["stats"].get("unique_graphs", 0)),
    }


def resize_inputs(inputs: tuple[Any, ...], batch: int) -> tuple[Any, ...]:
    """Each tensor input with ``batch`` rows (its rows repeated or cut): a factory's fixed inputs.

    Keyword inputs (``input_ids``, ``attention_mask``) are resized alike and stay keyword inputs.
    """

    def resized(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.dim() > 0 and x.shape[0] != batch:
            return x[torch.arange(batch, device=x.device) % x.shape[0]]
        return x

    out = tuple(resized(x) for x in inputs)
    if isinstance(inputs, CallInputs):
        return CallInputs(out, {k: resized(v) for k, v in kwargs_of(inputs).items()})
    return out


def resize_axis(inputs: tuple[Any, ...], axis: str, size: int) -> tuple[Any, ...]:
    """The inputs with axis DIM of input NAME (``axis`` is ``NAME:DIM``) at ``size``.

    Its elements along that axis are repeated or cut, as a batch is; every other tensor
    input of the same length on the same axis (an ``attention_mask`` beside ``input_ids``)
    follows. ValueError naming the inputs there are when NAME or DIM is not one of them.
    """
    name, _, dim_text = axis.rpartition(":")
    dim = int(dim_text)
    kwargs = kwargs_of(inputs)
    named = kwargs.get(name) if name in kwargs else (
        inputs[int(name)] if name.isdigit() and int(name) < len(inputs) else None
    )
    if not isinstance(named, torch.Tensor):
        names = [str(i) for i in range(len(inputs))] + list(kwargs)
        raise ValueError(f"no tensor input {name} to sweep (the inputs: {', '.join(names) or 'none'})")
    if dim >= named.dim():
        raise ValueError(f"input {name} has {named.dim()} axes: no axis {dim} to sweep")
    length = int(named.shape[dim])

    def resized(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.dim() > dim and x.shape[dim] == length and length != size:
            return x.index_select(dim, torch.arange(size, device=x.device) % length)
        return x

    out = tuple(resized(x) for x in inputs)
    if isinstance(inputs, CallInputs) or kwargs:
        return CallInputs(out, {k: resized(v) for k, v in kwargs.items()})
    return out


@dataclasses.dataclass
class _Shape:
    """One batch size: its input, the fp64 reference, and eager's deviation, first call and timed calls."""

    batch: int
    inputs: tuple[Any, ...]
    reference: list[torch.Tensor] | None
    eager_dev: checks.Deviation | None = None
    eager_first_ms: float | None = None
    #: eager's timed calls (wall ms, device ms) beside each compiled point at this batch size
    eager_wall: list[float] = dataclasses.field(default_factory=list)
    eager_device: list[float] = dataclasses.field(default_factory=list)
    #: the warm-up calls eager had before each group of its timed calls
    eager_warmups: list[int] = dataclasses.field(default_factory=list)
    #: whether the garbage collector was off during every group of eager's timed calls
    eager_gc_off: bool = True


@dataclasses.dataclass
class _Timed:
    """The timed calls of one point: each side's wall and device ms, the warm-up each had, the GC state."""

    warmup_calls: int
    gc_off: bool
    wall: list[float] = dataclasses.field(default_factory=list)
    device: list[float] = dataclasses.field(default_factory=list)
    eager_wall: list[float] = dataclasses.field(default_factory=list)
    eager_device: list[float] = dataclasses.field(default_factory=list)


def warmed_up(calls: int, elapsed_ms: float, config: BenchmarkConfig) -> bool:
    """Whether a point's warm-up is over: ``config.warmup`` calls (of each side) and at least
    ``min(config.warmup_min_ms, SWEEP_WARMUP_MAX_MS)`` ms have passed."""
    return calls >= config.warmup and elapsed_ms >= min(config.warmup_min_ms, SWEEP_WARMUP_MAX_MS)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _lowest(values: list[float]) -> float | None:
    return min(values) if values else None


def _highest(values: list[float]) -> float | None:
    return max(values) if values else None


def pair_order(calls: int, repeat: int) -> list[int]:
    """Which call of a pair goes first in ``repeat``: eager first, then the variant first, …

    Alternating (A B, B A, A B …) so that neither side always runs second, on the
    caches and clocks the other one left.
    """
    order = list(range(calls))
    return order if repeat % 2 == 0 else order[::-1]


def pair_speedups(eager_wall: list[float], wall: list[float]) -> tuple[float | None, float | None]:
    """(lowest, highest) ratio of an eager call to the variant's call timed in the same pair.

    The timed calls alternate eager and the variant, so call i of each is a
    pair; a pair with a time of 0 has no ratio. (None, None) without any pair.
    """
    ratios = [e / w for e, w in zip(eager_wall, wall) if w > 0 and e > 0]
    return (min(ratios), max(ratios)) if ratios else (None, None)


class ShapeSweepRunner:
    """Runs a :class:`protocol.ShapeSweepRequest` in this process and reports each point to ``sink``."""

    def __init__(
        self,
        config: BenchmarkConfig,
        request: protocol.ShapeSweepRequest,
        sink: Any,
        stop: threading.Event | None = None,
    ):
        from .run_state import resolve_device

        self.config = config
        self.request = request
        self.sink = sink
        self.stop = stop or threading.Event()
        self.device = torch.device(resolve_device(config.device))
        self.is_cuda = self.device.type == "cuda" and torch.cuda.is_available()
        if self.is_cuda:
            torch.cuda.set_device(self.device)
        #: None: as given (a custom model's own dtypes)
        self.dtype = conversion_dtype(config.dtype)
        #: the dtype whose correctness bounds judge the outputs
        self.check_dtype = config.dtype if self.dtype is not None else "fp32"
        self.training = config.workload == "training"
        self.limit = 0
        self.timer = CallTimer(self.device, use_events=self.is_cuda and config.timer in ("auto", "cuda_events"))
        #: cold-L2 mode: the cache flushed before every timed call (both of a CUDA sample's)
        self.flush: CacheFlush | None = None
        if config.cold_l2:
            self.flush = CacheFlush.for_device(self.device)
            self.timer.between_calls = self.flush.evict

    # -- timing ---------------------------------------------------------------------------
    def _first(self, step: Callable[[tuple[Any, ...]], Any], x: tuple[Any, ...]) -> tuple[float, Any]:
        """(host ms, output) of one plain call at a shape: its compile or recompile, or eager's first."""
        out: list[Any] = []
        self.timer.sync()
        ms = self.timer.span(lambda: out.append(step(x)))[0]
        return ms, out[-1]

    def _timed(
        self, eager: Callable[[tuple[Any, ...]], Any], step: Callable[[tuple[Any, ...]], Any] | None,
        x: tuple[Any, ...],
    ) -> _Timed:
        """Eager and ``step`` (None: eager alone) warmed up and timed in alternation at input ``x``.

        Warm-up: untimed pairs of calls until :func:`warmed_up`; then
        ``repeats`` timed calls of each with the garbage collector off.
        """
        steps = [eager] if step is None else [eager, step]
        calls = [functools.partial(f, x) for f in steps]
        flush = self.flush
        start = time.perf_counter_ns()
        warm = 0
        with self._grad():
            while not warmed_up(warm, (time.perf_counter_ns() - start) / 1e6, self.config):
                self.check_stop()
                for k in pair_order(len(calls), warm):
                    calls[k]()
                warm += 1
            self.timer.sync()
            self.timer.recalibrate()  # the busy-stream sleep sized at the warm clock
            with no_gc():
                timed = _Timed(warmup_calls=warm, gc_off=not gc.isenabled())
                for r in range(self.request.repeats):
                    self.check_stop()
                    for k in pair_order(len(calls), r):
                        if flush is not None:
                            flush.evict()
                            self.timer.sync()
                        wall, device_ms = self.timer.time(calls[k])
                        eager_call = k == 0
                        (timed.eager_wall if eager_call else timed.wall).append(wall)
                        if device_ms is not None:
                            (timed.eager_device if eager_call else timed.device).append(device_ms)
        return timed

    def _grad(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext() if self.training else torch.inference_mode()

    def check_stop(self) -> None:
        if self.stop.is_set():
            raise Stopped

    # -- the sweep ------------------------------------------------------------------------
    def _workload(self, batch: int, variant: str = "") -> Workload:
        cfg = dataclasses.replace(self.config, batch_size=batch)
        return build_workload(cfg, variant)

    def _shapes(self) -> list[_Shape]:
        out = []
        axis = self.request.axis
        for batch in self.request.batches:
            # along a named axis the model and its inputs are the configuration's, resized there
            workload = build_workload(self.config) if axis else self._workload(batch)
            if self.dtype is None:
                self.check_dtype = checks.tolerance_key(model_dtype(workload.model))
            if axis:
                inputs = resize_axis(workload.inputs, axis, batch)
            elif self.config.model == "custom":
                inputs = resize_inputs(workload.inputs, batch)
            else:
                inputs = workload.inputs
            reference = None
            if not self.training:
                ref = workload.to(torch.device("cpu"), torch.float64)
                ref.model.eval()
                with torch.no_grad():
                    ref_inputs = move_inputs(inputs, torch.device("cpu"), torch.float64)
                    reference = checked_output(call_model(ref.model, ref_inputs)).tensors
            out.append(_Shape(batch, move_inputs(inputs, self.device, self.dtype), reference))
            del workload
        return out

    def _variant(self, name: str, mode: str) -> Variant:
        from .environment import compile_modes

        cfg = self.config if mode == "eager" else dataclasses.replace(self.config, dynamic=mode)
        workload = self._workload(self.request.batches[0], f"{name}_{mode}").to(self.device, self.dtype)
        return variant_of(cfg, name, workload, self.device, compile_modes())

    def _deviation(self, out: Any, shape: _Shape) -> checks.Deviation | None:
        if shape.reference is None:
            return None
        return checks.deviation(checked_output(out).tensors, shape.reference)

    def _eager_first(self, v: Variant, shapes: list[_Shape]) -> None:
        """Eager's first call at each shape (timed) and its deviation, which the checks compare with."""
        for shape in shapes:
            self.check_stop()
            with self._grad():
                shape.eager_first_ms, out = self._first(v.step, shape.inputs)
            shape.eager_dev = self._deviation(out, shape)
            del out

    def _eager_points(self, v: Variant, shapes: list[_Shape]) -> None:
        """Eager's point at each shape: its calls timed beside the compiled points there, pooled.

        Where no compiled point was timed at a shape (each failed), eager is
        timed there alone, by the same rules.
        """
        for shape in shapes:
            self.check_stop()
            if not shape.eager_wall:
                alone = self._timed(v.step, None, shape.inputs)
                self._keep_eager(shape, alone)
            median = _median(shape.eager_wall)
            dev = shape.eager_dev
            self.sink.event(
                protocol.ShapePointEvent(
                    variant="eager", mode="eager", batch=shape.batch, first_call_ms=shape.eager_first_ms,
                    median_ms=median, eager_ms=median, speedup=1.0,
                    device_median_ms=_median(shape.eager_device), eager_device_ms=_median(shape.eager_device),
                    warmup_calls=min(shape.eager_warmups), eager_warmup_calls=min(shape.eager_warmups),
                    timed_calls=len(shape.eager_wall), gc_off=shape.eager_gc_off,
                    min_ms=_lowest(shape.eager_wall), max_ms=_highest(shape.eager_wall),
                    eager_min_ms=_lowest(shape.eager_wall), eager_max_ms=_highest(shape.eager_wall),
                    correct=None if dev is None else checks.judge(self.check_dtype, dev, None)[0],
                    max_error=None if dev is None else _finite(dev.error),
                    inputs=describe_inputs(shape.inputs),
                )
            )

    @staticmethod
    def _keep_eager(shape: _Shape, timed: _Timed) -> None:
        shape.eager_wall += timed.eager_wall
        shape.eager_device += timed.eager_device
        shape.eager_warmups.append(timed.warmup_calls)
        shape.eager_gc_off = shape.eager_gc_off and timed.gc_off

    def _compiled(self, name: str, mode: str, shapes: list[_Shape], eager: Variant) -> None:
        torch._dynamo.reset()  # noqa: SLF001 - Dynamo's caches cleared: a fresh start per variant
        try:
            v = self._variant(name, mode)
        except Exception as exc:  # noqa: BLE001 - this mode fails, the sweep goes on
            self._point_error(name, mode, shapes[0].batch, exc)
            return
        fell_back = False
        with LimitLog().attached() as limit_log:
            for k, shape in enumerate(shapes):
                self.check_stop()
                before, hits = _counts(), limit_log.hits
                records = CompileRecords()
                try:
                    with self._grad():
                        first, out = self._first(v.step, shape.inputs)
                except Exception as exc:  # noqa: BLE001 - reported per point
                    self._point_error(name, mode, shape.batch, exc)
                    continue
                after = _counts()
                reasons = guard_reasons(
                    records.new(), f"{name}_{mode}", MAX_RECOMPILE_REASONS, MAX_REASON_CHARS
                ) if k > 0 else []
                graphs = after["graphs"] - before["graphs"]
                # a frame Dynamo tried and gave up on, with the warning (or a limit as low as the graphs)
                limit_hit = limit_log.hits > hits or (
                    after["tried"] > before["tried"] and after["ok"] == before["ok"]
                    and graphs == 0 and self.limit > 0 and k >= self.limit
                )
                fell_back = fell_back or limit_hit
                dev = self._deviation(out, shape)
                del out
                try:
                    timed = self._timed(eager.step, v.step, shape.inputs)
                except Stopped:
                    raise
                except Exception as exc:  # noqa: BLE001 - reported per point
                    self._point_error(name, mode, shape.batch, exc)
                    continue
                self._keep_eager(shape, timed)
                median, eager_ms = _median(timed.wall), _median(timed.eager_wall)
                speedup_lo, speedup_hi = pair_speedups(timed.eager_wall, timed.wall)
                correct = None
                if dev is not None:
                    correct = checks.judge(self.check_dtype, dev, shape.eager_dev)[0]
                self.sink.event(
                    protocol.ShapePointEvent(
                        variant=name, mode=mode, batch=shape.batch, first_call_ms=first,
                        graphs=graphs, recompiles=after["ok"] - before["ok"] if k > 0 else 0,
                        limit_hit=limit_hit, fell_back=fell_back, recompile_limit=self.limit or None,
                        recompile_reasons=reasons,
                        median_ms=median, eager_ms=eager_ms,
                        speedup=eager_ms / median if eager_ms is not None and median else None,
                        device_median_ms=_median(timed.device), eager_device_ms=_median(timed.eager_device),
                        warmup_calls=timed.warmup_calls, eager_warmup_calls=timed.warmup_calls,
                        timed_calls=len(timed.wall), gc_off=timed.gc_off,
                        min_ms=_lowest(timed.wall), max_ms=_highest(timed.wall),
                        eager_min_ms=_lowest(timed.eager_wall), eager_max_ms=_highest(timed.eager_wall),
                        speedup_lo=speedup_lo, speedup_hi=speedup_hi,
                        inputs=describe_inputs(shape.inputs),
                        correct=correct, max_error=None if dev is None else _finite(dev.error),
                    )
                )
        del v
        if self.is_cuda:
            torch.cuda.empty_cache()

    def _point_error(self, name: str, mode: str, batch: int, exc: BaseException) -> None:
        from .run_errors import first_line

        self.sink.event(
            protocol.ShapePointEvent(variant=name, mode=mode, batch=batch, error=first_line(exc, 300))
        )

    def run(self) -> protocol.RunStatus:
        """Every mode × variant × batch size: ``complete``, ``stopped`` or ``failed``."""
        from .run_state import apply_dynamo_config, apply_precision

        apply_precision(self.config.dtype)
        apply_dynamo_config(self.config)
        self.limit = set_recompile_limit(self.request.recompile_limit)
        try:
            shapes = self._shapes()
            eager = self._variant("eager", "eager")
            self._eager_first(eager, shapes)
            for mode in self.request.modes:
                for name in self.config.compiled_variants():
                    self.sink.event(
                        protocol.PhaseEvent(variant=f"{name} dynamic={mode}", phase=protocol.Phase.COMPILE)
                    )
                    self._compiled(name, mode, shapes, eager)
            self._eager_points(eager, shapes)
        except Stopped:
            self.sink.flush()
            return protocol.RunStatus.STOPPED
        self.sink.flush()
        return protocol.RunStatus.COMPLETE


def _finite(value: float) -> float | None:
    return value if value == value and abs(value) != float("inf") else None
