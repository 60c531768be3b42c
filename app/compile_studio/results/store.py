"""The run store: one folder per run holding run.json, samples.csv, summary.csv.

``samples.csv`` is appended (and flushed) batch by batch while a run goes, so
a crash loses at most the batch in flight; ``run.json`` and ``summary.csv``
are replaced atomically (temp file + rename). Written by the supervising side
only, never by the worker.

Longer than most modules, on purpose: writing and reading each file format sit
side by side so the two stay in step; the checks on what is read are in
schema.py.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..protocol import Phase, RunStatus, VariantStatus
from .run_result import (
    GPU_STATE_COLUMNS,
    NO_ROUND,
    PHASE_NAMES,
    SCHEMA_VERSION,
    SUMMARY_VERSION,
    RunResult,
    SummaryRow,
    VariantResult,
    config_from_saved,
    summarize,
)
from .schema import (
    ENVIRONMENT,
    MAX_CSV_BYTES,
    MAX_CSV_LINE,
    MAX_NAME,
    MAX_RUN_JSON_BYTES,
    MAX_VARIANTS,
    MEASUREMENT,
    RUN_DOCUMENT,
    VARIANT_CHECKS,
    CsvLines,
    RunDamaged,
    Schema,
    cell_float,
    cell_int,
    cell_name,
    check_regular_file,
    parse_json_document,
    read_bytes_capped,
)

RUN_JSON = "run.json"
SAMPLES_CSV = "samples.csv"
SUMMARY_CSV = "summary.csv"
SAMPLES_COLUMNS = ["variant", "iteration", "phase", "wall_ms", "device_ms", "round"]
#: samples.csv of schema 1 (no rounds)
SAMPLES_COLUMNS_V1 = SAMPLES_COLUMNS[:5]
GPU_STATE_CSV = "gpu_state.csv"


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temp file + rename (see atomic_write_bytes)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def current_umask() -> int:
    """The process's umask (read without changing it where the system allows)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder + rename.

    The file gets the permissions the user's umask gives a new file (a temp
    file starts private). On any failure the temp file is removed and
    ``path`` is left as it was.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), 0o666 & ~current_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


#: First characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> str:
    """A CSV cell: numbers as they are (``-0.5`` stays a number), text that a
    spreadsheet would run as a formula prefixed with ``'`` (see :func:`read_cell`)."""
    if isinstance(value, str):
        return "'" + value if value.startswith(_FORMULA_START) else value
    return _fmt(value)


def read_cell(text: str) -> str:
    """The text :func:`safe_cell` wrote."""
    if text.startswith("'") and text[1:2] and text[1:].startswith(_FORMULA_START):
        return text[1:]
    return text


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return str(value)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def run_to_json(run: RunResult, summary: list[SummaryRow] | None = None) -> str:
    """run.json text: config, environment, status, per-variant diagnostics and stats.

    ``summary`` is stored as the run's summary (by default :func:`summarize`),
    with ``summary_version`` and ``summary_samples`` (each variant's number of
    samples it was computed from), so that a reader can use it as it is.
    """
    rows = summarize(run) if summary is None else summary
    counts = run.summary_counts if summary is not None else {
        name: len(v.samples) for name, v in run.variants.items()
    }
    variants = {}
    for name, v in run.variants.items():
        meta = v.meta_dict()
        st = v.stats()
        meta["stats"] = st.to_dict() if st else None
        variants[name] = meta
    doc = {
        "schema_version": SCHEMA_VERSION,
        "app_version": run.app_version,
        "run_id": run.run_id,
        "created": run.created,
        "status": run.status,
        "message": run.message,
        "config": run.config.to_dict() if run.config is not None else {},
        "environment": run.environment,
        "measurement": run.measurement,
        "variants": variants,
        "summary_version": SUMMARY_VERSION,
        "summary_samples": counts,
        "summary": [r.to_dict() for r in rows],
    }
    return json.dumps(_json_safe(doc), indent=2, sort_keys=False) + "\n"


def summary_to_csv(run: RunResult) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SummaryRow.fields())
    for row in summarize(run):
        writer.writerow([safe_cell(v) for v in row.to_dict().values()])
    return buf.getvalue()


def _name_cell(name: str) -> str:
    """A name as one CSV cell (quoted where CSV needs it)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow([safe_cell(name)])
    return buf.getvalue()


def _sample_lines(
    name: str,
    iteration: list[int],
    phase: list[str],
    wall_ms: list[float],
    device_ms: list[float | None],
    round_index: list[int | None],
) -> str:
    """samples.csv lines (what csv.writer would write, built without it: it is the hot path)."""
    cell = _name_cell(name)
    return "".join(
        [
            f"{cell},{i},{p},{_fmt(w)},{_fmt(d)},{_fmt(r)}\n"
            for i, p, w, d, r in zip(iteration, phase, wall_ms, device_ms, round_index)
        ]
    )


def samples_to_csv(run: RunResult) -> str:
    parts = [",".join(SAMPLES_COLUMNS) + "\n"]
    for name, v in run.variants.items():
        s = v.samples
        parts.append(_sample_lines(name, s.iteration, s.phase, s.wall_ms, s.device_ms, s.round))
    return "".join(parts)


def gpu_state_to_csv(run: RunResult) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(GPU_STATE_COLUMNS)
    for row in run.gpu_state:
        writer.writerow([safe_cell(row.get(c)) for c in GPU_STATE_COLUMNS])
    return buf.getvalue()


class RunWriter:
    """Writes one run's folder as events arrive."""

    def __init__(self, folder: Path, run: RunResult):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.run = run
        self._samples = open(self.folder / SAMPLES_CSV, "w", encoding="utf-8", newline="")
        self._csv = csv.writer(self._samples, lineterminator="\n")
        self._csv.writerow(SAMPLES_COLUMNS)
        self._samples.flush()
        self._gpu: Any = None
        self._gpu_csv: Any = None
        self.write_run_json()

    def append_samples(
        self,
        variant: str,
        first_iteration: int,
        phase: str,
        wall_ms: list[float],
        device_ms: list[float | None] | None,
        round_index: int | None = None,
    ) -> None:
        n = len(wall_ms)
        dev = list(device_ms) if device_ms is not None else [None] * n
        self._samples.write(
            _sample_lines(
                variant,
                list(range(first_iteration, first_iteration + n)),
                [str(phase)] * n,
                [float(w) for w in wall_ms],
                [None if d is None else float(d) for d in dev],
                [round_index] * n,
            )
        )
        self._samples.flush()

    def append_gpu_state(self, rows: list[dict[str, Any]]) -> None:
        """Append GPU state readings to gpu_state.csv (created with the first ones)."""
        if self._gpu is None:
            self._gpu = open(self.folder / GPU_STATE_CSV, "w", encoding="utf-8", newline="")
            self._gpu_csv = csv.writer(self._gpu, lineterminator="\n")
            self._gpu_csv.writerow(GPU_STATE_COLUMNS)
        for row in rows:
            self._gpu_csv.writerow([safe_cell(row.get(c)) for c in GPU_STATE_COLUMNS])
        self._gpu.flush()

    def write_run_json(self) -> None:
        """run.json with the summary computed last (at the end of a variant), not computed again."""
        atomic_write_text(self.folder / RUN_JSON, run_to_json(self.run, self.run.last_summary()))

    def finish(self) -> None:
        """Close the CSVs being appended and write summary.csv and the final run.json."""
        self.close()
        summarize(self.run)
        atomic_write_text(self.folder / SUMMARY_CSV, summary_to_csv(self.run))
        self.write_run_json()

    def close(self) -> None:
        for fh in (self._samples, self._gpu):
            if fh is not None and not fh.closed:
                fh.close()


# -- reading ---------------------------------------------------------------
#
# Everything read goes through results.schema: regular files under a size
# cap, typed and bounded values, one bad row or field skipped and counted.

_SAMPLE_PHASES = frozenset(str(p) for p in Phase)
_PHASE_CODE = {name: code for code, name in enumerate(PHASE_NAMES)}
_PHASE_BYTES = {name.encode(): code for name, code in _PHASE_CODE.items() if name in _SAMPLE_PHASES}
#: Bytes of samples.csv parsed at a time by the fast reader.
_FAST_PIECE = 4 * 1024 * 1024
_NOT_NUMBER = re.compile(rb"[^0-9.eE+\-]")
_NOT_DIGIT = re.compile(rb"[^0-9]")


class _Columns:
    """Sample columns of one variant gathered row by row (the slow reader's), appended at once."""

    def __init__(self) -> None:
        self.iteration: list[int] = []
        self.phase: list[int] = []
        self.wall: list[float] = []
        self.device: list[float] = []
        self.round: list[int] = []

    def flush_into(self, run: RunResult, name: str) -> None:
        run.variant(name).samples.append_arrays(
            np.asarray(self.iteration, dtype=np.int64),
            np.asarray(self.phase, dtype=np.int8),
            np.asarray(self.wall, dtype=np.float64),
            np.asarray(self.device, dtype=np.float64),
            np.asarray(self.round, dtype=np.int64),
        )


def _read_header(path: Path) -> tuple[list[str], int]:
    """The header of samples.csv and the byte offset after it; RunDamaged when it is not the samples header."""
    check_regular_file(path, MAX_CSV_BYTES)
    try:
        with open(path, "rb") as fh:
            raw = fh.readline(MAX_CSV_LINE + 1)
    except OSError as exc:
        raise RunDamaged(f"cannot read {path.name}: {exc.strerror or exc}") from None
    header: list[str] | None = None
    try:
        header = next(csv.reader([raw.decode("utf-8")]), None)
    except (UnicodeDecodeError, csv.Error):
        header = None
    if header not in (SAMPLES_COLUMNS, SAMPLES_COLUMNS_V1) or not raw.endswith(b"\n"):
        raise RunDamaged(
            f"{path.name} does not start with the header {','.join(SAMPLES_COLUMNS)}"
        )
    return header, len(raw)  # type: ignore[return-value]


def _slow_rows(path: Path, start: int, width: int, run: RunResult) -> int:
    """Rows from byte ``start`` to the end, each checked on its own (any damage); the rows skipped."""
    lines = CsvLines(path, start=start)
    reader = csv.reader(lines)
    skipped = 0
    columns: dict[str, _Columns] = {}
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error:
            skipped += 1
            continue
        if len(row) != width:
            skipped += 1
            continue
        try:
            variant = cell_name(read_cell(row[0]))
            iteration = cell_int(row[1])
            phase = row[2]
            if phase not in _SAMPLE_PHASES:
                raise ValueError("unknown phase")
            wall_ms = cell_float(row[3])
            device_ms = cell_float(row[4], optional=True)
            round_index = cell_int(row[5], optional=True) if width > 5 else None
        except ValueError:
            skipped += 1
            continue
        if variant not in run.variants and variant not in columns:
            if len(run.variants) + len(columns) >= MAX_VARIANTS:
                skipped += 1
                continue
            run.variant(variant)
        c = columns.setdefault(variant, _Columns())
        c.iteration.append(iteration)  # type: ignore[arg-type]
        c.phase.append(_PHASE_CODE[phase])
        c.wall.append(wall_ms)  # type: ignore[arg-type]
        c.device.append(math.nan if device_ms is None else device_ms)
        c.round.append(NO_ROUND if round_index is None else round_index)  # type: ignore[arg-type]
    for name, c in columns.items():
        c.flush_into(run, name)
    return skipped + lines.skipped


def _fast_piece(piece: bytes, width: int, run: RunResult) -> int | None:
    """Whole lines of samples.csv parsed as columns; the rows skipped (not finite).

    None when the piece holds anything but plain rows (quotes, odd bytes,
    other widths, unknown names or phases, numbers that do not fit): the
    caller then reads it row by row, as every row used to be read.
    """
    if b'"' in piece or b"\r" in piece or b"\0" in piece:
        return None
    raw = np.frombuffer(piece, dtype=np.uint8)
    ends = np.flatnonzero(raw == 10)
    commas = np.flatnonzero(raw == 44)
    per_line = np.diff(np.searchsorted(commas, ends), prepend=0)
    if not np.all(per_line == width - 1):
        return None
    if ends.size and int(np.diff(ends, prepend=-1).max()) > MAX_CSV_LINE:
        return None
    flat = piece.replace(b"\n", b",").split(b",")
    cols = [flat[k : len(flat) - 1 : width] for k in range(width)]
    n = len(cols[0])
    names = {}
    for cell in dict.fromkeys(cols[0]):
        try:
            names[cell] = cell_name(read_cell(cell.decode("utf-8")))
        except (UnicodeDecodeError, ValueError):
            return None
    new = [x for x in dict.fromkeys(names.values()) if x not in run.variants]
    if len(run.variants) + len(new) > MAX_VARIANTS:
        return None
    if not set(dict.fromkeys(cols[2])) <= _PHASE_BYTES.keys():
        return None
    for k in (1, 5) if width > 5 else (1,):
        if _NOT_DIGIT.search(b"".join(cols[k])):
            return None
    for k in (3, 4):
        if _NOT_NUMBER.search(b"".join(cols[k])) or max(map(len, cols[k]), default=0) > 90:
            return None
    try:
        iteration = np.fromiter(map(int, cols[1]), np.int64, n)
        wall = np.fromiter(map(float, cols[3]), np.float64, n)
        device = (
            np.fromiter((float(d) if d else math.nan for d in cols[4]), np.float64, n)
            if any(cols[4]) else np.full(n, math.nan)
        )
        if width > 5:
            rounds = {r: (int(r) if r else NO_ROUND) for r in dict.fromkeys(cols[5])}
            round_index = np.fromiter(map(rounds.__getitem__, cols[5]), np.int64, n)
        else:
            round_index = np.full(n, NO_ROUND, dtype=np.int64)
    except (ValueError, OverflowError):
        return None
    phase = np.fromiter(map(_PHASE_BYTES.__getitem__, cols[2]), np.int8, n)
    keep = np.isfinite(wall) & ~np.isinf(device)
    skipped = n - int(np.count_nonzero(keep))
    order = list(dict.fromkeys(cols[0]))
    codes = {cell: k for k, cell in enumerate(order)}
    which = np.fromiter(map(codes.__getitem__, cols[0]), np.int32, n) if len(order) > 1 else None
    for k, cell in enumerate(order):
        rows = keep if which is None else keep & (which == k)
        run.variant(names[cell]).samples.append_arrays(
            iteration[rows], phase[rows], wall[rows], device[rows], round_index[rows]
        )
    return skipped


def read_samples_csv(path: Path, run: RunResult) -> int:
    """Load samples.csv rows into ``run``; returns the number of rows skipped.

    A row that does not fit (a last line cut short by a crash, undecodable
    bytes, an overlong field, a value that is not a finite number) is skipped
    and counted, not fatal. Raises :class:`RunDamaged` when the file cannot be
    read or does not start with the samples header.

    Plain rows are parsed a few MiB at a time as numpy columns; from the
    first piece that holds anything else on, rows are read and checked one
    by one (the same checks, one bad row skipped and counted).
    """
    header, offset = _read_header(path)
    width = len(header)
    skipped = 0
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            carry = b""
            while True:
                data = fh.read(_FAST_PIECE)
                if not data:
                    break
                data = carry + data
                cut = data.rfind(b"\n") + 1
                piece, carry = data[:cut], data[cut:]
                if not piece:
                    continue
                got = _fast_piece(piece, width, run)
                if got is None:
                    return skipped + _slow_rows(path, offset, width, run)
                skipped += got
                offset += len(piece)
    except OSError as exc:
        raise RunDamaged(f"cannot read {path.name}: {exc.strerror or exc}") from None
    if carry:
        # a last line without its end (a run cut short): read on its own
        skipped += _slow_rows(path, offset, width, run)
    return skipped


_GPU_CELLS: dict[str, Any] = {
    "t_s": lambda t: cell_float(t, optional=True),
    "gpu": lambda t: cell_int(t, optional=True),
    "variant": lambda t: cell_name(read_cell(t)) if t else None,
    "iteration": lambda t: cell_int(t, optional=True),
    "sm_clock_mhz": lambda t: cell_int(t, optional=True),
    "temperature_c": lambda t: cell_int(t, optional=True),
    "power_w": lambda t: cell_float(t, optional=True),
}


def read_gpu_state_csv(path: Path, problems: list[str] | None = None) -> list[dict[str, Any]]:
    """GPU state readings from gpu_state.csv (rows that do not fit are skipped and counted)."""
    rows: list[dict[str, Any]] = []
    skipped = 0
    try:
        lines = CsvLines(path)
        reader = csv.reader(lines)
        try:
            header = next(reader, None)
        except csv.Error:
            header = None
        if header != GPU_STATE_COLUMNS:
            raise RunDamaged(f"{path.name} does not start with its header")
        while True:
            try:
                raw = next(reader)
            except StopIteration:
                break
            except csv.Error:
                skipped += 1
                continue
            if len(raw) != len(GPU_STATE_COLUMNS):
                skipped += 1
                continue
            try:
                rows.append({c: _GPU_CELLS[c](v) for c, v in zip(GPU_STATE_COLUMNS, raw)})
            except ValueError:
                skipped += 1
        skipped += lines.skipped
    except RunDamaged as exc:
        if problems is not None:
            problems.append(str(exc))
        return rows
    if skipped and problems is not None:
        problems.append(f"{path.name}: {skipped} unreadable rows skipped")
    return rows


_VARIANT = Schema.of_dataclass("variant", VariantResult, skip=("samples", "name"))


def _read_variants(data: dict[str, Any], run: RunResult, problems: list[str]) -> None:
    for name, meta in data.items():
        if not isinstance(name, str) or len(name) > MAX_NAME or not name:
            problems.append("a variant with an unusable name was left out")
            continue
        if len(run.variants) >= MAX_VARIANTS:
            problems.append(f"more than {MAX_VARIANTS} variants: the rest were left out")
            break
        v = run.variant(name)
        if not isinstance(meta, dict):
            problems.append(f"variant {name[:40]!r} is not an object")
            v.status = VariantStatus.FAILED
            continue
        status = meta.get("status")
        values = _VARIANT.read({k: x for k, x in meta.items() if k != "status"}, problems)
        for key, value in values.items():
            setattr(v, key, value)
        v.status = VariantStatus.parse(
            status if isinstance(status, str) else None, VariantStatus.FAILED
        )
        if v.checks:
            v.checks = VARIANT_CHECKS.read(v.checks, problems)


def load_run(path: str | Path, samples: bool = True) -> RunResult:
    """Load a run from its folder, its run.json, or a bare samples.csv.

    Exported files with a prefix (``<prefix>run.json`` beside
    ``<prefix>samples.csv``) load as a pair from either file.

    The summary stored in run.json is read back (not computed again) when it
    is of this version and was computed from the samples the files hold; a
    run written by an older version is summarised once and the rows are kept
    in the summary cache (see :func:`summary_of`), never written into the
    run's own folder. ``samples`` False reads run.json alone (for lists): the
    samples are read when first needed (:meth:`RunResult.require_samples`).

    Every value is checked (see :mod:`results.schema`): a field that does not
    fit falls back to its default, a row that does not fit is skipped, and
    both are listed in ``run.load_problems``. Raises :class:`RunDamaged` with a
    readable reason when the run cannot be read at all, and nothing else.
    """
    try:
        return _load_run(Path(path), samples)
    except RunDamaged:
        raise
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError,
            MemoryError, csv.Error) as exc:
        raise RunDamaged(f"cannot be read ({type(exc).__name__}: {str(exc)[:100]})") from None


_SUMMARY_ROW = Schema.of_dataclass("summary", SummaryRow)


def _stored_summary(doc: dict[str, Any], run: RunResult) -> tuple[list[SummaryRow], dict[str, int]] | None:
    """The summary run.json holds, if it is of this version and names every variant; else None."""
    if doc.get("summary_version") != SUMMARY_VERSION:
        return None
    stored, counts = doc.get("summary"), doc.get("summary_samples")
    if not isinstance(stored, list) or not isinstance(counts, dict):
        return None
    fields_ = set(SummaryRow.fields())
    rows = []
    for item in stored:
        if not isinstance(item, dict) or set(item) != fields_:
            return None
        problems: list[str] = []
        values = _SUMMARY_ROW.read(item, problems)
        if problems:
            return None
        rows.append(SummaryRow(**values))
    if [r.name for r in rows] != list(run.variants):
        return None
    if set(counts) != set(run.variants) or not all(
        isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts.values()
    ):
        return None
    return rows, dict(counts)


def _load_run(path: Path, with_samples: bool = True) -> RunResult:
    run = _read_run(path, with_samples)
    folder = path if path.is_dir() else path.parent if path.name in (RUN_JSON, SAMPLES_CSV) else None
    run.source = Path(os.path.abspath(folder if folder is not None else path))
    return run


def _read_run(path: Path, with_samples: bool = True) -> RunResult:
    if path.is_dir():
        folder = path
        run_json = folder / RUN_JSON
        samples = folder / SAMPLES_CSV
        if not run_json.exists() and samples.exists():
            return _load_bare_samples(samples)
    elif path.name.endswith(".csv"):
        # an exported pair shares a prefix: "<prefix>samples.csv" + "<prefix>run.json"
        prefix = path.name[: -len(SAMPLES_CSV)] if path.name.endswith(SAMPLES_CSV) else None
        if prefix is not None and (path.parent / f"{prefix}{RUN_JSON}").exists():
            return _read_run(path.parent / f"{prefix}{RUN_JSON}", with_samples)
        return _load_bare_samples(path)
    else:
        folder = path.parent
        run_json = path
        prefix = path.name[: -len(RUN_JSON)] if path.name.endswith(RUN_JSON) else ""
        samples = folder / f"{prefix}{SAMPLES_CSV}"
    doc = parse_json_document(read_bytes_capped(run_json, MAX_RUN_JSON_BYTES), run_json.name)
    if not isinstance(doc, dict) or "config" not in doc or "variants" not in doc:
        raise RunDamaged(f"{run_json.name} is not a Compile Studio run record")
    problems: list[str] = []
    top = RUN_DOCUMENT.read(doc, problems)
    if not isinstance(top.get("variants"), dict):
        raise RunDamaged(f"{run_json.name}: variants is not an object")
    run = RunResult(
        run_id=top.get("run_id") or folder.name,
        created=top.get("created") or "",
        config=config_from_saved(top.get("config")),
        environment=ENVIRONMENT.read(top.get("environment") or {}, problems),
        measurement=MEASUREMENT.read(top.get("measurement") or {}, problems),
        status=RunStatus.parse(top.get("status"), RunStatus.INCOMPLETE),
        message=top.get("message") or "",
        app_version=top.get("app_version") or "",
        schema_version=top.get("schema_version") or SCHEMA_VERSION,
    )
    _read_variants(top["variants"], run, problems)
    gpu_csv = samples.parent / samples.name.replace(SAMPLES_CSV, GPU_STATE_CSV)
    if gpu_csv.exists() or gpu_csv.is_symlink():
        run.gpu_state = read_gpu_state_csv(gpu_csv, problems)
    run.load_problems = problems
    stored = _stored_summary(doc, run)
    has_samples = samples.exists() or samples.is_symlink()
    if not has_samples and run.status == "complete":
        raise RunDamaged(f"{SAMPLES_CSV} is missing")
    if has_samples:
        _read_header(samples)
    source = _SummarySource(run_json, samples if has_samples else None, stored)
    run.samples_loader = source.load_samples
    if with_samples:
        source.load_samples(run)
    else:
        run.samples_loaded = False
        rows = stored or source.cached()
        if rows is not None:
            run.set_summary(*rows)
    return run


class _SummarySource:
    """Where a run's samples and its summary come from: its files, and the summary cache."""

    def __init__(
        self,
        run_json: Path,
        samples: Path | None,
        stored: tuple[list[SummaryRow], dict[str, int]] | None,
    ) -> None:
        self.run_json = run_json
        self.samples = samples
        self.stored = stored

    def load_samples(self, run: RunResult) -> None:
        """Read the samples into ``run`` and key the summary read back (stored or cached) to them."""
        if run.samples_loaded and run.samples_loader is None:
            return
        run.samples_loader = None
        run.samples_loaded = True
        if self.samples is not None:
            skipped = read_samples_csv(self.samples, run)
            if skipped:
                run.load_problems.append(f"{SAMPLES_CSV}: {skipped} unreadable rows skipped")
        counts = {name: len(v.samples) for name, v in run.variants.items()}
        run._summary = None
        if self.stored is not None and self.stored[1] == counts:
            run.set_summary(*self.stored)
            return  # the summary is the run's own: no cache is looked at (nor its folder located)
        found = self.cached()
        if found is not None and found[1] == counts:
            run.set_summary(*found)
        run.summary_cache_path = self.cache_path()

    def cache_path(self) -> Path | None:
        """The summary cache file of this state of the run's files (None when they cannot be read)."""
        try:
            parts = [str(self.run_json.resolve())]
            for p in (self.run_json, self.samples):
                if p is not None:
                    st = p.stat()
                    parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            return None
        digest = hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]
        return summary_cache_dir() / f"{digest}.json"

    def cached(self) -> tuple[list[SummaryRow], dict[str, int]] | None:
        path = self.cache_path()
        if path is None or not path.is_file():
            return None
        try:
            doc = parse_json_document(read_bytes_capped(path, MAX_RUN_JSON_BYTES), path.name)
        except RunDamaged:
            return None
        if not isinstance(doc, dict):
            return None
        names = [r.get("name") for r in doc.get("summary") or [] if isinstance(r, dict)]
        holder = RunResult(run_id="", created="", config=None)
        for name in names:
            if isinstance(name, str):
                holder.variant(name)
        return _stored_summary(doc, holder)


SUMMARY_CACHE_ENV = "COMPILE_STUDIO_CACHE_DIR"


def summary_cache_dir() -> Path:
    """Where summaries of runs written by older versions are kept once computed.

    ``$COMPILE_STUDIO_CACHE_DIR``; else ``cache`` in ``$COMPILE_STUDIO_DATA_DIR``
    when that is set; else the platform's user cache folder. A run's own
    folder is never written to: it may be someone else's, or read-only.
    """
    env = os.environ.get(SUMMARY_CACHE_ENV)
    if env:
        return Path(env) / "summaries"
    from .locations import DATA_DIR_ENV

    data = os.environ.get(DATA_DIR_ENV)
    if data:
        return Path(data) / "cache" / "summaries"
    import platformdirs

    from ..app_info import APPLICATION, ORGANIZATION

    return platformdirs.user_cache_path(APPLICATION, ORGANIZATION) / "summaries"


def summary_of(run: RunResult) -> list[SummaryRow]:
    """The run's summary: read back when stored or cached, else computed once and cached.

    The cache (see :func:`summary_cache_dir`) is for runs written by older
    versions, whose run.json holds no summary of this version; a cache that
    cannot be written only costs the computation next time.
    """
    known = run.known_summary()
    if known is not None:
        return known
    rows = summarize(run)
    path = run.summary_cache_path
    if path is not None:
        doc = {
            "summary_version": SUMMARY_VERSION,
            "summary_samples": run.summary_counts,
            "summary": [r.to_dict() for r in rows],
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps(_json_safe(doc)) + "\n")
        except OSError:
            pass
    return rows


def ensure_samples(run: RunResult) -> RunResult:
    """``run`` with its samples read (a run listed from run.json alone reads them now)."""
    run.require_samples()
    return run


def _load_bare_samples(path: Path) -> RunResult:
    check_regular_file(path, MAX_CSV_BYTES)
    run = RunResult(
        run_id=path.stem if path.name != SAMPLES_CSV else path.parent.name,
        created=datetime.fromtimestamp(path.stat().st_mtime).isoformat(timespec="seconds"),
        config=None,
        status=RunStatus.COMPLETE,
        message=f"samples only, from {path.name}",
    )
    skipped = read_samples_csv(path, run)
    for v in run.variants.values():
        v.status = VariantStatus.DONE
    if not run.variants:
        raise RunDamaged(f"{path.name} holds no samples")
    if skipped:
        run.load_problems = [f"{path.name}: {skipped} unreadable rows skipped"]
    return run


#: The record file of a sweep folder (``results.sweep_store``): such a folder is no run.
SWEEP_RECORDS = ("sweep.json", "shape_sweep.json")


def is_sweep_like(folder: Path) -> bool:
    """Whether ``folder`` holds a sweep (or shape-sweep) record rather than a run."""
    try:
        return folder.is_dir() and any((folder / name).is_file() for name in SWEEP_RECORDS)
    except OSError:
        return False


@dataclass
class RunListing:
    """One entry of the run store: a readable run, or a damaged folder and why."""

    folder: Path
    run: RunResult | None
    problem: str | None = None

    @property
    def damaged(self) -> bool:
        return self.run is None


class RunStore:
    """The folder of saved runs (one sub-folder per run)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def new_run_folder(self, slug: str, when: datetime | None = None) -> Path:
        when = when or datetime.now()
        base = f"{when:%Y%m%d-%H%M%S}_{re.sub(r'[^A-Za-z0-9_.+-]', '-', slug)[:80]}"
        self.root.mkdir(parents=True, exist_ok=True)
        for k in range(1000):
            name = base if k == 0 else f"{base}_{k}"
            folder = self.root / name
            try:
                folder.mkdir()
                return folder
            except FileExistsError:
                continue
        raise RuntimeError("cannot create a unique run folder")  # pragma: no cover

    def list_runs(self, samples: bool = True) -> list[RunListing]:
        """Every run folder, newest first; damaged ones listed with the reason.

        ``samples`` False reads each run.json alone (its stored summary), the
        samples when first needed (see :func:`load_run`).
        """
        if not self.root.is_dir():
            return []
        out = []
        try:
            entries = sorted(self.root.iterdir(), reverse=True)
        except OSError:
            return []
        for folder in entries:
            if not folder.is_dir() or folder.name.startswith(".") or is_sweep_like(folder):
                continue
            try:
                out.append(RunListing(folder, load_run(folder, samples=samples)))
            except RunDamaged as exc:
                out.append(RunListing(folder, None, str(exc)))
            except Exception as exc:  # noqa: BLE001 - one run never stops the listing
                out.append(RunListing(folder, None, f"cannot be read ({type(exc).__name__})"))
        return out

    def sweep_folders(self) -> list[Path]:
        """The sweep and shape-sweep folders in the store's folder, newest first (not runs:
        :meth:`list_runs` leaves them out)."""
        try:
            entries = sorted(self.root.iterdir(), reverse=True) if self.root.is_dir() else []
        except OSError:
            return []
        return [f for f in entries if not f.name.startswith(".") and is_sweep_like(f)]

    def delete(self, folder: str | Path) -> None:
        folder = Path(folder)
        if folder.resolve().parent != self.root.resolve():
            raise ValueError(f"{folder} is not a run of this store")
        shutil.rmtree(folder)
