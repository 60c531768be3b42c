"""The shape-sweep record (shape_sweep.json), its points, and its JSON and shape_sweep.csv text.

A point is the worker's ``shape_point`` event kept as it came
(:class:`protocol.ShapePointEvent`, its fields declared there once); the
batch sizes, modes, recompile limit and repeats are the request's
(:class:`protocol.ShapeSweepSettings`). What is written here is read back,
checked, by sweep_load.py: the two change in step. A record from an older
worker reads back without the spread of a point's calls (None).

A shape-sweep speedup is a ratio of medians of a few calls (``repeats``,
5 by default) with no interval: :func:`shape_speedup_text` says so
(``≈1.3× (5 calls, 1.1–1.6×)``), and says why where there is none
(``– (eager's time is 0 ms)``), never a bare ``0.00×``.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from ... import __version__
from ...core.protocol import ShapePointEvent, ShapeSweepSettings
from ..storage.file_io import json_safe, safe_cell
from .sweep_record import JobRecord

SHAPE_JSON = "shape_sweep.json"
SHAPE_CSV = "shape_sweep.csv"
SHAPE_KIND = "compile-studio-shape-sweep"
SHAPE_SCHEMA_VERSION = 1
#: Most points of a shape sweep (modes × variants × batch sizes, eager included).
MAX_SHAPE_POINTS = 20_000

#: The columns of shape_sweep.csv: one row per mode × batch size × variant.
SHAPE_CSV_COLUMNS = [
    "batch",
    "mode",
    "variant",
    "first_call_ms",
    "graphs",
    "recompiles",
    "limit_hit",
    "fell_back_to_eager",
    "median_ms",
    "eager_ms",
    "speedup",
    "correct",
    "max_error",
    "error",
    "recompile_reasons",
    "device_median_ms",
    "eager_device_ms",
    "warmup_calls",
    "eager_warmup_calls",
    "timed_calls",
    "gc_off",
    "min_ms",
    "max_ms",
    "eager_min_ms",
    "eager_max_ms",
    "speedup_lo",
    "speedup_hi",
]
#: Guard-failure reasons kept per point when read, and the longest kept.
MAX_SHAPE_REASONS = 3
MAX_SHAPE_REASON_CHARS = 300


@dataclass
class ShapePoint(ShapePointEvent):
    """One point of a shape sweep: a ``shape_point`` event as kept (its reasons cut to what is kept)."""

    @classmethod
    def from_event(cls, event: Any) -> ShapePoint:
        """From a ``shape_point`` event (any object with the same attributes)."""
        point = cls(**{f.name: getattr(event, f.name) for f in fields(cls) if hasattr(event, f.name)})
        point.recompile_reasons = kept_reasons(point.recompile_reasons)
        return point


def kept_reasons(value: Any) -> list[str]:
    """Recompile reasons as kept: text only, the first few, each cut short."""
    if not isinstance(value, list):
        return []
    out = []
    for r in value:
        if isinstance(r, str) and r.strip():
            r = " ".join(r.split())
            out.append(r if len(r) <= MAX_SHAPE_REASON_CHARS else r[: MAX_SHAPE_REASON_CHARS - 1] + "…")
    return out[:MAX_SHAPE_REASONS]


@dataclass(kw_only=True)
class ShapeSweepRecord(JobRecord, ShapeSweepSettings):
    """What shape_sweep.json holds: the config, the settings (batch sizes, modes) and every point."""

    points: list[ShapePoint] = field(default_factory=list)
    app_version: str = __version__
    schema_version: int = SHAPE_SCHEMA_VERSION
    load_problems: list[str] = field(default_factory=list, compare=False)

    def title(self) -> str:
        c = self.config
        batches = ",".join(str(b) for b in self.batches)
        over = f"input {self.axis.replace(':', ' axis ')}" if self.axis else "batch"
        return f"shape sweep over {over} {batches} · {c.model_text()} · {c.dtype} · {c.device}"

    def series(self) -> list[tuple[str, str]]:
        """(variant, mode) of each compiled series, in the order they ran."""
        out: list[tuple[str, str]] = []
        for p in self.points:
            key = (p.variant, p.mode)
            if p.mode != "eager" and key not in out:
                out.append(key)
        return out

    def add(self, point: ShapePoint) -> None:
        """Keep ``point``; its speedup is eager's time at that point over its own.

        A compiled point carries eager's median timed beside it; one from an
        older worker, without it, takes the eager point's at its batch size.
        """
        self.points.append(point)
        if point.mode == "eager":
            for p in self.points:
                if p.batch == point.batch and p.mode != "eager" and p.eager_ms is None:
                    p.eager_ms = point.median_ms
                    p.speedup = _ratio(point.median_ms, p.median_ms)
        else:
            if point.eager_ms is None:
                eager = next((p for p in self.points if p.mode == "eager" and p.batch == point.batch), None)
                point.eager_ms = eager.median_ms if eager is not None else None
            point.speedup = _ratio(point.eager_ms, point.median_ms)

    def points_of(self, variant: str, mode: str) -> list[ShapePoint]:
        return [p for p in self.points if p.variant == variant and p.mode == mode]

    def warnings(self) -> list[str]:
        """In words: each series where Dynamo hit its recompile limit and ran eager from there on."""
        several = len({v for v, _ in self.series()}) > 1
        out = []
        for variant, mode in self.series():
            hit = next((p for p in self.points_of(variant, mode) if p.limit_hit), None)
            if hit is None:
                continue
            who = f"{variant} dynamic={mode}" if several else f"dynamic={mode}"
            limit = f" ({hit.recompile_limit})" if hit.recompile_limit else ""
            out.append(
                f"{who}: Dynamo hit its recompile limit{limit} at batch {hit.batch} "
                "and ran eager from there on"
            )
        return out

    def copy(self) -> ShapeSweepRecord:
        return copy.deepcopy(self)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b is not None and b > 0 else None


def shape_record_to_json(record: ShapeSweepRecord) -> str:
    """shape_sweep.json's text: the record whole, with its warnings in words."""
    doc = {
        "schema_version": SHAPE_SCHEMA_VERSION,
        "app_version": record.app_version,
        "kind": SHAPE_KIND,
        "sweep_id": record.sweep_id,
        "created": record.created,
        "batches": record.batches,
        "modes": record.modes,
        "recompile_limit": record.recompile_limit,
        "repeats": record.repeats,
        "axis": record.axis,
        "status": record.status,
        "message": record.message,
        "owner_pid": record.owner_pid,
        "owner_host": record.owner_host,
        "config": record.config.to_dict(),
        "environment": record.environment,
        "warnings": record.warnings(),
        "points": [asdict(p) for p in record.points],
    }
    return json.dumps(json_safe(doc), indent=2, allow_nan=False, default=str) + "\n"


def _yes_no(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "no")


def shape_record_to_csv(record: ShapeSweepRecord) -> str:
    """shape_sweep.csv: one row per mode × batch size × variant (eager's rows have mode ``eager``)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SHAPE_CSV_COLUMNS)
    for p in sorted(record.points, key=lambda p: (_mode_order(p.mode), p.batch, p.variant)):
        row = {
            **asdict(p),
            "limit_hit": _yes_no(p.limit_hit),
            "fell_back_to_eager": _yes_no(p.fell_back),
            "correct": _yes_no(p.correct),
            "gc_off": _yes_no(p.gc_off),
            "recompile_reasons": " | ".join(p.recompile_reasons),
        }
        writer.writerow([safe_cell(row.get(c)) for c in SHAPE_CSV_COLUMNS])
    return buf.getvalue()


def _mode_order(mode: str) -> int:
    order = ("eager", "false", "auto", "true")
    return order.index(mode) if mode in order else len(order)


# -- speedups in words -------------------------------------------------------------------------

def times_text(value: float) -> str:
    """A ratio with two significant digits and no exponent: ``1.3``, ``0.43``, ``0.0041``, ``12``."""
    if value >= 10:
        return f"{value:.0f}"
    return str(np.format_float_positional(value, precision=2, unique=True, fractional=False, trim="-"))


def no_speedup_reason(point: ShapePointEvent) -> str | None:
    """Why ``point`` has no speedup to show (None: it has one): failed, not timed, a time of 0 ms."""
    if point.error:
        return "failed"
    if point.median_ms is None:
        return "not timed"
    if not math.isfinite(point.median_ms) or point.median_ms <= 0:
        return "its time is 0 ms, below the timer's resolution"
    if point.eager_ms is None:
        return "eager was not timed at this batch size"
    if not math.isfinite(point.eager_ms) or point.eager_ms <= 0:
        return "eager's time is 0 ms, below the timer's resolution"
    if point.speedup is None or not math.isfinite(point.speedup) or point.speedup <= 0:
        return "no speedup recorded"
    return None


def speedup_spread(point: ShapePointEvent) -> tuple[float, float] | None:
    """(lowest, highest) ratio of the paired eager and variant calls; None where not recorded."""
    lo, hi = point.speedup_lo, point.speedup_hi
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi < lo:
        return None
    return lo, hi


def range_text(lo: float, hi: float) -> str:
    """``0.61–0.72×``: the range of a point's call ratios (one figure where both read alike)."""
    low, high = times_text(lo), times_text(hi)
    return f"{low}×" if low == high else f"{low}–{high}×"


def shape_speedup_text(point: ShapePointEvent, repeats: int | None = None) -> str:
    """A shape-sweep speedup as rough as it is: ``≈1.3× (5 calls, 1.1–1.6×)``, the spread where recorded;
    ``– (reason)`` without one. ``repeats``: the calls per point where the point does not say."""
    reason = no_speedup_reason(point)
    if reason is not None:
        return f"– ({reason})"
    assert point.speedup is not None
    calls = point.timed_calls if point.timed_calls is not None else repeats
    inside = [f"{calls} call{'s' if calls != 1 else ''}"] if calls is not None else ["few calls"]
    spread = speedup_spread(point)
    if spread is not None:
        inside.append(range_text(*spread))
    return f"≈{times_text(point.speedup)}× ({', '.join(inside)})"
