"""Try it: a saved run's configuration (A) against each suggested change (B), in alternating rounds.

``advise`` suggests configuration changes from a run's evidence
(:mod:`results.suggestions.advice_rules`); this job measures whether they help on this
machine now. Each suggestion's configuration B is the run's configuration A
with the suggestion's delta applied (:meth:`advice.Suggestion.apply`).

How it runs
-----------
Round after round (at least :data:`~results.records.trial_record.MIN_TRIAL_ROUNDS`),
A runs first, then each B, then A again — A B A · A B A … for one
suggestion, A B1 B2 A · A B2 B1 A … for several (their order turns each
round, so none always runs right after A). Every run is a whole run as ``compile-studio-cli run`` makes it, driven
by a :class:`~jobs.session.RunSession` into its own run folder inside the
trial folder, so nothing of two configurations that were not interleaved is
ever compared: each round's ratio is A's figure (the geometric mean of its
two runs, which bracket B) over B's from the same round, so a machine that
drifts steadily over the round moves both sides alike, and a change that
lasts longer than a round hits both.

The A/A control is A itself, run twice per round: the largest difference
between its two runs of one round is the noise floor the verdict uses — a
suggestion whose ratio lies within it "cannot tell" (see
:mod:`results.suggestions.trial_judge` for the figures and the verdict, the same words
as a run's: faster, slower, cannot tell, incorrect — and failed, when B
could not be measured).

A delta that adds a compile mode (``variants+=reduce-overhead``) is measured
like any other: B is A plus the mode, and the figure compared is the added
mode's time per call in B against the time per call, in A, of the variant
the suggestion names (eager for ``reduce-overhead``, the skipped CUDA-graph
mode for ``max-autotune-no-cudagraphs``). B's own run folder also holds the
two side by side, interleaved within the run, as any run does.

What the comparison changes in the run's configuration, for A and B alike:
``diagnostics`` off and ``compile_timing`` ``in_run`` (the profiler pass
comes after the timed calls, and a first call timed in its own process
costs one more process per compiled variant per run: neither changes a
figure compared, both cost time). A custom model's factory is the file the
run used when it is still there unchanged (its sha256 as recorded), else
the run folder's own copy of it; the record's ``notes`` say which.

Where it is kept
----------------
Beside the run: ``<run folder>/trials/<time>_trial_<rules>/``, with each
run's folder and trial.json (:mod:`results.records.trial_record`), rewritten after
every run. A stop (Ctrl+C, :meth:`TrialRunner.request_stop`) ends the run
going on and keeps every round measured so far. The code a received run
names runs only after the user's say-so (:mod:`jobs.trust`): the front end
asks before it makes the trial. No Qt, no torch here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import stat
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..core import protocol
from ..core.config import BenchmarkConfig, ConfigError, ConfigProblem
from ..core.model_specs import factory_file
from ..core.protocol import RunStatus, VariantStatus
from ..results.records.run_result import RunResult
from ..results.records.trial_record import (
    COMPLETE,
    FAILED,
    MAX_TRIAL_ROUNDS,
    MAX_TRIAL_SUGGESTIONS,
    MIN_TRIAL_ROUNDS,
    PENDING,
    ROLE_A,
    ROLE_A_END,
    RUNNING,
    STOPPED,
    RoundFigure,
    TrialFolder,
    TrialRecord,
    TrialRun,
    TrialSuggestion,
)
from ..results.storage.owner_lock import this_owner
from ..results.storage.store import RunStore
from ..results.suggestions.advice import Suggestion
from ..results.suggestions.trial_judge import (
    a_reference,
    figure_of,
    judge_suggestion,
    ratio_of,
    round_note,
    run_figure,
    run_samples,
    variants_of,
)
from .session import STOPPED_BY_USER, RunOutcome, RunSession
from .sweep import SessionFactory, local_session

__all__ = [
    "TrialOutcome", "TrialRunner", "new_trial", "not_tried_reason", "trial_config", "trial_configs",
    "tried_configs",
    "MIN_TRIAL_ROUNDS", "MAX_TRIAL_ROUNDS",
]


def not_tried_reason(s: Suggestion) -> str | None:
    """Why ``s`` is shown but not tried (None: it is a configuration change the comparison can run)."""
    if s.code is not None:
        place = f" at {s.code.place}" if s.code.place else ""
        return (
            f"shown, not tried: edit your factory or model code{place} as shown, "
            "then run it again and compare"
        )
    if not s.delta:
        if s.rule == "larger-batch":
            return (
                "shown, not tried: your factory makes the batch itself; give it a batch_size "
                "parameter (or change its batch), then run it again"
            )
        return "shown, not tried: it changes nothing the run's configuration holds"
    return None


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _factory_copy(run: RunResult, run_folder: Path) -> Path | None:
    """The run folder's own copy of its factory file: a regular file directly in ``factory/``."""
    name = run.measurement.get("factory_copy") if isinstance(run.measurement, dict) else None
    if not isinstance(name, str) or not name.startswith("factory/"):
        return None
    base = name[len("factory/"):]
    if not base or "/" in base or "\\" in base or base.startswith(".") or not base.endswith(".py"):
        return None
    path = run_folder / "factory" / base
    try:
        if stat.S_ISREG(os.lstat(path).st_mode) and not stat.S_ISLNK(os.lstat(run_folder / "factory").st_mode):
            return path.resolve()
    except OSError:
        return None
    return None


def _factory_for_trial(config: BenchmarkConfig, run: RunResult, run_folder: Path) -> tuple[str, str]:
    """The factory spec the comparison runs and, when it is not the run's own file, a note saying so."""
    spec = config.factory.strip()
    if config.model != "custom" or factory_file(spec) is None or ":" not in spec:
        return spec, ""
    function = spec.rsplit(":", 1)[1]
    m = run.measurement if isinstance(run.measurement, dict) else {}
    recorded = m.get("factory_sha256") if isinstance(m.get("factory_sha256"), str) else None
    candidates = []
    if isinstance(m.get("factory_file"), str) and m["factory_file"]:
        candidates.append(Path(m["factory_file"]))
    named = factory_file(spec)
    if named is not None:
        candidates.append(named)
    for path in candidates:
        if path.is_file() and (recorded is None or _sha256(path) == recorded):
            return (spec if path == named else f"{path}:{function}"), ""
    copy = _factory_copy(run, run_folder)
    if copy is not None and (recorded is None or _sha256(copy) == recorded):
        return f"{copy}:{function}", (
            f"the factory file the run used is gone or changed since: A and B run the run's own copy, "
            f"factory/{copy.name}"
        )
    if named is not None and named.is_file():
        return spec, (
            "the factory file differs from the one the run used (its sha256 does not match) and the run "
            "keeps no copy of it: A and B run the code as it is now"
        )
    return spec, "the factory file the run used is not here, and the run keeps no copy of it"


def trial_config(run: RunResult, run_folder: Path) -> tuple[BenchmarkConfig, list[str]]:
    """Configuration A (the run's own, as the comparison runs it) and notes on what differs.

    Raises ConfigError when the run keeps no configuration that can run.
    """
    if run.config is None:
        raise ConfigError([ConfigProblem("run", "keeps no configuration (a bare samples file): nothing to run")])
    notes = []
    base = run.config
    changes: dict[str, object] = {}
    if base.diagnostics:
        changes["diagnostics"] = False
    if base.compile_timing != "in_run":
        changes["compile_timing"] = "in_run"
    if changes:
        notes.append(
            "A and B run with " + ", ".join(f"{k}={str(v).lower()}" for k, v in changes.items())
            + ": neither changes a figure compared, both save time"
        )
    factory, note = _factory_for_trial(base, run, run_folder)
    if factory != base.factory:
        changes["factory"] = factory
    if note:
        notes.append(note)
    config = dataclasses.replace(base, **changes)  # type: ignore[arg-type]
    problems = config.problems()
    if problems:
        raise ConfigError(problems)
    return config, notes


def _slug(suggestions: Sequence[Suggestion]) -> str:
    rules = "+".join(dict.fromkeys(s.rule for s in suggestions))
    return rules[:60] or "trial"


def tried_configs(
    run: RunResult, run_folder: Path, chosen: Sequence[tuple[int, Suggestion]]
) -> list[BenchmarkConfig]:
    """Every configuration a trial of ``chosen`` would run: A (the run's own) and each B.

    For the code question asked before the trial folder is made. Raises ConfigError as
    :func:`new_trial` does.
    """
    base, _, suggestions = _plan(run, run_folder, chosen)
    return [base, *(BenchmarkConfig.from_dict(s.config) for s in suggestions)]


def trial_configs(record: TrialRecord) -> list[BenchmarkConfig]:
    """Every configuration a saved trial runs: A and each B."""
    configs = [record.config]
    for s in record.suggestions:
        try:
            configs.append(BenchmarkConfig.from_dict(s.config))
        except (ConfigError, TypeError, ValueError):
            continue
    return configs


def new_trial(
    run: RunResult,
    run_folder: Path,
    chosen: Sequence[tuple[int, Suggestion]],
    rounds: int = MIN_TRIAL_ROUNDS,
) -> TrialFolder:
    """A new trial folder beside ``run`` (``<run_folder>/trials/…``) with every run pending.

    ``chosen``: (number in ``advise``'s list, suggestion) of each configuration
    change to try. Raises ConfigError (a suggestion that cannot be tried, a
    configuration B that cannot run, rounds out of range) or OSError.
    """
    if not MIN_TRIAL_ROUNDS <= rounds <= MAX_TRIAL_ROUNDS:
        raise ConfigError([ConfigProblem("rounds", f"must be {MIN_TRIAL_ROUNDS}–{MAX_TRIAL_ROUNDS}")])
    base, notes, suggestions = _plan(run, run_folder, chosen)
    record = TrialRecord(
        trial_id="", created="",
        source_run_id=run.run_id, source_path=str(run.source or run_folder), source_title=run.title(),
        config=base, rounds=rounds, suggestions=suggestions, notes=notes, status=PENDING,
    )
    return TrialFolder.create(run_folder, _slug([s for _, s in chosen]), record)


def _plan(
    run: RunResult, run_folder: Path, chosen: Sequence[tuple[int, Suggestion]]
) -> tuple[BenchmarkConfig, list[str], list[TrialSuggestion]]:
    """Configuration A, the notes on it, and each B to try; ConfigError when one cannot be."""
    if not chosen:
        raise ConfigError([ConfigProblem("suggestions", "nothing to try")])
    if len(chosen) > MAX_TRIAL_SUGGESTIONS:
        raise ConfigError([ConfigProblem("suggestions", f"at most {MAX_TRIAL_SUGGESTIONS} at once")])
    base, notes = trial_config(run, run_folder)
    suggestions = []
    for k, (index, s) in enumerate(chosen, 1):
        reason = not_tried_reason(s)
        if reason is not None:
            raise ConfigError([ConfigProblem(f"suggestion {index}", reason)])
        try:
            b = BenchmarkConfig.from_dict(s.apply(base.to_dict()))
        except ConfigError as exc:
            raise ConfigError([ConfigProblem(f"suggestion {index}", str(p)) for p in exc.problems]) from None
        problems = b.problems()
        if problems:
            raise ConfigError([ConfigProblem(f"suggestion {index}", str(p)) for p in problems])
        a_variant, b_variant = variants_of(s.variant, s.delta, base.variants)
        suggestions.append(
            TrialSuggestion(
                key=f"B{k}", index=index, rule=s.rule, title=s.title, evidence=s.evidence,
                variant=s.variant, delta=dict(s.delta), figure=figure_of(s.delta),
                a_variant=a_variant, b_variant=b_variant, config=b.to_dict(),
            )
        )
    return base, notes, suggestions


class _RoundStore(RunStore):
    """The trial folder as a run store whose folders say their round and role (``…_r2-B1_<slug>``)."""

    def __init__(self, root: Path, tag: str):
        super().__init__(root)
        self.tag = tag

    def new_run_folder(self, slug: str, when: datetime | None = None) -> Path:
        return super().new_run_folder(f"{self.tag}_{slug}", when)


def _run_status(outcome: RunOutcome) -> tuple[str, str]:
    """(status, message) of one run of the comparison."""
    run = outcome.run
    if outcome.config_problems is not None and not outcome.stop_requested:
        return FAILED, "the worker refused the configuration: " + "; ".join(
            str(p) for p in outcome.config_problems
        )
    if outcome.stop_requested or outcome.status in (RunStatus.STOPPED, RunStatus.INCOMPLETE):
        return STOPPED, run.message or "stopped"
    if outcome.write_error:
        return FAILED, outcome.write_error
    if outcome.status == RunStatus.FAILED:
        return FAILED, run.message or "the run failed"
    failed = [v for v in run.variants.values() if v.status == VariantStatus.FAILED]
    if failed:
        return FAILED, f"{failed[0].name} failed: {failed[0].error or 'no reason given'}"
    return COMPLETE, ""


@dataclass
class TrialOutcome:
    """How a comparison ended."""

    record: TrialRecord
    folder: Path
    stop_requested: bool = False
    write_error: str | None = None
    #: configuration A could not be measured (the comparison ended there): why
    failed: str | None = None


class TrialRunner:
    """Runs a trial folder's rounds (blocking :meth:`run`) and keeps trial.json up to date.

    ``session_factory`` makes each run's session (default: a worker on this
    machine, as ``compile-studio-cli run``). ``on_run(record, round, role)``
    gets a copy of the record after every change of a run (started, ended);
    ``on_event(role, event)`` and ``on_log(role, line)`` relay each session's
    events and log lines. Called from the thread that calls :meth:`run`.
    """

    def __init__(
        self,
        trial: TrialFolder,
        session_factory: SessionFactory | None = None,
        on_run: Callable[[TrialRecord, int, str], None] | None = None,
        on_event: Callable[[str, protocol.Event], None] | None = None,
        on_log: Callable[[str, str], None] | None = None,
    ):
        self.trial = trial
        self.session_factory: SessionFactory = session_factory or local_session
        self.on_run = on_run
        self.on_event = on_event
        self.on_log = on_log
        self._stop = threading.Event()
        self._stop_message = STOPPED_BY_USER
        self._lock = threading.Lock()
        self._session: RunSession | None = None
        self._done_runs = 0
        #: per suggestion key, per round: the values the checks read (A's, B's)
        self._a_groups: dict[str, dict[int, list[float]]] = {}
        self._b_groups: dict[str, dict[int, list[float]]] = {}
        #: per round: A's run (for the notes on what compile did)
        self._a_runs: dict[int, RunResult] = {}
        self._failed: str | None = None

    # -- control (any thread) -----------------------------------------------------------------
    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def request_stop(self, message: str = STOPPED_BY_USER) -> None:
        """Stop: the run going on stops (what it measured is kept in its folder), no other starts."""
        with self._lock:
            if self._stop.is_set():
                return
            self._stop_message = message
            self._stop.set()
            session = self._session
        if session is not None:
            session.request_stop(message)

    def planned_runs(self) -> int:
        record = self.trial.record
        return record.rounds * (2 + len(record.suggestions))

    def fraction(self) -> float:
        """How far the comparison is (0–1): runs done plus the running one's progress."""
        total = self.planned_runs()
        with self._lock:
            session = self._session
            done = self._done_runs
        running = session.progress.fraction() if session is not None else 0.0
        return min(1.0, (done + running) / total) if total else 1.0

    # -- the comparison -----------------------------------------------------------------------
    def run(self) -> TrialOutcome:
        """Run every round (blocking) and return how the comparison ended."""

        def start(record: TrialRecord) -> None:
            record.owner_pid, record.owner_host = this_owner()
            record.status = RUNNING
            record.message = ""

        self.trial.update(start)
        try:
            self._rounds()
        except Exception as exc:  # noqa: BLE001 - the record says why; the rounds measured stay
            self._failed = self._failed or f"{type(exc).__name__}: {exc}"
        final = self.trial.update(self._finish)
        return TrialOutcome(
            record=final, folder=self.trial.path, stop_requested=self._stop.is_set(),
            write_error=self.trial.write_error, failed=self._failed,
        )

    def _finish(self, record: TrialRecord) -> None:
        done = record.rounds_done()
        if self._failed is not None:
            record.status = FAILED
            record.message = self._failed
        elif self._stop.is_set():
            record.status = STOPPED
            record.message = f"{self._stop_message}; {done} of {record.rounds} rounds measured"
        else:
            record.status = COMPLETE
            dropped = [s.key for s in record.suggestions if s.dropped]
            record.message = f"{', '.join(dropped)} not run to the end" if dropped else ""

    def _rounds(self) -> None:
        record = self.trial.record
        for r in range(1, record.rounds + 1):
            if self._stop.is_set():
                return
            active = [s.key for s in self.trial.snapshot().suggestions if not s.dropped]
            if not active:
                return
            turn = (r - 1) % len(active)
            order = active[turn:] + active[:turn]
            a = self._run_one(r, ROLE_A, record.config)
            if self._stop.is_set():
                return
            if r == 1 and (a is None or a.status == RunStatus.FAILED):
                # A is the baseline of every ratio: without it in the first round, nothing can be compared
                why = (a.message if a is not None else "") or "it could not start"
                self._failed = f"configuration A (the run's own) failed in round 1: {why}"
                return
            for key in order:
                if self._stop.is_set():
                    return
                s = self.trial.record.suggestion(key)
                if s is None or s.dropped:
                    continue
                self._run_one(r, key, BenchmarkConfig.from_dict(s.config))
            if self._stop.is_set():
                return
            if all(s.dropped for s in self.trial.snapshot().suggestions):
                return  # no B left to bracket
            self._run_one(r, ROLE_A_END, record.config)

    def _environment(self, event: protocol.Event) -> None:
        if isinstance(event, protocol.HelloEvent) and not self.trial.record.environment:
            env = dict(event.environment)

            def keep(record: TrialRecord) -> None:
                if not record.environment:
                    record.environment = env

            self.trial.update(keep)

    def _set_run(self, r: int, role: str, **changes: object) -> None:
        def change(record: TrialRecord) -> None:
            found = next((x for x in record.runs if x.round == r and x.role == role), None)
            if found is None:
                found = TrialRun(round=r, role=role)
                record.runs.append(found)
            for key, value in changes.items():
                setattr(found, key, value)

        snapshot = self.trial.update(change)
        if self.on_run is not None:
            self.on_run(snapshot, r, role)

    def _run_one(self, r: int, role: str, config: BenchmarkConfig) -> RunResult | None:
        """One run of round ``r`` as ``role``; its figures go into the record. None when it could not start."""

        def on_event(event: protocol.Event) -> None:
            self._environment(event)
            if self.on_event is not None:
                self.on_event(role, event)

        def on_log(line: str) -> None:
            if self.on_log is not None:
                self.on_log(role, line)

        with self._lock:
            if self._stop.is_set():
                return None
        try:
            session = self.session_factory(config, _RoundStore(self.trial.path, f"r{r}-{role}"), on_event, on_log)
        except OSError as exc:
            self._set_run(r, role, status=FAILED, message=f"cannot create the run folder: {exc}")
            with self._lock:
                self._done_runs += 1
            return None
        with self._lock:
            self._session = session
            stop_now = self._stop.is_set()
        if stop_now:
            session.request_stop(self._stop_message)
        self._set_run(r, role, status=RUNNING, run=session.run_id, message="")
        try:
            outcome = session.run()
        finally:
            with self._lock:
                self._session = None
                self._done_runs += 1
        status, message = _run_status(outcome)
        name = outcome.folder.name if outcome.folder is not None else ""
        self.trial.update(lambda record: self._take(record, r, role, outcome, name))
        self._set_run(r, role, status=status, message=message, run=name)
        return outcome.run

    def _take(self, record: TrialRecord, r: int, role: str, outcome: RunOutcome, name: str) -> None:
        """The figures of one finished run into the record, and every verdict they change."""
        run = outcome.run
        if role in (ROLE_A, ROLE_A_END):
            first = role == ROLE_A
            if first:
                self._a_runs[r] = run
            for s in record.suggestions:
                value, why = run_figure(run, s.a_variant, s.figure)
                rf = _round(s, r)
                if first:
                    rf.a, rf.a_run = value, name
                else:
                    rf.a_end, rf.a_end_run = value, name
                if value is None:
                    rf.note = _join(rf.note, f"{'A' if first else 'A again'}: {why}")
                elif first:
                    self._a_groups.setdefault(s.key, {})[r] = run_samples(run, s.a_variant, s.figure)
                rf.ratio = ratio_of(a_reference(rf.a, rf.a_end), rf.b)
                self._judge(s)
            return
        found = record.suggestion(role)
        if found is None:
            return
        s = found
        value, why = run_figure(run, s.b_variant, s.figure)
        rf = _round(s, r)
        rf.b, rf.b_run = value, name
        rf.ratio = ratio_of(a_reference(rf.a, rf.a_end), rf.b)
        v = run.variants.get(s.b_variant)
        rf.b_allclose = v.allclose if v is not None else None
        if value is None:
            rf.note = _join(rf.note, f"B: {why}")
        else:
            self._b_groups.setdefault(s.key, {})[r] = run_samples(run, s.b_variant, s.figure)
        compiled = round_note(self._a_runs.get(r), run, s.a_variant, s.b_variant)
        rf.note = _join(rf.note, compiled)
        if not outcome.stop_requested:
            if outcome.config_problems is not None:
                s.dropped = "the worker refused configuration B: " + "; ".join(
                    str(p) for p in outcome.config_problems
                )
            elif v is not None and v.status == VariantStatus.FAILED:
                s.dropped = f"{s.b_variant} failed in B (round {r}): {v.error or 'no reason given'}"
            elif v is None and outcome.status == RunStatus.FAILED:
                s.dropped = f"B failed in round {r}: {run.message or 'no reason given'}"
        self._judge(s)

    def _judge(self, s: TrialSuggestion) -> None:
        keys = sorted(set(self._a_groups.get(s.key, {})) | set(self._b_groups.get(s.key, {})))
        a = [self._a_groups.get(s.key, {}).get(k, []) for k in keys]
        b = [self._b_groups.get(s.key, {}).get(k, []) for k in keys]
        judge_suggestion(s, a, b, failed=s.dropped)


def _round(s: TrialSuggestion, r: int) -> RoundFigure:
    found = next((x for x in s.rounds if x.round == r), None)
    if found is not None:
        return found
    made = RoundFigure(round=r)
    s.rounds.append(made)
    s.rounds.sort(key=lambda x: x.round)
    return made


def _join(a: str, b: str) -> str:
    return "; ".join(x for x in (a, b) if x)
