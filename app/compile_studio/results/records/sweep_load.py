"""Loading sweep and shape-sweep folders back, every value checked (SweepDamaged says why not).

A sweep folder may come from elsewhere: everything read back is checked for
type and size as run folders are (see :mod:`results.records.schema`). A field that
does not fit falls back to its default, a point that does not fit is left
out; both are listed in the record's ``load_problems``. A record left
"running" by a process that is gone reads as stopped.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any

from ...core.config import BenchmarkConfig
from ...core.protocol import SHAPE_AXIS
from ..storage.owner_lock import held_by_a_process, owner_alive
from .record_load import (
    bounded_list,
    is_record_folder,
    load_record,
    read_environment,
    read_fields,
    record_folder_of,
)
from .run_result import config_from_saved
from .schema import (
    MAX_NAME,
    Schema,
)
from .shape_record import (
    MAX_SHAPE_POINTS,
    SHAPE_JSON,
    SHAPE_KIND,
    SHAPE_SCHEMA_VERSION,
    ShapePoint,
    ShapeSweepRecord,
    kept_reasons,
)
from .sweep_record import (
    MAX_POINT_VARIANTS,
    MAX_POINTS,
    MAX_SWEEP_JSON_BYTES,
    PENDING,
    POINT_STATUSES,
    RUNNING,
    STOPPED,
    SWEEP_JSON,
    SWEEP_SCHEMA_VERSION,
    PointVariant,
    SweepDamaged,
    SweepPoint,
    SweepRecord,
)

#: Why a point or sweep left "running" by a process that ended reads as stopped.
INTERRUPTED = "interrupted: the process running the sweep ended (resume runs it again)"

#: A run folder's name inside the sweep folder: one plain name, no path.
_FOLDER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")


# -- sweeps ---------------------------------------------------------------------------------

def is_sweep_folder(path: str | Path) -> bool:
    """Whether ``path`` is a sweep folder or its sweep.json (cheap: the file's name only)."""
    return is_record_folder(path, SWEEP_JSON)


def sweep_folder_of(path: Path) -> Path:
    """The sweep folder ``path`` names (the folder itself, or the folder of its sweep.json)."""
    return record_folder_of(path, SWEEP_JSON)


_TOP_FIELDS: dict[str, Any] = {
    "schema_version": int,
    "app_version": str,
    "kind": str,
    "sweep_id": str,
    "created": str,
    "param": str,
    "values_text": str,
    "status": str,
    "message": str,
    "concurrency": int,
    "owner_pid": int,
    "owner_host": str,
    "config": dict,
    "environment": dict,
    "points": list,
}
_VARIANT = Schema.of_dataclass("variant", PointVariant)
_POINT = Schema.of_dataclass("point", SweepPoint, skip=("variants",))


def _read_point(k: int, data: Any, problems: list[str]) -> SweepPoint | None:
    if not isinstance(data, dict):
        problems.append(f"point {k} is not an object: left out")
        return None
    if "value" not in data or "index" not in data:
        problems.append(f"point {k} has no index or value: left out")
        return None
    own: list[str] = []
    values = _POINT.read(data, own)
    if any(".index " in p or ".value " in p for p in own):
        problems.append(f"point {k}: " + "; ".join(own))
        return None
    problems.extend(own)
    status = values.get("status", PENDING)
    if status not in POINT_STATUSES:
        problems.append(f"point {k}: status {str(status)[:20]!r} is unknown: read as pending")
        values["status"] = PENDING
    for key in ("run",):
        name = values.get(key, "")
        if name and not _FOLDER_NAME.fullmatch(name):
            problems.append(f"point {k}: run {name[:40]!r} is not a folder name: left out")
            values[key] = ""
    values["earlier_runs"] = [n for n in values.get("earlier_runs", []) if _FOLDER_NAME.fullmatch(n)]
    point = SweepPoint(**values)
    raw_variants = bounded_list(data.get("variants", []), f"point {k}", "variants", MAX_POINT_VARIANTS, problems)
    for item in raw_variants:
        got = _VARIANT.read(item, problems)
        name = got.get("variant")
        if not isinstance(name, str) or not name or len(name) > MAX_NAME:
            problems.append(f"point {k}: a variant without a name left out")
            continue
        point.variants.append(PointVariant(**got))
    return point


def load_sweep(path: str | Path) -> SweepRecord:
    """Read a sweep folder (or its sweep.json); raises :class:`SweepDamaged` saying why it cannot.

    A field that does not fit falls back to its default, a point that does not
    fit is left out; both are listed in ``record.load_problems``.
    """
    record: SweepRecord = load_record(path, SWEEP_JSON, _read_sweep, SweepDamaged, MAX_SWEEP_JSON_BYTES)
    return record


def _read_sweep(folder: Path, doc: Any) -> SweepRecord:
    if not isinstance(doc, dict) or "points" not in doc or "param" not in doc:
        raise SweepDamaged(f"{SWEEP_JSON} is not a Compile Studio sweep record")
    problems: list[str] = []
    top = read_fields(doc, _TOP_FIELDS, SWEEP_JSON, problems)
    param = top.get("param")
    if not isinstance(param, str) or not param or len(param) > MAX_NAME:
        raise SweepDamaged(f"{SWEEP_JSON}: the swept parameter is missing or not a short name")
    raw_points = top.get("points")
    if not isinstance(raw_points, list):
        raise SweepDamaged(f"{SWEEP_JSON}: points is not a list")
    if len(raw_points) > MAX_POINTS:
        raise SweepDamaged(f"{SWEEP_JSON}: more than {MAX_POINTS:,} points")
    config = config_from_saved(top.get("config"))
    if config is None:
        raise SweepDamaged(f"{SWEEP_JSON}: the base configuration is missing")
    points = []
    seen: set[int] = set()
    for k, data in enumerate(raw_points):
        point = _read_point(k, data, problems)
        if point is None:
            continue
        if point.index in seen:
            problems.append(f"point {k}: index {point.index} appears twice: left out")
            continue
        seen.add(point.index)
        points.append(point)
    environment = read_environment(top.get("environment"), SWEEP_JSON, problems)
    concurrency = top.get("concurrency", 1)
    record = SweepRecord(
        sweep_id=top.get("sweep_id") or folder.name,
        created=top.get("created") or "",
        param=param,
        config=config,
        points=points,
        values_text=top.get("values_text") or "",
        environment=environment,
        status=top.get("status") or "incomplete",
        message=top.get("message") or "",
        concurrency=concurrency if isinstance(concurrency, int) and 1 <= concurrency <= 64 else 1,
        app_version=top.get("app_version") or "",
        schema_version=top.get("schema_version") or SWEEP_SCHEMA_VERSION,
        owner_pid=top.get("owner_pid") or 0,
        owner_host=top.get("owner_host") or "",
        load_problems=problems,
    )
    _mark_interrupted(record, folder)
    return record



def _owner_gone(record: SweepRecord | ShapeSweepRecord, folder: Path | None) -> bool:
    """Whether the process that ran a record is gone.

    The owner lock answers for a record run on this machine (a live owner holds
    it; a reused pid does not); the recorded pid and host answer otherwise.
    """
    held = held_by_a_process(folder) if folder is not None else None
    here = not record.owner_host or record.owner_host == socket.gethostname()
    if held is True:
        return False
    if held is None or not here:
        return not owner_alive(record.owner_pid, record.owner_host)
    return True


def _mark_interrupted(record: SweepRecord, folder: Path | None = None) -> None:
    """Points (and a sweep) marked running whose owner is gone read as stopped."""
    running = [p for p in record.points if p.status == RUNNING]
    if not running and record.status != RUNNING:
        return
    if not _owner_gone(record, folder):
        return
    for p in running:
        p.status = STOPPED
        p.message = INTERRUPTED
    if record.status == RUNNING:
        record.status = STOPPED
        record.message = INTERRUPTED



# -- shape sweeps ---------------------------------------------------------------------------

def is_shape_sweep_folder(path: str | Path) -> bool:
    """Whether ``path`` is a shape-sweep folder or its shape_sweep.json (by the file's name)."""
    return is_record_folder(path, SHAPE_JSON)


_SHAPE_POINT = Schema.of_dataclass("shape point", ShapePoint)


def job_top(**own: Any) -> dict[str, Any]:
    """The top fields of a one-worker job's record and their types: the common ones, the kind's
    ``own`` (its settings), then the schema version (the order problems are listed in)."""
    return {
        "app_version": str, "sweep_id": str, "created": str, "status": str, "message": str,
        "owner_pid": int, "owner_host": str, **own, "schema_version": int,
    }


_SHAPE_TOP = job_top(recompile_limit=int, repeats=int, axis=str)


def load_shape_sweep(path: str | Path) -> ShapeSweepRecord:
    """Read a shape-sweep folder (or its shape_sweep.json); :class:`SweepDamaged` saying why it cannot."""
    record: ShapeSweepRecord = load_record(path, SHAPE_JSON, _read_shape_sweep, SweepDamaged, MAX_SWEEP_JSON_BYTES)
    return record


def read_job_head(
    doc: Any, kind: str, name: str, what: str, top_fields: dict[str, Any], max_points: int, problems: list[str]
) -> tuple[dict[str, Any], BenchmarkConfig]:
    """What a one-worker job's record (shape sweep, cold-start job) is read with first: its
    top fields and its configuration; :class:`SweepDamaged` when it is not a ``kind`` record
    named ``name`` (a ``what`` record in words), has no configuration or too many points."""
    if not isinstance(doc, dict) or doc.get("kind") != kind or not isinstance(doc.get("points"), list):
        raise SweepDamaged(f"{name} is not a Compile Studio {what} record")
    top = read_fields(doc, top_fields, name, problems)
    config = config_from_saved(doc.get("config"))
    if config is None:
        raise SweepDamaged(f"{name}: the configuration is missing")
    if len(doc["points"]) > max_points:
        raise SweepDamaged(f"{name}: more than {max_points:,} points")
    return top, config


def job_fields(top: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A one-worker job record's own fields from its top fields read (missing ones defaulted)."""
    return {
        "sweep_id": top.get("sweep_id") or folder.name,
        "created": top.get("created") or "",
        "status": top.get("status") or "incomplete",
        "message": top.get("message") or "",
        "owner_pid": top.get("owner_pid") or 0,
        "owner_host": top.get("owner_host") or "",
        "app_version": top.get("app_version") or "",
    }


def mark_job_interrupted(record: Any, folder: Path, what: str) -> None:
    """A job record left running by a process that ended reads as stopped."""
    if record.status == RUNNING and _owner_gone(record, folder):
        record.status = STOPPED
        record.message = f"interrupted: the process running the {what} ended"


def _read_shape_sweep(folder: Path, doc: Any) -> ShapeSweepRecord:
    problems: list[str] = []
    top, config = read_job_head(doc, SHAPE_KIND, SHAPE_JSON, "shape-sweep", _SHAPE_TOP, MAX_SHAPE_POINTS, problems)
    batches = [b for b in doc.get("batches", []) if isinstance(b, int) and not isinstance(b, bool)] \
        if isinstance(doc.get("batches"), list) else []
    modes = [m for m in doc.get("modes", []) if isinstance(m, str) and len(m) <= MAX_NAME] \
        if isinstance(doc.get("modes"), list) else []
    found_axis = top.get("axis") or ""
    axis = found_axis if SHAPE_AXIS.fullmatch(found_axis) else ""
    if found_axis and not axis:
        problems.append("the swept axis is not NAME:DIM: read as the batch")
    points = []
    for k, item in enumerate(doc["points"]):
        own: list[str] = []
        values = _SHAPE_POINT.read(item, own)
        if not isinstance(values.get("variant"), str) or not isinstance(values.get("mode"), str) \
                or not isinstance(values.get("batch"), int):
            problems.append(f"point {k} has no variant, mode or batch: left out")
            continue
        problems.extend(f"point {k}: {p}" for p in own)
        if "recompile_reasons" in values:
            values["recompile_reasons"] = kept_reasons(values["recompile_reasons"])
        points.append(ShapePoint(**values))
    environment = read_environment(doc.get("environment"), SHAPE_JSON, problems)
    record = ShapeSweepRecord(
        **job_fields(top, folder),
        config=config,
        batches=batches,
        modes=modes,
        recompile_limit=top.get("recompile_limit") or 0,
        repeats=top.get("repeats") or 5,
        axis=axis,
        points=points,
        environment=environment,
        schema_version=top.get("schema_version") or SHAPE_SCHEMA_VERSION,
        load_problems=problems,
    )
    mark_job_interrupted(record, folder, "shape sweep")
    return record
