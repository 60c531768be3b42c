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

from ..protocol import Phase, RunStatus, VariantStatus
from .run_result import (
    GPU_STATE_COLUMNS,
    SCHEMA_VERSION,
    RunResult,
    SummaryRow,
    VariantResult,
    config_from_saved,
    summarize,
)
from .schema import (
    ENVIRONMENT,
    MAX_CSV_BYTES,
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


def run_to_json(run: RunResult) -> str:
    """run.json text: config, environment, status, per-variant diagnostics and stats."""
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
        "summary": [r.to_dict() for r in summarize(run)],
    }
    return json.dumps(_json_safe(doc), indent=2, sort_keys=False) + "\n"


def summary_to_csv(run: RunResult) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SummaryRow.fields())
    for row in summarize(run):
        writer.writerow([safe_cell(v) for v in row.to_dict().values()])
    return buf.getvalue()


def samples_to_csv(run: RunResult) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SAMPLES_COLUMNS)
    for name, v in run.variants.items():
        s = v.samples
        for i, p, w, d, r in zip(s.iteration, s.phase, s.wall_ms, s.device_ms, s.round):
            writer.writerow([safe_cell(name), i, p, _fmt(w), _fmt(d), _fmt(r)])
    return buf.getvalue()


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
        dev = device_ms if device_ms is not None else [None] * len(wall_ms)
        r = _fmt(round_index)
        for k, (w, d) in enumerate(zip(wall_ms, dev)):
            self._csv.writerow([safe_cell(variant), first_iteration + k, phase, _fmt(float(w)), _fmt(d), r])
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
        atomic_write_text(self.folder / RUN_JSON, run_to_json(self.run))

    def finish(self) -> None:
        """Close the CSVs being appended and write summary.csv and the final run.json."""
        self.close()
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


def read_samples_csv(path: Path, run: RunResult) -> int:
    """Load samples.csv rows into ``run``; returns the number of rows skipped.

    A row that does not fit (a last line cut short by a crash, undecodable
    bytes, an overlong field, a value that is not a finite number) is skipped
    and counted, not fatal. Raises :class:`RunDamaged` when the file cannot be
    read or does not start with the samples header.
    """
    lines = CsvLines(path)
    skipped = 0
    reader = csv.reader(lines)
    try:
        header = next(reader, None)
    except csv.Error:
        header = None
    if header not in (SAMPLES_COLUMNS, SAMPLES_COLUMNS_V1):
        raise RunDamaged(
            f"{path.name} does not start with the header {','.join(SAMPLES_COLUMNS)}"
        )
    width = len(header)
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
        if variant not in run.variants and len(run.variants) >= MAX_VARIANTS:
            skipped += 1
            continue
        s = run.variant(variant).samples
        s.iteration.append(iteration)  # type: ignore[arg-type]
        s.phase.append(phase)
        s.wall_ms.append(wall_ms)  # type: ignore[arg-type]
        s.device_ms.append(device_ms)
        s.round.append(round_index)
    return skipped + lines.skipped


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


def load_run(path: str | Path) -> RunResult:
    """Load a run from its folder, its run.json, or a bare samples.csv.

    Exported files with a prefix (``<prefix>run.json`` beside
    ``<prefix>samples.csv``) load as a pair from either file.

    Every value is checked (see :mod:`results.schema`): a field that does not
    fit falls back to its default, a row that does not fit is skipped, and
    both are listed in ``run.load_problems``. Raises :class:`RunDamaged` with a
    readable reason when the run cannot be read at all, and nothing else.
    """
    try:
        return _load_run(Path(path))
    except RunDamaged:
        raise
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError,
            MemoryError, csv.Error) as exc:
        raise RunDamaged(f"cannot be read ({type(exc).__name__}: {str(exc)[:100]})") from None


def _load_run(path: Path) -> RunResult:
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
            return _load_run(path.parent / f"{prefix}{RUN_JSON}")
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
    if samples.exists() or samples.is_symlink():
        skipped = read_samples_csv(samples, run)
        if skipped:
            problems.append(f"{SAMPLES_CSV}: {skipped} unreadable rows skipped")
    elif run.status == "complete":
        raise RunDamaged(f"{SAMPLES_CSV} is missing")
    run.load_problems = problems
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

    def list_runs(self) -> list[RunListing]:
        """Every run folder, newest first; damaged ones listed with the reason."""
        if not self.root.is_dir():
            return []
        out = []
        try:
            entries = sorted(self.root.iterdir(), reverse=True)
        except OSError:
            return []
        for folder in entries:
            if not folder.is_dir() or folder.name.startswith("."):
                continue
            try:
                out.append(RunListing(folder, load_run(folder)))
            except RunDamaged as exc:
                out.append(RunListing(folder, None, str(exc)))
            except Exception as exc:  # noqa: BLE001 - one run never stops the listing
                out.append(RunListing(folder, None, f"cannot be read ({type(exc).__name__})"))
        return out

    def delete(self, folder: str | Path) -> None:
        folder = Path(folder)
        if folder.resolve().parent != self.root.resolve():
            raise ValueError(f"{folder} is not a run of this store")
        shutil.rmtree(folder)
