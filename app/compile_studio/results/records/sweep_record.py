"""The sweep record (sweep.json) and its points, and the record as JSON and as sweep.csv.

``sweep.json`` is the record: the swept parameter and its values, the base
configuration, the environment, and every point with its status, its run
folder's name and the summary numbers of each variant. ``sweep.csv`` is the
same numbers as a table, one row per point × variant. What is written here
is read back, checked, by sweep_load.py: the two change in step.
"""

from __future__ import annotations

import copy
import csv
import io
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ... import __version__
from ...core.config import BenchmarkConfig
from ..analysis.summary import SummaryRow
from ..storage.file_io import safe_cell
from .schema import RunDamaged

SWEEP_JSON = "sweep.json"
SWEEP_CSV = "sweep.csv"
#: Version of sweep.json; whoever adds a field bumps it, the loader reads every older one.
SWEEP_SCHEMA_VERSION = 2
#: Largest sweep.json read (a thousand points of a dozen variants is about 5 MiB).
MAX_SWEEP_JSON_BYTES = 32 * 1024 * 1024
#: Most points in one sweep.
MAX_POINTS = 1000
#: Most variants kept per point.
MAX_POINT_VARIANTS = 64

# point statuses
PENDING = "pending"
RUNNING = "running"
COMPLETE = "complete"
FAILED = "failed"
STOPPED = "stopped"
POINT_STATUSES = (PENDING, RUNNING, COMPLETE, FAILED, STOPPED)
#: Points a resumed sweep runs again (a failed one only when asked to).
MISSING_STATUSES = (PENDING, RUNNING, STOPPED)

#: The columns of sweep.csv.
SWEEP_CSV_COLUMNS = [
    "point",
    "param",
    "value",
    "variant",
    "status",
    "median_ms",
    "p5_ms",
    "p95_ms",
    "iqr_pct",
    "speedup",
    "speedup_lo",
    "speedup_hi",
    "verdict",
    "compile_s",
    "break_even_calls",
    "tflops",
    "max_rel_error",
    "allclose",
    "graph_breaks",
    "recompiles",
    "run",
    "error",
]


class SweepDamaged(RunDamaged):
    """A sweep folder or sweep.json that cannot be read; the message says what is wrong."""


@dataclass(kw_only=True)
class JobRecord:
    """The fields a one-worker job's record starts with (a shape sweep's, a cold-start job's):
    its name, when and what it ran, its points, where, how it stands and the process running it.

    A record class lists it before its settings (``class R(JobRecord, Settings)``) so that
    the settings' fields come first, then these, then its own.
    """

    sweep_id: str
    created: str
    config: BenchmarkConfig
    points: list[Any] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    #: pending, running, complete, stopped or failed
    status: str = PENDING
    message: str = ""
    owner_pid: int = 0
    owner_host: str = ""


@dataclass
class PointVariant:
    """One variant of one point: the numbers of its run's stored summary row."""

    variant: str
    status: str = ""
    median_ms: float | None = None
    p5_ms: float | None = None
    p95_ms: float | None = None
    iqr_pct: float | None = None
    speedup: float | None = None
    speedup_lo: float | None = None
    speedup_hi: float | None = None
    verdict: str = ""
    compile_s: float | None = None
    break_even_calls: float | None = None
    tflops: float | None = None
    max_rel_error: float | None = None
    allclose: bool | None = None
    graph_breaks: int | None = None
    recompiles: int | None = None
    error: str = ""

    @classmethod
    def from_summary(cls, row: SummaryRow) -> PointVariant:
        return cls(
            variant=row.name,
            status=str(row.status),
            median_ms=row.median_ms,
            p5_ms=row.p5_ms,
            p95_ms=row.p95_ms,
            iqr_pct=row.iqr_pct,
            speedup=row.speedup,
            speedup_lo=row.speedup_lo,
            speedup_hi=row.speedup_hi,
            verdict=row.verdict,
            compile_s=row.compile_s,
            break_even_calls=row.break_even_calls,
            tflops=row.tflops,
            max_rel_error=row.max_rel_error,
            allclose=row.allclose,
            graph_breaks=row.graph_breaks,
            recompiles=row.recompiles,
            error=row.error or "",
        )


#: A point's swept value: a whole number, a name (dtype, layer sizes) or true/false.
PointValue = bool | int | str


@dataclass
class SweepPoint:
    """One value of the swept parameter: its status, its run folder and its variants' numbers."""

    index: int
    value: PointValue
    status: str = PENDING
    #: the name of the point's run folder inside the sweep folder ("" before it started)
    run: str = ""
    message: str = ""
    started: str = ""
    finished: str = ""
    #: run folders of earlier attempts (stopped, then resumed), kept with what they measured
    earlier_runs: list[str] = field(default_factory=list)
    variants: list[PointVariant] = field(default_factory=list)

    @property
    def missing(self) -> bool:
        """Not run to its end yet (pending, stopped or cut off while running)."""
        return self.status in MISSING_STATUSES

    def variant(self, name: str) -> PointVariant | None:
        return next((v for v in self.variants if v.variant == name), None)


@dataclass
class SweepRecord:
    """What sweep.json holds: the swept parameter, the base configuration and every point."""

    sweep_id: str
    created: str
    param: str
    config: BenchmarkConfig
    points: list[SweepPoint] = field(default_factory=list)
    #: how the values were given (``1:1024:x2``, ``1,4,16``), for the title
    values_text: str = ""
    environment: dict[str, Any] = field(default_factory=dict)
    #: running, complete, stopped or incomplete (its supervisor went away)
    status: str = PENDING
    message: str = ""
    concurrency: int = 1
    app_version: str = __version__
    schema_version: int = SWEEP_SCHEMA_VERSION
    #: the process running the sweep (pid and host), so a reader can tell a sweep left running
    owner_pid: int = 0
    owner_host: str = ""
    #: what did not fit when the record was read from disk
    load_problems: list[str] = field(default_factory=list, compare=False)

    @property
    def values(self) -> list[PointValue]:
        return [p.value for p in self.points]

    def variant_names(self) -> list[str]:
        """The variants of the points, in the configuration's order, then any others met."""
        names = list(self.config.variants)
        for p in self.points:
            for v in p.variants:
                if v.variant not in names:
                    names.append(v.variant)
        return names

    def counts(self) -> dict[str, int]:
        """How many points have each status."""
        out = {s: 0 for s in POINT_STATUSES}
        for p in self.points:
            out[p.status] = out.get(p.status, 0) + 1
        return out

    def title(self) -> str:
        c = self.config
        values = self.values_text or ", ".join(str(v) for v in self.values)
        return f"{self.param} over {values} · {c.model_text()} · {c.dtype} · {c.device}"

    def copy(self) -> SweepRecord:
        return copy.deepcopy(self)


def point_variant_fields() -> list[str]:
    """The names of a point variant's numbers (the columns of sweep.csv after the point's)."""
    return [f.name for f in fields(PointVariant)]


# -- writing ------------------------------------------------------------------------------

def record_to_json(record: SweepRecord) -> str:
    """sweep.json's text: the record whole."""
    doc = {
        "schema_version": SWEEP_SCHEMA_VERSION,
        "app_version": record.app_version,
        "kind": "compile-studio-sweep",
        "sweep_id": record.sweep_id,
        "created": record.created,
        "param": record.param,
        "values_text": record.values_text,
        "status": record.status,
        "message": record.message,
        "concurrency": record.concurrency,
        "owner_pid": record.owner_pid,
        "owner_host": record.owner_host,
        "config": record.config.to_dict(),
        "environment": record.environment,
        "points": [asdict(p) for p in record.points],
    }
    return json.dumps(doc, indent=2, allow_nan=False, default=str) + "\n"


def record_to_csv(record: SweepRecord) -> str:
    """sweep.csv: one row per point × variant of the points that ran."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SWEEP_CSV_COLUMNS)
    for p in record.points:
        for v in p.variants:
            data = asdict(v)
            row = {
                **data,
                "point": p.index,
                "param": record.param,
                "value": p.value,
                "run": p.run,
            }
            writer.writerow([safe_cell(row.get(c)) for c in SWEEP_CSV_COLUMNS])
    return buf.getvalue()
