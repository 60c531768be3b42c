"""The run store: one folder per run holding run.json, samples.csv, summary.csv.

``samples.csv`` is appended (and flushed) batch by batch while a run goes, so
a crash loses at most the batch in flight; ``run.json`` and ``summary.csv``
are replaced atomically (temp file + rename). Written by the supervising side
only, never by the worker.
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
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from ..protocol import RunStatus, VariantStatus
from .run_result import (
    GPU_STATE_COLUMNS,
    SCHEMA_VERSION,
    RunResult,
    SummaryRow,
    VariantResult,
    config_from_saved,
    summarize,
)

RUN_JSON = "run.json"
SAMPLES_CSV = "samples.csv"
SUMMARY_CSV = "summary.csv"
SAMPLES_COLUMNS = ["variant", "iteration", "phase", "wall_ms", "device_ms", "round"]
#: samples.csv of schema 1 (no rounds)
SAMPLES_COLUMNS_V1 = SAMPLES_COLUMNS[:5]
GPU_STATE_CSV = "gpu_state.csv"


class RunDamaged(Exception):
    """A run folder or file that cannot be read; the message says what is wrong."""


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temp file + rename (see atomic_write_bytes)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder + rename.

    On any failure the temp file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


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
        writer.writerow([_fmt(v) for v in row.to_dict().values()])
    return buf.getvalue()


def samples_to_csv(run: RunResult) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SAMPLES_COLUMNS)
    for name, v in run.variants.items():
        s = v.samples
        for i, p, w, d, r in zip(s.iteration, s.phase, s.wall_ms, s.device_ms, s.round):
            writer.writerow([name, i, p, _fmt(w), _fmt(d), _fmt(r)])
    return buf.getvalue()


def gpu_state_to_csv(run: RunResult) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(GPU_STATE_COLUMNS)
    for row in run.gpu_state:
        writer.writerow([_fmt(row.get(c)) for c in GPU_STATE_COLUMNS])
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
            self._csv.writerow([variant, first_iteration + k, phase, _fmt(float(w)), _fmt(d), r])
        self._samples.flush()

    def append_gpu_state(self, rows: list[dict[str, Any]]) -> None:
        """Append GPU state readings to gpu_state.csv (created with the first ones)."""
        if self._gpu is None:
            self._gpu = open(self.folder / GPU_STATE_CSV, "w", encoding="utf-8", newline="")
            self._gpu_csv = csv.writer(self._gpu, lineterminator="\n")
            self._gpu_csv.writerow(GPU_STATE_COLUMNS)
        for row in rows:
            self._gpu_csv.writerow([_fmt(row.get(c)) for c in GPU_STATE_COLUMNS])
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

def _parse_float(text: str) -> float | None:
    return float(text) if text != "" else None


def read_samples_csv(path: Path, run: RunResult) -> int:
    """Load samples.csv rows into ``run``; returns the number of rows skipped.

    A last line cut short by a crash is skipped, not fatal.
    """
    skipped = 0
    try:
        fh = open(path, encoding="utf-8", newline="")
    except OSError as exc:
        raise RunDamaged(f"cannot read {path.name}: {exc.strerror}") from None
    with fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header not in (SAMPLES_COLUMNS, SAMPLES_COLUMNS_V1):
            raise RunDamaged(
                f"{path.name} does not start with the header {','.join(SAMPLES_COLUMNS)}"
            )
        width = len(header)
        for row in reader:
            if len(row) != width:
                skipped += 1
                continue
            try:
                variant, it, phase, wall, dev = row[:5]
                iteration = int(it)
                wall_ms = float(wall)
                device_ms = _parse_float(dev)
                round_index = int(row[5]) if width > 5 and row[5] != "" else None
            except ValueError:
                skipped += 1
                continue
            s = run.variant(variant).samples
            s.iteration.append(iteration)
            s.phase.append(phase)
            s.wall_ms.append(wall_ms)
            s.device_ms.append(device_ms)
            s.round.append(round_index)
    return skipped


def read_gpu_state_csv(path: Path) -> list[dict[str, Any]]:
    """GPU state readings from gpu_state.csv (unreadable rows are skipped)."""
    types = {"t_s": float, "gpu": int, "variant": str, "iteration": int,
             "sm_clock_mhz": int, "temperature_c": int, "power_w": float}
    rows = []
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh)
            if next(reader, None) != GPU_STATE_COLUMNS:
                return []
            for raw in reader:
                if len(raw) != len(GPU_STATE_COLUMNS):
                    continue
                try:
                    rows.append(
                        {c: (types[c](v) if v != "" else None) for c, v in zip(GPU_STATE_COLUMNS, raw)}
                    )
                except ValueError:
                    continue
    except OSError:
        return []
    return rows


_VARIANT_FIELDS = {f.name for f in fields(VariantResult)} - {"samples", "name"}


def load_run(path: str | Path) -> RunResult:
    """Load a run from its folder, its run.json, or a bare samples.csv.

    Exported files with a prefix (``<prefix>run.json`` beside
    ``<prefix>samples.csv``) load as a pair from either file.

    Raises :class:`RunDamaged` with a readable reason when it cannot.
    """
    path = Path(path)
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
            return load_run(path.parent / f"{prefix}{RUN_JSON}")
        return _load_bare_samples(path)
    else:
        folder = path.parent
        run_json = path
        prefix = path.name[: -len(RUN_JSON)] if path.name.endswith(RUN_JSON) else ""
        samples = folder / f"{prefix}{SAMPLES_CSV}"
    try:
        text = run_json.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunDamaged(f"{run_json} does not exist") from None
    except OSError as exc:
        raise RunDamaged(f"cannot read {run_json.name}: {exc.strerror}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunDamaged(f"{run_json.name} is damaged (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(doc, dict) or "config" not in doc or "variants" not in doc:
        raise RunDamaged(f"{run_json.name} is not a Compile Studio run record")
    try:
        run = RunResult(
            run_id=str(doc.get("run_id", folder.name)),
            created=str(doc.get("created", "")),
            config=config_from_saved(doc["config"]),
            environment=dict(doc.get("environment") or {}),
            measurement=dict(doc.get("measurement") or {}),
            status=RunStatus.parse(doc.get("status"), RunStatus.INCOMPLETE),
            message=str(doc.get("message", "")),
            app_version=str(doc.get("app_version", "")),
            schema_version=int(doc.get("schema_version", SCHEMA_VERSION)),
        )
        for name, meta in dict(doc["variants"]).items():
            v = run.variant(name)
            for key, value in dict(meta).items():
                if key == "status":
                    v.status = VariantStatus.parse(value, VariantStatus.FAILED)
                elif key in _VARIANT_FIELDS:
                    setattr(v, key, value)
    except (TypeError, ValueError, AttributeError) as exc:
        raise RunDamaged(f"{run_json.name} has unexpected content ({exc})") from None
    gpu_csv = samples.parent / samples.name.replace(SAMPLES_CSV, GPU_STATE_CSV)
    if gpu_csv.exists():
        run.gpu_state = read_gpu_state_csv(gpu_csv)
    if samples.exists():
        skipped = read_samples_csv(samples, run)
        if skipped and run.status == "complete":
            raise RunDamaged(f"{SAMPLES_CSV} has {skipped} unreadable rows")
    elif run.status == "complete":
        raise RunDamaged(f"{SAMPLES_CSV} is missing")
    return run


def _load_bare_samples(path: Path) -> RunResult:
    run = RunResult(
        run_id=path.stem if path.name != SAMPLES_CSV else path.parent.name,
        created=datetime.fromtimestamp(path.stat().st_mtime).isoformat(timespec="seconds"),
        config=None,
        status=RunStatus.COMPLETE,
        message=f"samples only, from {path.name}",
    )
    read_samples_csv(path, run)
    for v in run.variants.values():
        v.status = VariantStatus.DONE
    if not run.variants:
        raise RunDamaged(f"{path.name} holds no samples")
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
        for folder in sorted(self.root.iterdir(), reverse=True):
            if not folder.is_dir() or folder.name.startswith("."):
                continue
            try:
                out.append(RunListing(folder, load_run(folder)))
            except RunDamaged as exc:
                out.append(RunListing(folder, None, str(exc)))
        return out

    def delete(self, folder: str | Path) -> None:
        folder = Path(folder)
        if folder.resolve().parent != self.root.resolve():
            raise ValueError(f"{folder} is not a run of this store")
        shutil.rmtree(folder)
