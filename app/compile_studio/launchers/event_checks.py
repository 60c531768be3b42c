"""A worker's events are input: every field checked at the session's boundary (no Qt, no torch).

A worker may be a stand-in, a broken build or a remote program: what it sends
is checked here, with the rules the loader applies to a received run folder
(:mod:`compile_studio.results.records.schema`), before any of it reaches a recorder,
a plot or a summary. :func:`check_event` returns the event as it may be kept,
or says why it is refused.

- Every field has the type its dataclass declares; text and lists are bounded.
- A timing (``wall_ms``, ``device_ms``, ``compile_s``, …) is a finite number from
  0 to ``MAX_TIMING_MS``; an event holding another is refused whole.
- Counts, indices, clocks and sizes are whole numbers ≥ 0.
- Other measured figures that are not finite (an error of a model whose output
  holds NaN) are kept as "none", as run.json keeps them.
- Columns that go together have one length (``wall_ms``, ``device_ms``, ``starts_us``;
  a ``gpu_state`` event's readings).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from functools import cache
from typing import Any

from ..core import protocol
from ..results.records.schema import MAX_INT, MAX_NAME, MAX_TIMING_MS, Unfit, conform, timing_ms_ok
from ..results.storage.file_io import json_safe

#: Longest protocol line read from a worker (bytes); a longer one is cut and counted.
MAX_PROTOCOL_LINE = 1024 * 1024
#: A ``diagnostics`` event carries a profiler trace (≤ 16 MiB) and Inductor's code: its line may be this long.
MAX_DIAGNOSTICS_LINE = 64 * 1024 * 1024
#: The start of a diagnostics line as :func:`compile_studio.core.protocol.encode` writes it.
DIAGNOSTICS_PREFIX = b'{"type":"' + protocol.DIAGNOSTICS.encode() + b'"'

#: Fields (of any event) that are timings: ms or seconds, finite, 0 to MAX_TIMING_MS.
TIMING_FIELDS = frozenset({
    "wall_ms", "device_ms", "compile_s", "first_call_ms", "cudagraph_record_ms", "pipelined_ms", "unpinned_ms",
    "harness_floor_ms", "harness_floor_device_ms", "cap_ms", "median_ms", "eager_ms",
    "device_median_ms", "eager_device_ms", "min_ms", "max_ms", "eager_min_ms", "eager_max_ms",
})
#: Fields (of any event) that are counts, indices, monotonic clocks or sizes: whole numbers ≥ 0.
COUNT_FIELDS = frozenset({
    "first_iteration", "round", "clock_ns", "starts_us", "graphs", "graph_breaks", "recompiles",
    "recompiles_in_window", "peak_memory_bytes", "iterations", "block", "sent_ns", "torch_threads",
    "cache_flush_bytes", "flops_per_call", "batch_size", "compile_threads", "batch",
    "recompile_limit", "warmup_calls", "eager_warmup_calls", "timed_calls", "pid", "pgid",
    "protocol", "gpu",
})
#: Fields whose text has another bound than the line's: a variant's name is a name (as in a
#: saved run); a diagnostics event's trace and code may be as long as their line.
_TEXT_BOUND = {"variant": MAX_NAME, "trace": MAX_DIAGNOSTICS_LINE, "code": MAX_DIAGNOSTICS_LINE}
#: The states a ``turn`` event may be in.
TURN_STATES = ("pause", "end")
_GPU_COLUMNS = ("t_s", "variant", "iteration", "sm_clock_mhz", "temperature_c", "power_w")


class Refused(ValueError):
    """An event a worker sent that is not kept; the message says which field and why."""


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _optional(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


def _is_float_hint(hint: Any) -> bool:
    return hint is float or (_optional(hint) and float in typing.get_args(hint))


def _field(event_type: str, name: str, hint: Any, value: Any) -> Any:
    """``value`` as the field keeps it; :class:`Refused` saying why not."""
    where = f"{event_type}.{name}"
    if isinstance(value, float) and not math.isfinite(value) and name not in TIMING_FIELDS \
            and _optional(hint) and _is_float_hint(hint):
        return None  # a figure that is not finite is kept as none (as run.json keeps it)
    if typing.get_origin(hint) is dict or hint is Any:
        try:
            value = json_safe(value)
        except RecursionError:
            raise Refused(f"{where} is nested too deeply") from None
    try:
        value = conform(value, hint, _TEXT_BOUND.get(name, MAX_PROTOCOL_LINE))
    except Unfit as exc:
        raise Refused(f"{where} {exc}") from None
    except RecursionError:
        raise Refused(f"{where} is nested too deeply") from None
    items = value if isinstance(value, list) else [value]
    if name in TIMING_FIELDS:
        for k, item in enumerate(items):
            if item is not None and not timing_ms_ok(item):
                at = f"{where}[{k}]" if isinstance(value, list) else where
                raise Refused(f"{at} is {_show(item)}: a timing is a finite number from 0 to {MAX_TIMING_MS:g}")
    elif name in COUNT_FIELDS:
        for k, item in enumerate(items):
            if item is not None and (not isinstance(item, int) or not 0 <= item <= MAX_INT):
                at = f"{where}[{k}]" if isinstance(value, list) else where
                raise Refused(f"{at} is {_show(item)}: it must be a whole number ≥ 0")
    return value


def _show(value: Any) -> str:
    return repr(value)[:40]


def _same_length(event_type: str, columns: dict[str, Any], names: tuple[str, ...]) -> None:
    lengths = {n: len(columns[n]) for n in names if isinstance(columns.get(n), list)}
    if len(set(lengths.values())) > 1:
        told = ", ".join(f"{n} {k}" for n, k in lengths.items())
        raise Refused(f"{event_type}: columns of different lengths ({told})")


def check_event(event: protocol.Event) -> protocol.Event:
    """``event`` with every field checked (figures that are not finite kept as none);
    :class:`Refused` when a field does not fit."""
    cls: type = type(event)
    event_type = str(getattr(cls, "TYPE", cls.__name__))
    hints = _hints(cls)
    kept: dict[str, Any] = {}
    for f in dataclasses.fields(event):
        kept[f.name] = _field(event_type, f.name, hints[f.name], getattr(event, f.name))
    if isinstance(event, protocol.SamplesEvent):
        _same_length(event_type, kept, ("wall_ms", "device_ms", "starts_us"))
    elif isinstance(event, protocol.GpuStateEvent):
        _same_length(event_type, kept, _GPU_COLUMNS)
    elif isinstance(event, protocol.TurnEvent) and kept["state"] not in TURN_STATES:
        raise Refused(f"{event_type}.state is {_show(kept['state'])}: it must be one of {', '.join(TURN_STATES)}")
    return dataclasses.replace(event, **kept)  # type: ignore[type-var]
