"""A sweep on disk: one folder holding sweep.json, sweep.csv and each point's run folder.

``sweep.json`` is the record: the swept parameter and its values, the base
configuration, the environment, and every point with its status, its run
folder's name and the summary numbers of each variant. ``sweep.csv`` is the
same numbers as a table, one row per point × variant. Both are replaced
atomically (temp file + rename) after every change of a point, so a sweep
stopped or killed at any moment keeps the points done.

A sweep folder may come from elsewhere: everything read back is checked for
type and size as run folders are (see :mod:`results.schema`); a file that
cannot be read raises :class:`SweepDamaged` saying why.

Over 500 lines because writing and the checked reading of sweep.json sit side
by side, so the two stay in step (as store.py does for runs).
"""

from __future__ import annotations

import copy
import csv
import errno
import io
import json
import os
import re
import socket
import threading
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..config import BenchmarkConfig
from .run_result import SummaryRow, config_from_saved
from .schema import (
    MAX_NAME,
    MAX_TEXT,
    RunDamaged,
    Schema,
    Unfit,
    check_regular_file,
    conform,
    parse_json_document,
    read_bytes_capped,
)
from .store import SWEEP_RECORDS, atomic_write_text, safe_cell

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

#: The lock file a running sweep holds (``flock``) for as long as it runs; freed when its process ends.
OWNER_LOCK = ".owner.lock"


class RecordBusy(Exception):
    """The record folder is being run by another live process (it holds the owner lock)."""


def _open_lock(path: Path, create: bool) -> int | None:
    flags = os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | (os.O_CREAT if create else 0)
    try:
        return os.open(path / OWNER_LOCK, flags, 0o600)
    except FileNotFoundError:
        return None


def held_by_a_process(folder: Path) -> bool | None:
    """Whether a live process holds ``folder``'s owner lock; None when there is no lock to ask."""
    if fcntl is None:
        return None
    try:
        fd = _open_lock(Path(folder), create=False)
    except OSError:
        return None
    if fd is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)
    return False

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

#: A run folder's name inside the sweep folder: one plain name, no path.
_FOLDER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")

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


# -- writing ------------------------------------------------------------------------------

def record_to_json(record: SweepRecord) -> str:
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


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return safe_cell(value)


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
            writer.writerow([_cell(row.get(c)) for c in SWEEP_CSV_COLUMNS])
    return buf.getvalue()


class _RecordFolder:
    """A folder holding one record, saved whole (JSON and CSV, each atomically) after every change.

    Safe to share between threads: :meth:`update` changes the record under a
    lock and saves it; :meth:`snapshot` gives a copy to read. A subclass names
    its files, its serialisers and the word its folders and messages use.
    """

    #: the word in the folder's name (``<time>_<word>_<slug>``)
    name_word = ""
    #: what a message calls it
    what = ""
    json_name = ""
    csv_name = ""

    def __init__(self, path: Path, record: Any):
        self.path = Path(path)
        self.record = record
        self._lock = threading.RLock()
        #: why the last save failed (None: saved)
        self.write_error: str | None = None
        self._owner_fd: int | None = None

    def claim(self) -> None:
        """Hold the folder's owner lock until :meth:`release` (or this process ends).

        Raises :class:`RecordBusy` when another process holds it: two owners
        would run the same points and both rewrite the record. A folder the lock
        file cannot be made in (read-only) is run without one: nothing can be
        saved there either.
        """
        if fcntl is None or self._owner_fd is not None:
            return
        try:
            fd = _open_lock(self.path, create=True)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EISDIR, errno.EMLINK):
                raise RecordBusy(
                    f"{self.path / OWNER_LOCK} is not a regular file: this {self.what} folder "
                    "cannot be run safely (remove that entry first)"
                ) from None
            return
        if fd is None:  # pragma: no cover - created above
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid, host = getattr(self.record, "owner_pid", 0), getattr(self.record, "owner_host", "")
            who = f" (pid {pid} on {host})" if pid and host else ""
            raise RecordBusy(
                f"this {self.what} is being run by another process{who}: wait for it to end "
                "or stop it there, then resume"
            ) from None
        except OSError:
            os.close(fd)
            return
        self._owner_fd = fd

    def release(self) -> None:
        """Let go of the owner lock (another process may resume the folder then)."""
        fd, self._owner_fd = self._owner_fd, None
        if fd is not None:
            os.close(fd)

    @staticmethod
    def _to_json(record: Any) -> str:
        raise NotImplementedError

    @staticmethod
    def _to_csv(record: Any) -> str:
        raise NotImplementedError

    @classmethod
    def _create(cls, root: Path, slug: str, record: Any, when: datetime | None) -> Any:
        when = when or datetime.now()
        base = f"{when:%Y%m%d-%H%M%S}_{cls.name_word}_{re.sub(r'[^A-Za-z0-9_.+-]', '-', slug)[:80]}"
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        for k in range(1000):
            path = root / (base if k == 0 else f"{base}_{k}")
            try:
                path.mkdir()
                break
            except FileExistsError:
                continue
        else:  # pragma: no cover - a thousand sweeps in one second
            raise OSError(f"cannot create a unique {cls.what.replace(' ', '-')} folder in {root}")
        record.sweep_id = path.name
        record.created = record.created or when.isoformat(timespec="seconds")
        folder = cls(path, record)
        folder.save(raise_errors=True)
        return folder

    def save(self, raise_errors: bool = False) -> bool:
        """Write the JSON and the CSV (atomically); returns whether it worked."""
        with self._lock:
            try:
                atomic_write_text(self.path / self.json_name, self._to_json(self.record))
                atomic_write_text(self.path / self.csv_name, self._to_csv(self.record))
            except OSError as exc:
                self.write_error = f"cannot write the {self.what} in {self.path}: {exc.strerror or exc}"
                if raise_errors:
                    raise
                return False
            self.write_error = None
            return True

    def update(self, change: Any = None) -> Any:
        """Apply ``change(record)`` (if given) under the lock, save, and return a copy of the record."""
        with self._lock:
            if change is not None:
                change(self.record)
            self.save()
            return self.record.copy()

    def snapshot(self) -> Any:
        with self._lock:
            return self.record.copy()


class SweepFolder(_RecordFolder):
    """A sweep's folder and its record (sweep.json, sweep.csv), saved as a whole after every change."""

    name_word = "sweep"
    what = "sweep"
    json_name = SWEEP_JSON
    csv_name = SWEEP_CSV
    record: SweepRecord
    _to_json = staticmethod(record_to_json)
    _to_csv = staticmethod(record_to_csv)

    @classmethod
    def create(cls, root: Path, slug: str, record: SweepRecord, when: datetime | None = None) -> SweepFolder:
        """A new sweep folder under ``root`` named ``<time>_sweep_<slug>``; writes sweep.json."""
        folder: SweepFolder = cls._create(root, slug, record, when)
        return folder

    @classmethod
    def open(cls, path: str | Path) -> SweepFolder:
        path = sweep_folder_of(Path(path))
        return cls(path, load_sweep(path))

    def run_folder(self, point: SweepPoint) -> Path | None:
        """The folder of ``point``'s run; None before it started."""
        return self.path / point.run if point.run else None


# -- reading ------------------------------------------------------------------------------

def is_sweep_folder(path: str | Path) -> bool:
    """Whether ``path`` is a sweep folder or its sweep.json (cheap: the file's name only)."""
    p = Path(path)
    try:
        if p.name == SWEEP_JSON and p.is_file():
            return True
        return p.is_dir() and (p / SWEEP_JSON).is_file()
    except OSError:
        return False


def sweep_folder_of(path: Path) -> Path:
    """The sweep folder ``path`` names (the folder itself, or the folder of its sweep.json)."""
    return path.parent if path.name == SWEEP_JSON and not path.is_dir() else path


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


def _read_top(doc: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    out = {}
    for key, hint in _TOP_FIELDS.items():
        if key not in doc:
            continue
        value = doc[key]
        if hint in (dict, list):
            if isinstance(value, hint):
                out[key] = value
            else:
                problems.append(f"sweep.json: {key} must be {'an object' if hint is dict else 'a list'}")
            continue
        try:
            out[key] = conform(value, hint, MAX_TEXT)
        except (Unfit, RecursionError) as exc:
            problems.append(f"sweep.json: {key} {exc}")
    return out


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
    raw_variants = data.get("variants", [])
    if not isinstance(raw_variants, list):
        problems.append(f"point {k}: variants is not a list")
        raw_variants = []
    if len(raw_variants) > MAX_POINT_VARIANTS:
        problems.append(f"point {k}: more than {MAX_POINT_VARIANTS} variants: the rest left out")
        raw_variants = raw_variants[:MAX_POINT_VARIANTS]
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
    folder = sweep_folder_of(Path(path))
    target = folder / SWEEP_JSON
    try:
        return _load(folder, target)
    except SweepDamaged:
        raise
    except RunDamaged as exc:
        raise SweepDamaged(str(exc)) from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError, MemoryError) as exc:
        raise SweepDamaged(f"{SWEEP_JSON} cannot be read ({type(exc).__name__}: {str(exc)[:100]})") from None


def _load(folder: Path, target: Path) -> SweepRecord:
    check_regular_file(target, MAX_SWEEP_JSON_BYTES)
    doc = parse_json_document(read_bytes_capped(target, MAX_SWEEP_JSON_BYTES), SWEEP_JSON)
    if not isinstance(doc, dict) or "points" not in doc or "param" not in doc:
        raise SweepDamaged(f"{SWEEP_JSON} is not a Compile Studio sweep record")
    problems: list[str] = []
    top = _read_top(doc, problems)
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
    environment = top.get("environment") or {}
    try:
        environment = conform(environment, Any)
    except Unfit as exc:
        problems.append(f"sweep.json: environment {exc}")
        environment = {}
    concurrency = top.get("concurrency", 1)
    record = SweepRecord(
        sweep_id=top.get("sweep_id") or folder.name,
        created=top.get("created") or "",
        param=param,
        config=config,
        points=points,
        values_text=top.get("values_text") or "",
        environment=environment if isinstance(environment, dict) else {},
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


# -- the process that runs a sweep ----------------------------------------------------------

#: Why a point or sweep left "running" by a process that ended reads as stopped.
INTERRUPTED = "interrupted: the process running the sweep ended (resume runs it again)"


def this_owner() -> tuple[int, str]:
    """(pid, host) of this process, as a sweep it runs records them."""
    return os.getpid(), socket.gethostname()


def owner_alive(pid: int, host: str) -> bool:
    """Whether the process ``pid`` on ``host`` may still be running a sweep.

    Only a process on this machine can be looked at: one elsewhere counts as
    alive. A record without an owner (written before owners were kept) is left
    by a process that is gone unless it is this one.
    """
    if host and host != socket.gethostname():
        return True
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _mark_interrupted(record: SweepRecord, folder: Path | None = None) -> None:
    """Points (and a sweep) marked running whose owner is gone read as stopped.

    The owner lock answers for a sweep run on this machine (a live owner holds
    it; a reused pid does not); the recorded pid and host answer otherwise.
    """
    running = [p for p in record.points if p.status == RUNNING]
    if not running and record.status != RUNNING:
        return
    held = held_by_a_process(folder) if folder is not None else None
    here = not record.owner_host or record.owner_host == socket.gethostname()
    if held is True:
        return
    if held is None or not here:
        if owner_alive(record.owner_pid, record.owner_host):
            return
    for p in running:
        p.status = STOPPED
        p.message = INTERRUPTED
    if record.status == RUNNING:
        record.status = STOPPED
        record.message = INTERRUPTED


def point_variant_fields() -> list[str]:
    """The names of a point variant's numbers (the columns of sweep.csv after the point's)."""
    return [f.name for f in fields(PointVariant)]


# -- shape sweeps ---------------------------------------------------------------------------

SHAPE_JSON = "shape_sweep.json"
assert SWEEP_JSON in SWEEP_RECORDS and SHAPE_JSON in SWEEP_RECORDS
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
]
#: Guard-failure reasons kept per point when read, and the longest kept.
MAX_SHAPE_REASONS = 3
MAX_SHAPE_REASON_CHARS = 300


@dataclass
class ShapePoint:
    """One point of a shape sweep (a ``shape_point`` event, kept): see ``protocol.ShapePointEvent``."""

    variant: str
    mode: str
    batch: int
    first_call_ms: float | None = None
    graphs: int = 0
    recompiles: int = 0
    limit_hit: bool = False
    fell_back: bool = False
    recompile_limit: int | None = None
    median_ms: float | None = None
    eager_ms: float | None = None
    speedup: float | None = None
    correct: bool | None = None
    max_error: float | None = None
    error: str | None = None
    #: Dynamo's guard-failure reasons for the recompiles at this point (the first few; none in older files)
    recompile_reasons: list[str] = field(default_factory=list)
    #: device (kernel) medians of the variant and of eager beside it, where measured
    device_median_ms: float | None = None
    eager_device_ms: float | None = None
    #: warm-up calls before the timed ones (the variant's, eager's), the timed calls, GC off while timed
    warmup_calls: int | None = None
    eager_warmup_calls: int | None = None
    timed_calls: int | None = None
    gc_off: bool | None = None

    @classmethod
    def from_event(cls, event: Any) -> ShapePoint:
        """From a ``shape_point`` event (any object with the same attributes)."""
        point = cls(**{f.name: getattr(event, f.name) for f in fields(cls) if hasattr(event, f.name)})
        point.recompile_reasons = _reasons(point.recompile_reasons)
        return point


def _reasons(value: Any) -> list[str]:
    """Recompile reasons as kept: text only, the first few, each cut short."""
    if not isinstance(value, list):
        return []
    out = []
    for r in value:
        if isinstance(r, str) and r.strip():
            r = " ".join(r.split())
            out.append(r if len(r) <= MAX_SHAPE_REASON_CHARS else r[: MAX_SHAPE_REASON_CHARS - 1] + "…")
    return out[:MAX_SHAPE_REASONS]


@dataclass
class ShapeSweepRecord:
    """What shape_sweep.json holds: the config, the batch sizes and modes, and every point."""

    sweep_id: str
    created: str
    config: BenchmarkConfig
    batches: list[int]
    modes: list[str]
    recompile_limit: int = 0
    repeats: int = 5
    points: list[ShapePoint] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    #: pending, running, complete, stopped or failed
    status: str = PENDING
    message: str = ""
    owner_pid: int = 0
    owner_host: str = ""
    app_version: str = __version__
    schema_version: int = SHAPE_SCHEMA_VERSION
    load_problems: list[str] = field(default_factory=list, compare=False)

    def title(self) -> str:
        c = self.config
        batches = ",".join(str(b) for b in self.batches)
        return f"shape sweep over batch {batches} · {c.model_text()} · {c.dtype} · {c.device}"

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
        "status": record.status,
        "message": record.message,
        "owner_pid": record.owner_pid,
        "owner_host": record.owner_host,
        "config": record.config.to_dict(),
        "environment": record.environment,
        "warnings": record.warnings(),
        "points": [asdict(p) for p in record.points],
    }
    return json.dumps(_no_nan(doc), indent=2, allow_nan=False, default=str) + "\n"


def _no_nan(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    return value


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
        writer.writerow([_cell(row.get(c)) for c in SHAPE_CSV_COLUMNS])
    return buf.getvalue()


def _mode_order(mode: str) -> int:
    order = ("eager", "false", "auto", "true")
    return order.index(mode) if mode in order else len(order)


class ShapeSweepFolder(_RecordFolder):
    """A shape sweep's folder and record (shape_sweep.json, .csv), saved whole after every point."""

    name_word = "shape"
    what = "shape sweep"
    json_name = SHAPE_JSON
    csv_name = SHAPE_CSV
    record: ShapeSweepRecord
    _to_json = staticmethod(shape_record_to_json)
    _to_csv = staticmethod(shape_record_to_csv)

    @classmethod
    def create(
        cls, root: Path, slug: str, record: ShapeSweepRecord, when: datetime | None = None
    ) -> ShapeSweepFolder:
        """A new folder under ``root`` named ``<time>_shape_<slug>``; writes shape_sweep.json."""
        folder: ShapeSweepFolder = cls._create(root, slug, record, when)
        return folder


def is_shape_sweep_folder(path: str | Path) -> bool:
    """Whether ``path`` is a shape-sweep folder or its shape_sweep.json (by the file's name)."""
    p = Path(path)
    try:
        if p.name == SHAPE_JSON and p.is_file():
            return True
        return p.is_dir() and (p / SHAPE_JSON).is_file()
    except OSError:
        return False


_SHAPE_POINT = Schema.of_dataclass("shape point", ShapePoint)
_SHAPE_TOP: dict[str, Any] = {
    "app_version": str, "sweep_id": str, "created": str, "status": str, "message": str,
    "owner_pid": int, "owner_host": str, "recompile_limit": int, "repeats": int, "schema_version": int,
}


def load_shape_sweep(path: str | Path) -> ShapeSweepRecord:
    """Read a shape-sweep folder (or its shape_sweep.json); :class:`SweepDamaged` saying why it cannot."""
    p = Path(path)
    folder = p.parent if p.name == SHAPE_JSON and not p.is_dir() else p
    target = folder / SHAPE_JSON
    try:
        return _load_shape(folder, target)
    except SweepDamaged:
        raise
    except RunDamaged as exc:
        raise SweepDamaged(str(exc)) from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError, MemoryError) as exc:
        raise SweepDamaged(f"{SHAPE_JSON} cannot be read ({type(exc).__name__}: {str(exc)[:100]})") from None


def _load_shape(folder: Path, target: Path) -> ShapeSweepRecord:
    check_regular_file(target, MAX_SWEEP_JSON_BYTES)
    doc = parse_json_document(read_bytes_capped(target, MAX_SWEEP_JSON_BYTES), SHAPE_JSON)
    if not isinstance(doc, dict) or doc.get("kind") != SHAPE_KIND or not isinstance(doc.get("points"), list):
        raise SweepDamaged(f"{SHAPE_JSON} is not a Compile Studio shape-sweep record")
    problems: list[str] = []
    top: dict[str, Any] = {}
    for key, hint in _SHAPE_TOP.items():
        if key in doc:
            try:
                top[key] = conform(doc[key], hint, MAX_TEXT)
            except (Unfit, RecursionError) as exc:
                problems.append(f"{SHAPE_JSON}: {key} {exc}")
    config = config_from_saved(doc.get("config"))
    if config is None:
        raise SweepDamaged(f"{SHAPE_JSON}: the configuration is missing")
    batches = [b for b in doc.get("batches", []) if isinstance(b, int) and not isinstance(b, bool)] \
        if isinstance(doc.get("batches"), list) else []
    modes = [m for m in doc.get("modes", []) if isinstance(m, str) and len(m) <= MAX_NAME] \
        if isinstance(doc.get("modes"), list) else []
    raw = doc["points"]
    if len(raw) > MAX_SHAPE_POINTS:
        raise SweepDamaged(f"{SHAPE_JSON}: more than {MAX_SHAPE_POINTS:,} points")
    points = []
    for k, item in enumerate(raw):
        own: list[str] = []
        values = _SHAPE_POINT.read(item, own)
        if not isinstance(values.get("variant"), str) or not isinstance(values.get("mode"), str) \
                or not isinstance(values.get("batch"), int):
            problems.append(f"point {k} has no variant, mode or batch: left out")
            continue
        problems.extend(f"point {k}: {p}" for p in own)
        if "recompile_reasons" in values:
            values["recompile_reasons"] = _reasons(values["recompile_reasons"])
        points.append(ShapePoint(**values))
    environment = doc.get("environment") if isinstance(doc.get("environment"), dict) else {}
    try:
        environment = conform(environment, Any)
    except Unfit as exc:
        problems.append(f"{SHAPE_JSON}: environment {exc}")
        environment = {}
    record = ShapeSweepRecord(
        sweep_id=top.get("sweep_id") or folder.name,
        created=top.get("created") or "",
        config=config,
        batches=batches,
        modes=modes,
        recompile_limit=top.get("recompile_limit") or 0,
        repeats=top.get("repeats") or 5,
        points=points,
        environment=environment if isinstance(environment, dict) else {},
        status=top.get("status") or "incomplete",
        message=top.get("message") or "",
        owner_pid=top.get("owner_pid") or 0,
        owner_host=top.get("owner_host") or "",
        app_version=top.get("app_version") or "",
        schema_version=top.get("schema_version") or SHAPE_SCHEMA_VERSION,
        load_problems=problems,
    )
    if record.status == RUNNING and not owner_alive(record.owner_pid, record.owner_host):
        record.status = STOPPED
        record.message = "interrupted: the process running the shape sweep ended"
    return record
