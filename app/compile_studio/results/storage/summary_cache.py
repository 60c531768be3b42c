"""A run's summary as read back: the one run.json stores, or one cached for runs of older versions.

The cache (see :func:`summary_cache_dir`) lies outside the run's folder,
keyed to the state of its files; :class:`SummarySource` is what a loaded run
reads its samples and its summary through.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..analysis.summary import SUMMARY_VERSION, SummaryRow, summarize
from ..records.run_result import RunResult
from ..records.schema import (
    MAX_RUN_JSON_BYTES,
    RunDamaged,
    Schema,
    parse_json_document,
    read_bytes_capped,
)
from .csv_readers import read_samples_csv
from .file_io import atomic_write_text, json_safe
from .run_files import SAMPLES_CSV

_SUMMARY_ROW = Schema.of_dataclass("summary", SummaryRow)


def stored_summary(doc: dict[str, Any], run: RunResult) -> tuple[list[SummaryRow], dict[str, int]] | None:
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



class SummarySource:
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
        run.forget_summary()
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
        return stored_summary(doc, holder)


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

    from ...core.app_info import APPLICATION, ORGANIZATION

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
            atomic_write_text(path, json.dumps(json_safe(doc)) + "\n")
        except OSError:
            pass
    return rows

