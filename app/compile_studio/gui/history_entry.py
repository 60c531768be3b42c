"""A line of the run history and how it reads: the entry (run or damaged folder), its name, date and best verdict.

No widgets here: :mod:`gui.history_panel` shows these entries.
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path

from ..core.config import EnvironmentInfo
from ..core.variants import is_eager
from ..results import RunDamaged, RunResult, SummaryRow, summarize
from ..results.analysis.verdict import VerdictKind
from ..results.storage.run_load import ensure_samples
from ..results.storage.store import creation_time

#: The best verdict of a run whose summary is being computed (a run of an older version).
PENDING_SPEEDUP = "…"


class HistoryEntry:
    """One line of the history: a run (or a damaged folder and why), where it lives.

    A run of the store is listed from its run.json alone (its stored summary
    gives the best verdict); :attr:`run` reads its samples the first time it
    is asked for (a run whose samples cannot be read then turns damaged).
    """

    def __init__(
        self, path: Path, run: RunResult | None, problem: str | None = None, external: bool = False
    ) -> None:
        self.path = path
        self._run = run
        self.problem = problem
        self.external = external
        self._lock = threading.Lock()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HistoryEntry):
            return NotImplemented
        return (self.path, self._run, self.problem, self.external) == (
            other.path, other._run, other.problem, other.external
        )

    def __repr__(self) -> str:
        return f"HistoryEntry({self.path!s}, damaged={self.damaged})"

    @property
    def listed(self) -> RunResult | None:
        """The run as listed (samples maybe not read yet); None when damaged."""
        return self._run

    @property
    def run(self) -> RunResult | None:
        """The run with its samples (read now if they were not); None when damaged."""
        with self._lock:
            run = self._run
            if run is not None and not run.samples_loaded:
                try:
                    ensure_samples(run)
                except RunDamaged as exc:
                    self._run, self.problem = None, str(exc)
                    return None
            return self._run

    @property
    def damaged(self) -> bool:
        return self._run is None


def run_display_name(run: RunResult) -> str:
    """A short name for a run in legends and the table: its label, else its date and time."""
    label = run.config.label.strip() if run.config is not None else ""
    if label:
        return label
    try:
        return _local(run.created).strftime("%m-%d %H:%M:%S")
    except (TypeError, ValueError):
        return run.run_id


def run_device(run: RunResult) -> str:
    configured = run.config.device if run.config is not None else ""
    device = str(configured or run.environment.get("device") or "?")
    if device == "auto" and run.environment:
        device = EnvironmentInfo.from_hello(run.environment).resolve_device("auto")
    name = (run.environment.get("device_names") or {}).get(device)
    return f"{device} ({name})" if name and name != device else device


def entry_date(entry: HistoryEntry) -> float:
    """An entry's place in the history (newest first): its creation time as the store orders its
    runs (:func:`compile_studio.results.storage.store.creation_time`: UTC in run.json, else the folder
    name's time), else its file's time."""
    run = entry.listed
    when = creation_time(run.created if run is not None else "", entry.path.name)
    if when:
        return when
    try:
        return entry.path.stat().st_mtime
    except OSError:
        return 0.0


def _local(created: str) -> datetime:
    """``created`` as this machine's local time (a UTC time is converted; one without an offset,
    as older versions wrote, is local already)."""
    when = datetime.fromisoformat(created.strip().replace("Z", "+00:00"))
    return when.astimezone() if when.tzinfo is not None else when


def date_text(created: str) -> str:
    try:
        return _local(created).strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError):
        return created


def date_text_of_folder(folder: Path) -> str:
    when = creation_time("", folder.name)  # a name's UTC time (with its Z) is shown as local time
    return datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M") if when else ""


def samples_bytes(path: Path) -> int:
    folder = path if path.is_dir() else path.parent
    try:
        return (folder / "samples.csv").stat().st_size
    except OSError:
        return 0


def _judged(rows: list[SummaryRow]) -> list[SummaryRow]:
    return [r for r in rows if not is_eager(r.name) and r.verdict]


def best_verdict(run: RunResult) -> SummaryRow | None:
    """The compiled variant with the best verdict: the fastest found faster, else one that
    cannot tell, else the least slow, else an incorrect one, else a failed one (None: none
    judged, or the summary is not known yet)."""
    rows = _rows_known(run)
    if rows is None:
        return None
    judged = _judged(rows)
    for kind in (VerdictKind.FASTER, VerdictKind.CANNOT_TELL, VerdictKind.SLOWER):
        found = [r for r in judged if r.verdict == kind]
        if found:
            return max(found, key=lambda r: r.speedup if r.speedup is not None else 0.0)
    for kind in (VerdictKind.INCORRECT, VerdictKind.FAILED):
        found = [r for r in judged if r.verdict == kind]
        if found:
            return found[0]
    return None


def _rows_known(run: RunResult) -> list[SummaryRow] | None:
    """The run's summary if known, or computed now for a run whose samples are read; else None."""
    rows = run.known_summary()
    if rows is None and run.samples_loaded and run.baseline is not None:
        rows = summarize(run)
    return rows


def best_verdict_text(run: RunResult) -> str:
    """The best verdict as listed: ``faster 1.40×``, ``cannot tell``, ``slower 0.82×``,
    ``incorrect``, ``failed``; pending while the summary is computed; ``–`` with none."""
    if run.known_summary() is None and not run.samples_loaded:
        return PENDING_SPEEDUP
    row = best_verdict(run)
    if row is None:
        return "–"
    if row.verdict in (VerdictKind.FASTER, VerdictKind.SLOWER) and row.speedup is not None:
        return f"{row.verdict} {row.speedup:.2f}×"
    return row.verdict


def best_verdict_tip(run: RunResult) -> str:
    """Which variant the best verdict is of, and its sentence ("" with none)."""
    row = best_verdict(run)
    return f"best verdict: {row.name}: {row.verdict_text}" if row is not None else ""


def run_line(run: RunResult, name: str | None = None) -> str:
    """A run in the history: its name first (what tells it from the others), then the batch, dtype and model.

    ``name · b256 · fp32 · MLP 1024,1024,512,10`` (see :mod:`run_names`), with the date and
    time last when the name has no time in it. Without ``name``: the label, else nothing.
    """
    config = run.config
    if config is None:
        return run.message or "samples only"
    label = config.label.strip()
    name = label if name is None else name
    when = _short_time(run.created)
    timed = name != label or not label
    parts = [name, f"b{run.batch() or '?'}", run.dtype_text(), config.model_text(), "" if timed else when]
    return " · ".join(p for p in parts if p)


def _short_time(created: str) -> str:
    try:
        return _local(created).strftime("%m-%d %H:%M")
    except (TypeError, ValueError):
        return ""
