"""The record of a "try it" comparison (trial.json): what was tried, every round's figures, the verdicts.

A trial folder lies beside the run it started from, in the run folder's
``trials/`` sub-folder: ``<run>/trials/<time>_trial_<rules>/``. It holds one
run folder per run of the comparison (``<time>_r1-A_<slug>``,
``<time>_r1-B1_<slug>``, …) and ``trial.json``, rewritten atomically after
every run, so a comparison stopped or killed at any moment keeps the rounds
it measured. :mod:`jobs.trial` runs it; :mod:`results.suggestions.trial_judge` computes
the figures and verdicts it holds.

A run folder may come from someone else, and so may its trials: they are read
back, every value checked, by :mod:`results.records.trial_load` (``load_trial``,
``trials_of``); a file that cannot be read at all raises :class:`TrialDamaged`
saying why.
"""

from __future__ import annotations

import copy
import json
import os
import re
import stat
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ... import __version__
from ...core.config import BenchmarkConfig
from ..storage.file_io import json_safe
from ..storage.record_folder import RecordFolder
from .schema import (
    RunDamaged,
)

TRIAL_JSON = "trial.json"
#: The sub-folder of a run folder that holds its trials.
TRIALS_DIR = "trials"
TRIAL_KIND = "compile-studio-trial"
#: Version of trial.json; whoever adds a field bumps it, the loader reads every older one.
TRIAL_SCHEMA_VERSION = 1
#: Largest trial.json read (a hundred rounds of a dozen suggestions is well under 1 MiB).
MAX_TRIAL_JSON_BYTES = 4 * 1024 * 1024
#: Fewest and most rounds of a comparison (A then each B, per round).
MIN_TRIAL_ROUNDS = 3
MAX_TRIAL_ROUNDS = 100
#: Most suggestions tried in one comparison, and most trial folders read for one run.
MAX_TRIAL_SUGGESTIONS = 32
MAX_TRIALS_LISTED = 200

# statuses of the trial and of each of its runs
PENDING = "pending"
RUNNING = "running"
COMPLETE = "complete"
STOPPED = "stopped"
FAILED = "failed"
STATUSES = (PENDING, RUNNING, COMPLETE, STOPPED, FAILED)
#: Why a trial left "running" by a process that ended reads as stopped.
INTERRUPTED = "interrupted: the process running the comparison ended"

#: The verdict words a suggestion can get (those of :class:`results.analysis.verdict.VerdictKind`).
VERDICT_WORDS = ("faster", "slower", "cannot tell", "incorrect", "failed")

#: What a suggestion's comparison judges: the figure, in words.
FIGURES = {
    "per_call": "time per call",
    "per_sample": "time per sample",
    "first_call": "first call (compile)",
}

#: The role of the run of the configuration as it was, first in every round.
ROLE_A = "A"
#: The role of the same configuration run again last in every round (the A/A control).
ROLE_A_END = "A2"

#: A run folder's name inside the trial folder: one plain name, no path.
_FOLDER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")
_ROLE = re.compile(r"A2?|B\d{1,3}")


class TrialDamaged(RunDamaged):
    """A trial folder or trial.json that cannot be read; the message says what is wrong."""


@dataclass
class RoundFigure:
    """One round of one suggestion: A's figure (first and last in the round), B's, and their ratio.

    The ratio is A / B with A the geometric mean of its two runs, which
    bracket B (a steady change of the machine over the round cancels):
    above 1 B is faster. ``a / a_end`` is the round's A/A control.
    """

    round: int
    #: A's figure this round, from its run before B (ms: per call, per sample, or the first call)
    a: float | None = None
    b: float | None = None
    ratio: float | None = None
    #: the run folders (names inside the trial folder) the figures come from
    a_run: str = ""
    b_run: str = ""
    #: A's figure from its run after every B of the round (None in records made before it existed)
    a_end: float | None = None
    a_end_run: str = ""
    #: whether B's judged variant matched the fp64 reference (None: not checked)
    b_allclose: bool | None = None
    #: what else the round showed (a run that failed, recompiles and graph breaks of both)
    note: str = ""


@dataclass
class TrialSuggestion:
    """One suggestion tried: what it is, the configuration B it made, its rounds and its verdict."""

    #: the role of its runs: B1, B2, …
    key: str
    #: its number in ``advise``'s list when it was tried (1-based)
    index: int
    rule: str
    title: str
    evidence: str = ""
    #: the variant the suggestion names
    variant: str = ""
    delta: dict[str, Any] = field(default_factory=dict)
    #: a key of :data:`FIGURES`
    figure: str = "per_call"
    #: the variant whose figure is read in A's runs and in B's
    a_variant: str = "eager"
    b_variant: str = "eager"
    #: configuration B: the run's configuration with the delta applied
    config: dict[str, Any] = field(default_factory=dict)
    rounds: list[RoundFigure] = field(default_factory=list)
    interval_point: float | None = None
    interval_lo: float | None = None
    interval_hi: float | None = None
    interval_method: str = ""
    #: the A/A control: the largest difference between A's two runs of one round (in %); in
    #: records made before A ran twice, how far A's figure moved between rounds (max / min − 1)
    aa_spread_pct: float | None = None
    #: failed checks of A's and B's timed calls (drift, two levels), in words
    checks: str = ""
    verdict: str = ""
    verdict_reason: str = ""
    #: why B is not run again (refused by the worker, or failed the same way every time)
    dropped: str = ""

    def delta_text(self) -> str:
        """``dynamic=true, variants+=reduce-overhead`` (as :meth:`advice.Suggestion.delta_text`)."""
        parts = []
        for key, value in self.delta.items():
            if key == "variants" and isinstance(value, list):
                parts.append(f"variants+={','.join(str(v) for v in value)}")
            elif isinstance(value, list):
                parts.append(f"{key}={','.join(str(v) for v in value)}")
            else:
                shown = str(value).lower() if isinstance(value, bool) else str(value)
                parts.append(f"{key}={shown}")
        return ", ".join(parts)

    def figure_text(self) -> str:
        """``time per sample of eager``; ``time per call: reduce-overhead (B) vs eager (A)``."""
        what = FIGURES.get(self.figure, self.figure)
        if self.a_variant == self.b_variant:
            return f"{what} of {self.a_variant}"
        return f"{what}: {self.b_variant} (B) vs {self.a_variant} (A)"

    def interval_text(self) -> str:
        """``1.85× [1.79–1.91]``; "–" without an interval."""
        if self.interval_point is None or self.interval_lo is None or self.interval_hi is None:
            return "–"
        from ..analysis.verdict import fmt_bounds

        return fmt_bounds(self.interval_point, self.interval_lo, self.interval_hi)

    def measured_rounds(self) -> list[RoundFigure]:
        """The rounds with both figures (those the interval rests on)."""
        return [r for r in self.rounds if r.ratio is not None]


@dataclass
class TrialRun:
    """One run of the comparison: its round, its role (A, B1, …), its folder and how it ended."""

    round: int
    role: str
    #: the run folder's name inside the trial folder ("" when none was made)
    run: str = ""
    status: str = PENDING
    message: str = ""


@dataclass
class TrialRecord:
    """What trial.json holds: the source run, configuration A, the suggestions and every run."""

    trial_id: str
    created: str
    source_run_id: str
    #: where the source run was read from when the trial started (shown, never followed)
    source_path: str
    source_title: str
    #: configuration A: the run's own, as the comparison runs it (see :mod:`jobs.trial`)
    config: BenchmarkConfig
    #: rounds planned
    rounds: int = MIN_TRIAL_ROUNDS
    suggestions: list[TrialSuggestion] = field(default_factory=list)
    runs: list[TrialRun] = field(default_factory=list)
    status: str = PENDING
    message: str = ""
    #: what the comparison changed in the run's configuration, and why (one line each)
    notes: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    app_version: str = __version__
    schema_version: int = TRIAL_SCHEMA_VERSION
    owner_pid: int = 0
    owner_host: str = ""
    #: what did not fit when the record was read from disk
    load_problems: list[str] = field(default_factory=list, compare=False)

    def rounds_done(self) -> int:
        """Rounds in which A and every B still in the comparison ran to the end."""
        done = 0
        for r in range(1, self.rounds + 1):
            runs = [x for x in self.runs if x.round == r]
            if runs and all(x.status == COMPLETE for x in runs) and any(x.role == ROLE_A for x in runs):
                done += 1
        return done

    def suggestion(self, key: str) -> TrialSuggestion | None:
        return next((s for s in self.suggestions if s.key == key), None)

    def title(self) -> str:
        rules = ", ".join(s.rule for s in self.suggestions) or "nothing"
        return f"tried {rules} on {self.source_run_id}"

    def copy(self) -> TrialRecord:
        return copy.deepcopy(self)


# -- writing ------------------------------------------------------------------------------------

def trial_to_json(record: TrialRecord) -> str:
    """trial.json's text: the record whole."""
    doc = {
        "schema_version": TRIAL_SCHEMA_VERSION,
        "app_version": record.app_version,
        "kind": TRIAL_KIND,
        "trial_id": record.trial_id,
        "created": record.created,
        "status": record.status,
        "message": record.message,
        "owner_pid": record.owner_pid,
        "owner_host": record.owner_host,
        "source": {
            "run_id": record.source_run_id,
            "path": record.source_path,
            "title": record.source_title,
        },
        "rounds": record.rounds,
        "notes": list(record.notes),
        "config": record.config.to_dict(),
        "environment": record.environment,
        "suggestions": [asdict(s) for s in record.suggestions],
        "runs": [asdict(r) for r in record.runs],
    }
    return json.dumps(json_safe(doc), indent=2, allow_nan=False, default=str) + "\n"


class TrialFolder(RecordFolder):
    """A trial folder and its record (trial.json only), saved whole after every change."""

    name_word = "trial"
    what = "comparison"
    json_name = TRIAL_JSON
    id_field = "trial_id"
    record: TrialRecord
    _to_json = staticmethod(trial_to_json)

    @classmethod
    def create(
        cls, run_folder: Path, slug: str, record: TrialRecord, when: datetime | None = None
    ) -> TrialFolder:
        """A new ``<run_folder>/trials/<time>_trial_<slug>`` folder with trial.json; raises OSError."""
        folder: TrialFolder = cls._create(trials_folder(Path(run_folder), create=True), slug, record, when)
        return folder

    def run_folder(self, name: str) -> Path | None:
        """The folder of one of the trial's runs, when ``name`` is a plain name of a real folder in it."""
        if not _FOLDER_NAME.fullmatch(name or ""):
            return None
        path = self.path / name
        try:
            return path if stat.S_ISDIR(os.lstat(path).st_mode) else None
        except OSError:
            return None


def trials_folder(run_folder: Path, create: bool = False) -> Path:
    """``<run_folder>/trials``; made when ``create``. OSError when it is a link or not a folder."""
    path = Path(run_folder) / TRIALS_DIR
    if create:
        path.mkdir(exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(f"{path} is not a folder (a link or a file): remove it first")
    return path
