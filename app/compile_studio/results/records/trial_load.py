"""Reading trial folders back (trial.json), every value checked: :func:`load_trial`, :func:`trials_of`.

A run folder may come from someone else, and so may its trials: reading one
back takes regular files only (no link), under a size limit, every value
checked for type and size (:mod:`results.records.schema`); run folders are named by
plain names inside the trial folder, never by a path; what does not fit is
left out and listed in ``load_problems``; a file that cannot be read at all
raises :class:`~compile_studio.results.records.trial_record.TrialDamaged` saying why.
:mod:`results.records.trial_record` holds the record and writes it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.config import BenchmarkConfig, ConfigError
from ..storage.owner_lock import owner_alive
from .record_load import bounded_list, is_record_folder, load_record, record_folder_of
from .run_result import config_from_saved
from .schema import (
    MAX_NAME,
    MAX_TEXT,
    Schema,
    Unfit,
    bounded_json,
    conform,
)
from .trial_record import (
    _FOLDER_NAME,
    _ROLE,
    FAILED,
    FIGURES,
    INTERRUPTED,
    MAX_TRIAL_JSON_BYTES,
    MAX_TRIAL_ROUNDS,
    MAX_TRIAL_SUGGESTIONS,
    MAX_TRIALS_LISTED,
    MIN_TRIAL_ROUNDS,
    PENDING,
    RUNNING,
    STATUSES,
    STOPPED,
    TRIAL_JSON,
    TRIAL_KIND,
    TRIAL_SCHEMA_VERSION,
    VERDICT_WORDS,
    RoundFigure,
    TrialDamaged,
    TrialRecord,
    TrialRun,
    TrialSuggestion,
    trials_folder,
)


def is_trial_folder(path: str | Path) -> bool:
    """Whether ``path`` is a trial folder or its trial.json (by the file's name)."""
    return is_record_folder(path, TRIAL_JSON)


def trial_folder_of(path: Path) -> Path:
    """The trial folder ``path`` names (the folder itself, or the folder of its trial.json)."""
    return record_folder_of(path, TRIAL_JSON)


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
    if not isinstance(values.get("key"), str) or not _ROLE.fullmatch(values["key"]) or not values["key"].startswith("B"):
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
    raw_rounds = bounded_list(data.get("rounds", []), f"suggestion {k}", "rounds", MAX_TRIAL_ROUNDS, problems)
    for item in raw_rounds:
        got = _ROUND.read(item, problems)
        if not isinstance(got.get("round"), int) or not 1 <= got["round"] <= max(rounds, 1):
            problems.append(f"suggestion {k}: a round without a usable number left out")
            continue
        for name in ("a_run", "b_run", "a_end_run"):
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
    record: TrialRecord = load_record(
        path, TRIAL_JSON, _read_trial, TrialDamaged, MAX_TRIAL_JSON_BYTES, plain_folder=True
    )
    return record


def _read_trial(folder: Path, doc: Any) -> TrialRecord:
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
    source_values = _read_source(doc)
    config = config_from_saved(doc.get("config"))
    if config is None:
        raise TrialDamaged(f"{TRIAL_JSON}: configuration A is missing")
    rounds = top.get("rounds", MIN_TRIAL_ROUNDS)
    if not 1 <= rounds <= MAX_TRIAL_ROUNDS:
        raise TrialDamaged(f"{TRIAL_JSON}: rounds must be 1–{MAX_TRIAL_ROUNDS}")
    suggestions = _read_suggestions(doc, rounds, problems)
    runs = _read_runs(doc, problems)
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


def _read_source(doc: dict[str, Any]) -> dict[str, str]:
    """The trial's source run: its id (required), path and title."""
    source = doc.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("run_id"), str) or not source["run_id"]:
        raise TrialDamaged(f"{TRIAL_JSON}: the source run is missing")
    source_values: dict[str, str] = {}
    for key in ("run_id", "path", "title"):
        value = source.get(key, "")
        source_values[key] = value[:MAX_TEXT] if isinstance(value, str) else ""
    if len(source_values["run_id"]) > MAX_NAME:
        raise TrialDamaged(f"{TRIAL_JSON}: the source run id is longer than {MAX_NAME} characters")
    return source_values


def _read_suggestions(doc: dict[str, Any], rounds: int, problems: list[str]) -> list[TrialSuggestion]:
    """The trial's suggestions; one that does not fit, or repeats a key, is left out (in ``problems``)."""
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
    return suggestions


def _read_runs(doc: dict[str, Any], problems: list[str]) -> list[TrialRun]:
    """The trial's runs; one without a round or role is left out, a bad folder name or status
    is read as none or failed (in ``problems``)."""
    runs: list[TrialRun] = []
    raw_runs = doc.get("runs", [])
    if not isinstance(raw_runs, list):
        problems.append(f"{TRIAL_JSON}: runs is not a list")
        raw_runs = []
    for k, item in enumerate(raw_runs[: MAX_TRIAL_ROUNDS * (MAX_TRIAL_SUGGESTIONS + 2)]):
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
    return runs


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
