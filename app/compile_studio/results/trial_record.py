"""The record of a "try it" comparison (trial.json): what was tried, every round's figures, the verdicts.

A trial folder lies beside the run it started from, in the run folder's
``trials/`` sub-folder: ``<run>/trials/<time>_trial_<rules>/``. It holds one
run folder per run of the comparison (``<time>_r1-A_<slug>``,
``<time>_r1-B1_<slug>``, …) and ``trial.json``, rewritten atomically after
every run, so a comparison stopped or killed at any moment keeps the rounds
it measured. :mod:`jobs.trial` runs it; :mod:`results.trial_judge` computes
the figures and verdicts it holds.

A run folder may come from someone else, and so may its trials: reading one
back (:func:`load_trial`, :func:`trials_of`) takes regular files only (no
link), under a size limit, every value checked for type and size
(:mod:`results.schema`); run folders are named by plain names inside the
trial folder, never by a path; what does not fit is left out and listed in
``load_problems``; a file that cannot be read at all raises
:class:`TrialDamaged` saying why.
"""

from __future__ import annotations

import copy
import json
import os
import re
import stat
import threading
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..core.config import BenchmarkConfig, ConfigError
from .file_io import atomic_write_text, json_safe
from .owner_lock import owner_alive
from .run_result import config_from_saved
from .schema import (
    MAX_NAME,
    MAX_TEXT,
    RunDamaged,
    Schema,
    Unfit,
    bounded_json,
    check_regular_file,
    conform,
    parse_json_document,
    read_bytes_capped,
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

#: The verdict words a suggestion can get (those of :class:`results.verdict.VerdictKind`).
VERDICT_WORDS = ("faster", "slower", "cannot tell", "incorrect", "failed")

#: What a suggestion's comparison judges: the figure, in words.
FIGURES = {
    "per_call": "time per call",
    "per_sample": "time per sample",
    "first_call": "first call (compile)",
}

#: The role of the run of the configuration as it was, in every round.
ROLE_A = "A"

#: A run folder's name inside the trial folder: one plain name, no path.
_FOLDER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")
_ROLE = re.compile(r"A|B\d{1,3}")


class TrialDamaged(RunDamaged):
    """A trial folder or trial.json that cannot be read; the message says what is wrong."""


@dataclass
class RoundFigure:
    """One round of one suggestion: A's figure, B's, and their ratio (A / B: above 1 B is faster)."""

    round: int
    #: A's figure this round (ms: per call, per sample, or the first call)
    a: float | None = None
    b: float | None = None
    ratio: float | None = None
    #: the run folders (names inside the trial folder) the figures come from
    a_run: str = ""
    b_run: str = ""
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
    #: the A/A control: how far A's figure moved between rounds (max / min − 1, in %)
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
        return f"{self.interval_point:.2f}× [{self.interval_lo:.2f}–{self.interval_hi:.2f}]"

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


def _safe_slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "-", text)[:80].lstrip(".-") or "trial"


class TrialFolder:
    """A trial folder and its record, saved whole (trial.json, atomically) after every change.

    Safe to share between threads: :meth:`update` changes the record under a
    lock and saves it; :meth:`snapshot` gives a copy to read.
    """

    def __init__(self, path: Path, record: TrialRecord):
        self.path = Path(path)
        self.record = record
        self._lock = threading.RLock()
        #: why the last save failed (None: saved)
        self.write_error: str | None = None

    @classmethod
    def create(
        cls, run_folder: Path, slug: str, record: TrialRecord, when: datetime | None = None
    ) -> TrialFolder:
        """A new ``<run_folder>/trials/<time>_trial_<slug>`` folder with trial.json; raises OSError."""
        when = when or datetime.now()
        trials = trials_folder(Path(run_folder), create=True)
        base = f"{when:%Y%m%d-%H%M%S}_trial_{_safe_slug(slug)}"
        for k in range(1000):
            path = trials / (base if k == 0 else f"{base}_{k}")
            try:
                path.mkdir()
                break
            except FileExistsError:
                continue
        else:  # pragma: no cover - a thousand trials in one second
            raise OSError(f"cannot create a unique trial folder in {trials}")
        record.trial_id = path.name
        record.created = record.created or when.isoformat(timespec="seconds")
        folder = cls(path, record)
        folder.save(raise_errors=True)
        return folder

    @classmethod
    def open(cls, path: str | Path) -> TrialFolder:
        folder = trial_folder_of(Path(path))
        return cls(folder, load_trial(folder))

    def save(self, raise_errors: bool = False) -> bool:
        """Write trial.json (atomically); returns whether it worked."""
        with self._lock:
            try:
                atomic_write_text(self.path / TRIAL_JSON, trial_to_json(self.record))
            except OSError as exc:
                self.write_error = f"cannot write the trial in {self.path}: {exc.strerror or exc}"
                if raise_errors:
                    raise
                return False
            self.write_error = None
            return True

    def update(self, change: Any = None) -> TrialRecord:
        """Apply ``change(record)`` (if given) under the lock, save, and return a copy of the record."""
        with self._lock:
            if change is not None:
                change(self.record)
            self.save()
            return self.record.copy()

    def snapshot(self) -> TrialRecord:
        with self._lock:
            return self.record.copy()

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


# -- reading ------------------------------------------------------------------------------------

def is_trial_folder(path: str | Path) -> bool:
    """Whether ``path`` is a trial folder or its trial.json (by the file's name)."""
    p = Path(path)
    try:
        if p.name == TRIAL_JSON and p.is_file():
            return True
        return p.is_dir() and (p / TRIAL_JSON).is_file()
    except OSError:
        return False


def trial_folder_of(path: Path) -> Path:
    """The trial folder ``path`` names (the folder itself, or the folder of its trial.json)."""
    return path.parent if path.name == TRIAL_JSON and not path.is_dir() else path


_ROUND = Schema.of_dataclass("round", RoundFigure)
_RUN = Schema.of_dataclass("run", TrialRun)
_SUGGESTION = Schema.of_dataclass("suggestion", TrialSuggestion, skip=("rounds", "delta", "config"))
_TOP: dict[str, Any] = {
    "schema_version": int,
    "app_version": str,
    "trial_id": str,
    "created": str,
    "status": str,
    "message": str,
    "owner_pid": int,
    "owner_host": str,
    "rounds": int,
    "notes": list[str],
}


def _plain_run_name(name: Any) -> str:
    return name if isinstance(name, str) and _FOLDER_NAME.fullmatch(name) else ""


def _read_delta(k: int, data: Any, problems: list[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        problems.append(f"suggestion {k}: delta is not an object")
        return {}
    known = set(BenchmarkConfig().to_dict())
    out: dict[str, Any] = {}
    for key, value in data.items():
        if not isinstance(key, str) or key not in known:
            problems.append(f"suggestion {k}: {str(key)[:40]!r} is not a configuration field: left out")
            continue
        try:
            BenchmarkConfig.from_dict({key: value})
            out[key] = bounded_json(value)
        except (ConfigError, ValueError, TypeError, RecursionError):
            problems.append(f"suggestion {k}: delta {key} does not fit: left out")
    return out


def _read_suggestion(k: int, data: Any, rounds: int, problems: list[str]) -> TrialSuggestion | None:
    if not isinstance(data, dict):
        problems.append(f"suggestion {k} is not an object: left out")
        return None
    own: list[str] = []
    values = _SUGGESTION.read(data, own)
    if not isinstance(values.get("key"), str) or not _ROLE.fullmatch(values["key"]) or values["key"] == ROLE_A:
        problems.append(f"suggestion {k} has no key (B1, B2, …): left out")
        return None
    if not isinstance(values.get("rule"), str) or not values["rule"] or len(values["rule"]) > MAX_NAME:
        problems.append(f"suggestion {k} has no rule: left out")
        return None
    problems.extend(f"suggestion {k}: {p}" for p in own)
    for name in ("title", "rule"):
        values.setdefault(name, "")
    values.setdefault("index", 0)
    if values.get("figure") not in FIGURES:
        problems.append(f"suggestion {k}: figure {str(values.get('figure'))[:20]!r} is unknown: read as per call")
        values["figure"] = "per_call"
    if values.get("verdict", "") and values["verdict"] not in VERDICT_WORDS:
        problems.append(f"suggestion {k}: verdict {str(values['verdict'])[:20]!r} is unknown: left out")
        values["verdict"], values["verdict_reason"] = "", ""
    for name in ("a_variant", "b_variant", "variant"):
        if len(values.get(name) or "") > MAX_NAME:
            values[name] = ""
    values.setdefault("a_variant", "eager")
    values.setdefault("b_variant", "eager")
    s = TrialSuggestion(**values)
    s.delta = _read_delta(k, data.get("delta", {}), problems)
    config = data.get("config", {})
    if isinstance(config, dict):
        try:
            s.config = bounded_json(config)
        except (ValueError, RecursionError) as exc:
            problems.append(f"suggestion {k}: config {exc}")
    raw_rounds = data.get("rounds", [])
    if not isinstance(raw_rounds, list):
        problems.append(f"suggestion {k}: rounds is not a list")
        raw_rounds = []
    if len(raw_rounds) > MAX_TRIAL_ROUNDS:
        problems.append(f"suggestion {k}: more than {MAX_TRIAL_ROUNDS} rounds: the rest left out")
        raw_rounds = raw_rounds[:MAX_TRIAL_ROUNDS]
    for item in raw_rounds:
        got = _ROUND.read(item, problems)
        if not isinstance(got.get("round"), int) or not 1 <= got["round"] <= max(rounds, 1):
            problems.append(f"suggestion {k}: a round without a usable number left out")
            continue
        for name in ("a_run", "b_run"):
            if got.get(name) and not _plain_run_name(got[name]):
                problems.append(f"suggestion {k}: {name} {str(got[name])[:40]!r} is not a folder name: left out")
                got[name] = ""
        s.rounds.append(RoundFigure(**got))
    return s


def load_trial(path: str | Path) -> TrialRecord:
    """Read a trial folder (or its trial.json); raises :class:`TrialDamaged` saying why it cannot.

    A field that does not fit falls back to its default, a suggestion, round
    or run that does not fit is left out; both are listed in
    ``record.load_problems``. A trial left "running" by a process that is
    gone reads as stopped.
    """
    folder = trial_folder_of(Path(path))
    try:
        return _load(folder)
    except TrialDamaged:
        raise
    except RunDamaged as exc:
        raise TrialDamaged(str(exc)) from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError, MemoryError) as exc:
        raise TrialDamaged(f"{TRIAL_JSON} cannot be read ({type(exc).__name__}: {str(exc)[:100]})") from None


def _load(folder: Path) -> TrialRecord:
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise TrialDamaged(f"{folder.name} is not a folder (a link or a file)")
    target = folder / TRIAL_JSON
    check_regular_file(target, MAX_TRIAL_JSON_BYTES)
    doc = parse_json_document(read_bytes_capped(target, MAX_TRIAL_JSON_BYTES), TRIAL_JSON)
    if not isinstance(doc, dict) or doc.get("kind") != TRIAL_KIND:
        raise TrialDamaged(f"{TRIAL_JSON} is not a Compile Studio trial record")
    problems: list[str] = []
    top: dict[str, Any] = {}
    for key, hint in _TOP.items():
        if key in doc:
            try:
                top[key] = conform(doc[key], hint, MAX_TEXT)
            except (Unfit, RecursionError) as exc:
                problems.append(f"{TRIAL_JSON}: {key} {exc}")
    version = top.get("schema_version") or TRIAL_SCHEMA_VERSION
    if version > TRIAL_SCHEMA_VERSION:
        raise TrialDamaged(
            f"{TRIAL_JSON} was written by a newer Compile Studio (trial schema {version}; "
            f"this one reads up to {TRIAL_SCHEMA_VERSION})"
        )
    source = doc.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("run_id"), str) or not source["run_id"]:
        raise TrialDamaged(f"{TRIAL_JSON}: the source run is missing")
    source_values: dict[str, str] = {}
    for key in ("run_id", "path", "title"):
        value = source.get(key, "")
        source_values[key] = value[:MAX_TEXT] if isinstance(value, str) else ""
    if len(source_values["run_id"]) > MAX_NAME:
        raise TrialDamaged(f"{TRIAL_JSON}: the source run id is longer than {MAX_NAME} characters")
    config = config_from_saved(doc.get("config"))
    if config is None:
        raise TrialDamaged(f"{TRIAL_JSON}: configuration A is missing")
    rounds = top.get("rounds", MIN_TRIAL_ROUNDS)
    if not 1 <= rounds <= MAX_TRIAL_ROUNDS:
        raise TrialDamaged(f"{TRIAL_JSON}: rounds must be 1–{MAX_TRIAL_ROUNDS}")
    raw = doc.get("suggestions")
    if not isinstance(raw, list):
        raise TrialDamaged(f"{TRIAL_JSON}: suggestions is not a list")
    if len(raw) > MAX_TRIAL_SUGGESTIONS:
        raise TrialDamaged(f"{TRIAL_JSON}: more than {MAX_TRIAL_SUGGESTIONS} suggestions")
    suggestions: list[TrialSuggestion] = []
    for k, item in enumerate(raw):
        s = _read_suggestion(k, item, rounds, problems)
        if s is None:
            continue
        if any(t.key == s.key for t in suggestions):
            problems.append(f"suggestion {k}: key {s.key} appears twice: left out")
            continue
        suggestions.append(s)
    runs: list[TrialRun] = []
    raw_runs = doc.get("runs", [])
    if not isinstance(raw_runs, list):
        problems.append(f"{TRIAL_JSON}: runs is not a list")
        raw_runs = []
    for k, item in enumerate(raw_runs[: MAX_TRIAL_ROUNDS * (MAX_TRIAL_SUGGESTIONS + 1)]):
        got = _RUN.read(item, problems)
        if not isinstance(got.get("round"), int) or not isinstance(got.get("role"), str) \
                or not _ROLE.fullmatch(got["role"]):
            problems.append(f"run {k} has no round or role: left out")
            continue
        if got.get("run") and not _plain_run_name(got["run"]):
            problems.append(f"run {k}: {str(got['run'])[:40]!r} is not a folder name: left out")
            got["run"] = ""
        if got.get("status", PENDING) not in STATUSES:
            problems.append(f"run {k}: status {str(got['status'])[:20]!r} is unknown: read as failed")
            got["status"] = FAILED
        runs.append(TrialRun(**got))
    environment = doc.get("environment") if isinstance(doc.get("environment"), dict) else {}
    try:
        environment = conform(environment, Any)
    except Unfit as exc:
        problems.append(f"{TRIAL_JSON}: environment {exc}")
        environment = {}
    status = top.get("status") or STOPPED
    if status not in STATUSES:
        problems.append(f"{TRIAL_JSON}: status {status[:20]!r} is unknown: read as stopped")
        status = STOPPED
    record = TrialRecord(
        trial_id=top.get("trial_id") or folder.name,
        created=top.get("created") or "",
        source_run_id=source_values["run_id"],
        source_path=source_values["path"],
        source_title=source_values["title"],
        config=config,
        rounds=rounds,
        suggestions=suggestions,
        runs=runs,
        status=status,
        message=top.get("message") or "",
        notes=top.get("notes") or [],
        environment=environment if isinstance(environment, dict) else {},
        app_version=top.get("app_version") or "",
        schema_version=version,
        owner_pid=top.get("owner_pid") or 0,
        owner_host=top.get("owner_host") or "",
        load_problems=problems,
    )
    if record.status == RUNNING and not owner_alive(record.owner_pid, record.owner_host):
        record.status = STOPPED
        record.message = INTERRUPTED
        for r in record.runs:
            if r.status == RUNNING:
                r.status, r.message = STOPPED, INTERRUPTED
    return record


@dataclass
class TrialListing:
    """One trial of a run: its record, or the folder and why it cannot be read."""

    folder: Path
    record: TrialRecord | None
    problem: str | None = None


def trials_of(run_folder: str | Path | None, run_id: str | None = None) -> list[TrialListing]:
    """The trials kept beside a run (``<run_folder>/trials/*``), oldest first.

    ``run_id``: only trials of that run (a folder of exported runs may hold
    trials of several); a damaged trial is listed with the reason. A
    ``trials`` entry that is a link or a file is never followed.
    """
    if run_folder is None:
        return []
    try:
        root = trials_folder(Path(run_folder))
    except OSError:
        return []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)[:MAX_TRIALS_LISTED]
    except OSError:
        return []
    out = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
        except OSError:
            continue
        path = Path(entry.path)
        try:
            record = load_trial(path)
        except TrialDamaged as exc:
            out.append(TrialListing(path, None, str(exc)))
            continue
        if run_id is not None and record.source_run_id != run_id:
            continue
        out.append(TrialListing(path, record))
    return out
