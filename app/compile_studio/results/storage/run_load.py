"""Loading a run from its folder, its run.json or a bare samples.csv, every value checked."""

from __future__ import annotations

import csv
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.protocol import RunStatus, VariantStatus
from ..records.run_result import SCHEMA_VERSION, RunResult, VariantResult, config_from_saved
from ..records.schema import (
    ENVIRONMENT,
    MAX_CSV_BYTES,
    MAX_NAME,
    MAX_RUN_JSON_BYTES,
    MAX_VARIANTS,
    MEASUREMENT,
    RUN_DOCUMENT,
    VARIANT_CHECKS,
    RunDamaged,
    Schema,
    check_regular_file,
    parse_json_document,
    read_bytes_capped,
)
from .csv_readers import read_gpu_state_csv, read_header, read_samples_csv
from .run_files import GPU_STATE_CSV, RUN_JSON, SAMPLES_CSV
from .summary_cache import SummarySource, stored_summary

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
    in the summary cache (see :func:`.summary_cache.summary_of`), never
    written into the run's own folder. ``samples`` False reads run.json alone (for lists): the
    samples are read when first needed (:meth:`RunResult.require_samples`).

    Every value is checked (see :mod:`results.records.schema`): a field that does not
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
    stored = stored_summary(doc, run)
    has_samples = samples.exists() or samples.is_symlink()
    if not has_samples and run.status == "complete":
        raise RunDamaged(f"{SAMPLES_CSV} is missing")
    if has_samples:
        read_header(samples)
    source = SummarySource(run_json, samples if has_samples else None, stored)
    run.samples_loader = source.load_samples
    if with_samples:
        source.load_samples(run)
    else:
        run.samples_loaded = False
        rows = stored or source.cached()
        if rows is not None:
            run.set_summary(*rows)
    return run

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


