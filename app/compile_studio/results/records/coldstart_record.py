"""The cold-start record (coldstart.json, coldstart.csv), its summary per start kind, and reading it back.

A point is the worker's ``coldstart_point`` event kept as it came
(:class:`protocol.ColdStartPointEvent`): one fresh process, one variant, one
start kind, one round. The summary (:func:`summarize`) gives per variant and
start kind the median over rounds of the time to first result and to the
first fast call with the range over rounds, the compile's phases (medians),
and the break-even against eager::

    break-even calls = (time to first fast call − eager's time to first result)
                       / (eager's time per call − the variant's)

eager's time to first result and per call being its own fresh processes'
(an eager call in a process beside compiled kernels meets their thread pool),
the variant's per call the median over all its processes, whatever their start
(the same compiled code runs after each), so the start kinds differ in what
they cost to start, not in the noise of their few calls. No torch, no Qt.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import math
import statistics
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ... import __version__
from ...core.protocol import EAGER_START, START_KINDS, ColdStartPointEvent, ColdStartSettings
from ..storage.file_io import json_safe, safe_cell
from ..storage.record_folder import RecordFolder
from .record_load import is_record_folder, load_record, read_environment
from .schema import Schema
from .sweep_load import job_fields, job_top, mark_job_interrupted, read_job_head
from .sweep_record import COMPLETE, MAX_SWEEP_JSON_BYTES, JobRecord, SweepDamaged

COLDSTART_JSON = "coldstart.json"
COLDSTART_CSV = "coldstart.csv"
COLDSTART_KIND = "compile-studio-coldstart"
COLDSTART_SCHEMA_VERSION = 1
MAX_COLDSTART_POINTS = 20_000
#: The compile phases, in the order a stacked bar or a table shows them.
PHASES = (
    "Dynamo tracing", "AOT autograd", "Inductor lowering", "autotuning", "Inductor codegen",
    "C++/Triton build", "cache load", "other",
)
COLDSTART_CSV_COLUMNS = [
    "round", "variant", "start", "first_result_s", "first_fast_s", "fast_call", "first_call_s",
    "ready_s", "import_s", "load_s", "call_ms", "eager_ms", "calls", "graphs",
    "fx_graph_hits", "fx_graph_misses", "aot_hits", "aot_misses", "artifacts_loaded",
    "files_before_load", *[f"phase {p}" for p in PHASES], "error",
]

__all__ = [
    "COLDSTART_JSON", "ColdStartFolder", "ColdStartPoint", "ColdStartRecord", "StartSummary",
    "load_coldstart", "is_coldstart_folder", "summarize", "break_even_text", "SUMMARY_COLUMNS", "summary_rows",
]


@dataclass
class ColdStartPoint(ColdStartPointEvent):
    """One fresh process of a cold-start job, as kept."""

    @classmethod
    def from_event(cls, event: Any) -> ColdStartPoint:
        return cls(**{f.name: getattr(event, f.name) for f in fields(cls) if hasattr(event, f.name)})


@dataclass(kw_only=True)
class ColdStartRecord(JobRecord, ColdStartSettings):
    """What coldstart.json holds: the config, the settings, every point, and the cache carried."""

    points: list[ColdStartPoint] = field(default_factory=list)
    #: the cache file the carried starts loaded (None: this machine's own cold starts' artifacts)
    loaded_cache: str | None = None
    #: where the artifacts were saved (--save-cache), and what for
    saved_cache: str | None = None
    notes: list[str] = field(default_factory=list)
    app_version: str = __version__
    schema_version: int = COLDSTART_SCHEMA_VERSION
    load_problems: list[str] = field(default_factory=list, compare=False)

    def title(self) -> str:
        c = self.config
        return f"start-up cost · {c.model_text()} · {c.dtype} · {c.device} · {', '.join(c.compiled_variants())}"

    def copy(self) -> ColdStartRecord:
        return copy.deepcopy(self)


@dataclass
class Spread:
    """A figure over rounds: its median, lowest and highest, and how many rounds gave it."""

    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: list[float | None]) -> Spread | None:
        kept = [v for v in values if v is not None and math.isfinite(v)]
        if not kept:
            return None
        return cls(statistics.median(kept), min(kept), max(kept), len(kept))

    def text(self, unit: str = "s") -> str:
        if self.n < 2:
            return f"{self.median:.2f} {unit}"
        return f"{self.median:.2f} {unit} ({self.low:.2f}–{self.high:.2f})"


@dataclass
class StartSummary:
    """One variant started one way, over the rounds."""

    variant: str
    start: str
    first_result: Spread | None
    first_fast: Spread | None
    first_call: Spread | None
    call_ms: float | None
    eager_ms: float | None
    eager_first_result: float | None
    phases: dict[str, float]
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    loaded: int = 0
    cache_hits: int = 0

    def _calls_after(self, first_fast_s: float) -> float | None:
        if self.eager_first_result is None or self.call_ms is None or self.eager_ms is None:
            return None
        saved_s = (self.eager_ms - self.call_ms) / 1000.0
        extra_s = first_fast_s - self.eager_first_result
        if extra_s <= 0:
            return 0.0
        if saved_s <= 0:
            return None
        return float(math.ceil(extra_s / saved_s))

    @property
    def break_even(self) -> float | None:
        """Calls after which this start has paid for itself against eager (0: at once; None: never)."""
        return None if self.first_fast is None else self._calls_after(self.first_fast.median)

    @property
    def break_even_range(self) -> tuple[float, float] | None:
        """The break-even of the fastest and the slowest round's start (None: one round, or none)."""
        if self.first_fast is None or self.first_fast.n < 2:
            return None
        lo, hi = self._calls_after(self.first_fast.low), self._calls_after(self.first_fast.high)
        return None if lo is None or hi is None else (lo, hi)


def break_even_text(s: StartSummary) -> str:
    """``6,659 calls``, ``at once``, or why there is none."""
    if s.first_fast is None:
        return "–"
    be = s.break_even
    if be is None:
        if s.call_ms is not None and s.eager_ms is not None and s.eager_ms <= s.call_ms:
            return "never (not faster than eager per call)"
        return "–"
    text = "at once" if be == 0 else f"{be:,.0f} calls"
    spread = s.break_even_range
    if spread is not None and spread[0] != spread[1]:
        text += f" ({spread[0]:,.0f}–{spread[1]:,.0f})"
    return text


#: The columns of a cold-start job's table, in the CLI and in the window.
SUMMARY_COLUMNS = ["variant", "start", "first result", "first fast call", "compile (1st call)", "per call",
                   "eager per call", "break-even"]


def summary_rows(summary: list[StartSummary]) -> list[list[str]]:
    """The table's cells (:data:`SUMMARY_COLUMNS`), a row per variant and start kind."""
    rows = []
    for s in summary:
        rows.append([
            s.variant, s.start,
            s.first_result.text() if s.first_result else "–",
            s.first_fast.text() if s.first_fast else "–",
            s.first_call.text() if s.first_call and s.start != "eager" else "–",
            f"{s.call_ms:.3f} ms" if s.call_ms is not None else "–",
            f"{s.eager_ms:.3f} ms" if s.eager_ms is not None else "–",
            "–" if s.start == "eager" else break_even_text(s),
        ])
    return rows


def summarize(record: ColdStartRecord) -> list[StartSummary]:
    """Per variant and start kind (eager first), in the order they ran."""
    eager_points = [p for p in record.points if p.start == EAGER_START and p.error is None]
    eager_first = Spread.of([p.first_result_s for p in eager_points])
    out = []
    keys: list[tuple[str, str]] = []
    for p in record.points:
        if (p.variant, p.start) not in keys:
            keys.append((p.variant, p.start))
    order = (EAGER_START, *START_KINDS)
    keys.sort(key=lambda k: (k[0] != "eager", order.index(k[1]) if k[1] in order else 9))
    for variant, start in keys:
        pts = [p for p in record.points if p.variant == variant and p.start == start]
        ok = [p for p in pts if p.error is None]
        phases: dict[str, float] = {}
        for name in PHASES:
            values = [p.phases.get(name, 0.0) for p in ok if p.phases]
            if any(values):
                phases[name] = statistics.median(values)
        # the same compiled code runs after any start: its time per call is pooled over them all
        call = [p.call_ms for p in record.points if p.variant == variant and p.error is None
                and p.call_ms is not None and (p.start == EAGER_START) == (start == EAGER_START)]
        eager = [p.call_ms for p in eager_points if p.call_ms is not None]
        out.append(StartSummary(
            variant=variant, start=start,
            first_result=Spread.of([p.first_result_s for p in ok]),
            first_fast=Spread.of([p.first_fast_s for p in ok]),
            first_call=Spread.of([p.first_call_s for p in ok]),
            call_ms=statistics.median(call) if call else None,
            eager_ms=statistics.median(eager) if eager else None,
            eager_first_result=eager_first.median if eager_first else None,
            phases=phases, failed=len(pts) - len(ok),
            errors=[p.error for p in pts if p.error][:3],
            loaded=max((sum(p.loaded.values()) for p in ok), default=0),
            cache_hits=max((p.cache.get("fx_graph_hits", 0) + p.cache.get("aot_hits", 0) for p in ok), default=0),
        ))
    return out


# -- files ---------------------------------------------------------------------------------------

def coldstart_to_json(record: ColdStartRecord) -> str:
    """coldstart.json's text: the record whole, with its summary in figures."""
    doc = {
        "schema_version": COLDSTART_SCHEMA_VERSION, "app_version": record.app_version,
        "kind": COLDSTART_KIND, "sweep_id": record.sweep_id, "created": record.created,
        "rounds": record.rounds, "kinds": record.kinds, "calls": record.calls,
        "status": record.status, "message": record.message,
        "owner_pid": record.owner_pid, "owner_host": record.owner_host,
        "loaded_cache": record.loaded_cache, "saved_cache": record.saved_cache, "notes": record.notes,
        "config": record.config.to_dict(), "environment": record.environment,
        "summary": [
            {"variant": s.variant, "start": s.start,
             "first_result_s": asdict(s.first_result) if s.first_result else None,
             "first_fast_s": asdict(s.first_fast) if s.first_fast else None,
             "call_ms": s.call_ms, "eager_ms": s.eager_ms, "break_even_calls": s.break_even,
             "phases": s.phases}
            for s in summarize(record)
        ],
        "points": [asdict(p) for p in record.points],
    }
    return json.dumps(json_safe(doc), indent=2, allow_nan=False, default=str) + "\n"


def coldstart_to_csv(record: ColdStartRecord) -> str:
    """coldstart.csv: one row per process (round, variant, start kind)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLDSTART_CSV_COLUMNS)
    for p in record.points:
        row = {**asdict(p), **{k: p.cache.get(k) for k in ("fx_graph_hits", "fx_graph_misses", "aot_hits", "aot_misses")},
               "artifacts_loaded": sum(p.loaded.values()) if p.loaded else None,
               **{f"phase {k}": p.phases.get(k) for k in PHASES}}
        writer.writerow([safe_cell(row.get(c)) for c in COLDSTART_CSV_COLUMNS])
    return buf.getvalue()


class ColdStartFolder(RecordFolder):
    """A cold-start job's folder and record (coldstart.json, coldstart.csv), saved after every point."""

    name_word = "coldstart"
    what = "cold-start job"
    json_name = COLDSTART_JSON
    csv_name = COLDSTART_CSV
    record: ColdStartRecord
    _to_json = staticmethod(coldstart_to_json)
    _to_csv = staticmethod(coldstart_to_csv)


# -- reading back --------------------------------------------------------------------------------

def is_coldstart_folder(path: str | Path) -> bool:
    """Whether ``path`` is a cold-start folder or its coldstart.json."""
    return is_record_folder(path, COLDSTART_JSON)


_POINT = Schema.of_dataclass("cold-start point", ColdStartPoint)
_TOP = job_top(rounds=int, calls=int)


def point_from_dict(item: Any, problems: list[str]) -> ColdStartPoint | None:
    """A point from a saved record or a worker's event, every value checked (None: not a point)."""
    values = _POINT.read(item, problems)
    if not isinstance(values.get("variant"), str) or values.get("start") not in (EAGER_START, *START_KINDS) \
            or not isinstance(values.get("round"), int):
        problems.append("no variant, start kind or round: left out")
        return None
    for name in ("phases", "cache", "loaded"):
        raw = values.get(name)
        values[name] = {str(a)[:60]: b for a, b in list(raw.items() if isinstance(raw, dict) else [])[:20]
                        if isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b)}
    if isinstance(values.get("error"), str):
        values["error"] = values["error"][:1000]
    return ColdStartPoint(**values)


def load_coldstart(path: str | Path) -> ColdStartRecord:
    """Read a cold-start folder (or its coldstart.json); SweepDamaged saying why it cannot."""
    record: ColdStartRecord = load_record(path, COLDSTART_JSON, _read, SweepDamaged, MAX_SWEEP_JSON_BYTES)
    return record


def _read(folder: Path, doc: Any) -> ColdStartRecord:
    problems: list[str] = []
    top, config = read_job_head(doc, COLDSTART_KIND, COLDSTART_JSON, "cold-start", _TOP, MAX_COLDSTART_POINTS, problems)
    points = []
    for k, item in enumerate(doc["points"]):
        own: list[str] = []
        point = point_from_dict(item, own)
        problems.extend(f"point {k}: {p}" for p in own)
        if point is not None:
            points.append(point)
    kinds = [k for k in doc.get("kinds", []) if k in START_KINDS] if isinstance(doc.get("kinds"), list) else []

    def text(key: str) -> str | None:
        v = doc.get(key)
        return v[:1000] if isinstance(v, str) else None

    record = ColdStartRecord(
        **job_fields(top, folder), config=config,
        rounds=top.get("rounds") or 1, kinds=kinds or list(START_KINDS), calls=top.get("calls") or 20,
        points=points, environment=read_environment(doc.get("environment"), COLDSTART_JSON, problems),
        loaded_cache=text("loaded_cache"), saved_cache=text("saved_cache"),
        notes=[n[:1000] for n in doc.get("notes", []) if isinstance(n, str)][:20]
        if isinstance(doc.get("notes"), list) else [],
        schema_version=top.get("schema_version") or 1,
        load_problems=problems,
    )
    mark_job_interrupted(record, folder, "cold-start job")
    return record


__all__ += ["COMPLETE", "PHASES", "Spread", "point_from_dict"]
