"""Sweeps: one configuration parameter over a list or a range of values, a run per point.

A sweep answers "where does torch.compile pay off?" with a curve: each point
is a whole run (eager plus the chosen variants, under the same rules as a
single run) driven by a :class:`~compile_studio.jobs.session.RunSession` into its
own run folder inside the sweep folder (see :mod:`results.storage.sweep_store`).

:class:`SweepRunner` runs the missing points, ``concurrency`` at a time
(threads, each supervising one session). How a point's session is made is
its ``session_factory``: the default runs the worker on this machine; another
factory may start it elsewhere (a launcher over SSH or Slurm). What can be
swept is in :mod:`sweep_spec`; shape sweeps are in :mod:`shape_sweep_run`.
No Qt, no torch here.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from ..core import protocol
from ..core.config import BenchmarkConfig, ConfigError, ConfigProblem
from ..core.protocol import RunStatus, VariantStatus
from ..results.analysis.summary import summarize
from ..results.records.sweep_record import (
    COMPLETE,
    FAILED,
    PENDING,
    RUNNING,
    STOPPED,
    PointVariant,
    SweepPoint,
    SweepRecord,
)
from ..results.report.formatting import plural
from ..results.storage.owner_lock import RecordBusy, this_owner
from ..results.storage.store import RunStore
from ..results.storage.sweep_store import SweepFolder
from .job import StopSwitch
from .session import (
    STOPPED_BY_USER,
    RunOutcome,
    RunSession,
)
from .sweep_spec import SweepSpec

# -- running ----------------------------------------------------------------------------------


class SessionFactory(Protocol):
    """Makes the session that runs one point (e.g. with a launcher for a remote machine)."""

    def __call__(
        self,
        config: BenchmarkConfig,
        store: RunStore,
        on_event: Callable[[protocol.Event], None],
        on_log: Callable[[str], None],
    ) -> RunSession: ...


def local_session(
    config: BenchmarkConfig,
    store: RunStore,
    on_event: Callable[[protocol.Event], None],
    on_log: Callable[[str], None],
) -> RunSession:
    """A point run by a worker on this machine (the same session as a single run)."""
    return RunSession(config, store, on_event=on_event, on_log=on_log)


def local_worker_limit() -> int:
    """The most sweep points run at once on this machine: one per core it may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def new_sweep(spec: SweepSpec, base: BenchmarkConfig, root: Path) -> SweepFolder:
    """A new sweep folder under ``root`` with every point pending; raises ConfigError or OSError."""
    spec.validate(base)
    base = dataclasses.replace(base, label=base.label.strip())
    record = SweepRecord(
        sweep_id="",
        created="",
        param=spec.param,
        config=base,
        points=[SweepPoint(index=k, value=v) for k, v in enumerate(spec.values)],
        values_text=spec.values_text,
        status=PENDING,
    )
    slug = base.slug(read_factory=True)
    if spec.param == "batch_size":
        slug = re.sub(r"_b\d+_", "_", slug, count=1)
    slug = f"{spec.param.replace(':', '')}_{slug}"
    return SweepFolder.create(Path(root), slug, record)


def spec_of(record: SweepRecord) -> SweepSpec:
    """The spec a saved sweep was made from."""
    return SweepSpec(record.param, tuple(record.values), record.values_text)


def planned_configs(spec: SweepSpec, base: BenchmarkConfig) -> list[BenchmarkConfig]:
    """Every configuration a sweep of ``spec`` from ``base`` would run: the base and each point's."""
    configs = [base]
    for value in spec.values:
        try:
            configs.append(spec.point_config(base, value))
        except (ConfigError, TypeError, ValueError):
            continue
    return configs


def sweep_configs(record: SweepRecord) -> list[BenchmarkConfig]:
    """Every configuration a saved sweep runs (its base and each point's), for the code question."""
    return planned_configs(spec_of(record), record.config)


@dataclass
class SweepOutcome:
    """How a sweep (or the part of it this runner ran) ended."""

    record: SweepRecord
    folder: Path
    #: indices of the points this runner ran (started), in the order they started
    ran: list[int]
    stop_requested: bool = False
    write_error: str | None = None
    #: the worker refused the base configuration (the same for every point): what is wrong
    refused: list[ConfigProblem] | None = None

    @property
    def failed(self) -> list[SweepPoint]:
        return [p for p in self.record.points if p.status == FAILED]

    @property
    def missing(self) -> list[SweepPoint]:
        return [p for p in self.record.points if p.missing]


def _now() -> str:
    return datetime.now().isoformat(timespec="seconds")


def _point_rows(outcome: RunOutcome, config: BenchmarkConfig) -> list[PointVariant]:
    """The point's variants from its run's summary; every planned variant has a row."""
    try:
        rows = [PointVariant.from_summary(r) for r in summarize(outcome.run)]
    except Exception as exc:  # noqa: BLE001 - a summary that cannot be made fails this point only
        rows = []
        outcome.run.message = outcome.run.message or f"no summary: {type(exc).__name__}: {exc}"
    names = {r.variant for r in rows}
    for name in config.variants:
        if name not in names:
            rows.append(PointVariant(variant=name, status=str(VariantStatus.NOT_RUN)))
    return rows


def _point_result(outcome: RunOutcome) -> tuple[str, str]:
    """(status, message) of a point from its session's outcome."""
    run = outcome.run
    if outcome.stop_requested:
        # a stop that reached the worker before its configuration reads as a refused one
        return STOPPED, run.message or "stopped"
    if outcome.config_problems is not None:
        return FAILED, "the worker refused the configuration: " + "; ".join(
            str(p) for p in outcome.config_problems
        )
    if outcome.write_error:
        return FAILED, outcome.write_error
    status = outcome.status
    if status == RunStatus.FAILED:
        return FAILED, run.message or "the run failed"
    if outcome.stop_requested or status in (RunStatus.STOPPED, RunStatus.INCOMPLETE):
        return STOPPED, run.message or "stopped"
    failed = [v for v in run.variants.values() if v.status == VariantStatus.FAILED]
    if failed:
        first = failed[0]
        return FAILED, f"{first.name} failed: {first.error or 'no reason given'}"
    return COMPLETE, ""


class SweepRunner:
    """Runs the missing points of a sweep folder and keeps its files up to date.

    ``concurrency`` points run at once, each in a thread supervising one
    session made by ``session_factory`` (default: a local worker). After
    every change of a point the folder's sweep.json and sweep.csv are
    rewritten and ``on_point`` gets a copy of the record and the point's index
    (called from the point's thread). ``on_event(index, event)`` and
    ``on_log(index, line)`` relay each session's events and log lines.
    ``retry_failed`` runs failed points again too.
    """

    def __init__(
        self,
        sweep: SweepFolder,
        concurrency: int = 1,
        session_factory: SessionFactory | None = None,
        on_point: Callable[[SweepRecord, int], None] | None = None,
        on_event: Callable[[int, protocol.Event], None] | None = None,
        on_log: Callable[[int, str], None] | None = None,
        retry_failed: bool = False,
    ):
        if not 1 <= concurrency <= 64:
            raise ValueError("concurrency must be 1–64")
        self.sweep = sweep
        #: what was asked, and what runs: local workers are capped at this machine's cores
        self.asked_concurrency = concurrency
        self.concurrency = concurrency if session_factory is not None else min(concurrency, local_worker_limit())
        self.session_factory: SessionFactory = session_factory or local_session
        self.on_point = on_point
        self.on_event = on_event
        self.on_log = on_log
        self.retry_failed = retry_failed
        self.spec = spec_of(sweep.record)
        self._lock = threading.Lock()
        self._stop = StopSwitch(self._lock)
        self._sessions: dict[int, RunSession] = {}
        self._ran: list[int] = []
        #: per point index: the progress (0–1) of its session
        self._fractions: dict[int, float] = {}
        self._refused: list[ConfigProblem] | None = None

    # -- control --------------------------------------------------------------------------
    @property
    def stop_requested(self) -> bool:
        return self._stop.requested

    def request_stop(self, message: str = STOPPED_BY_USER) -> None:
        """Stop: no further point starts, the running ones stop (their samples kept); returns at once."""
        if not self._stop.trip(message):
            return
        with self._lock:  # a session registered after the trip sees it and stops itself
            sessions = list(self._sessions.values())
        for session in sessions:
            session.request_stop(message)

    def to_run(self) -> list[int]:
        """The indices of the points this runner will run."""
        wanted = (PENDING, RUNNING, STOPPED, FAILED) if self.retry_failed else (PENDING, RUNNING, STOPPED)
        return [p.index for p in self.sweep.record.points if p.status in wanted]

    def fraction(self) -> float:
        """How far the sweep is (0–1): points finished plus the running points' progress."""
        record = self.sweep.record
        total = len(record.points)
        if not total:
            return 1.0
        with self._lock:
            running = dict(self._fractions)
            sessions = dict(self._sessions)
        for index, session in sessions.items():
            running[index] = session.progress.fraction()
        done = sum(1 for p in record.points if p.status in (COMPLETE, FAILED) and p.index not in running)
        return min(1.0, (done + sum(running.values())) / total)

    # -- the run ------------------------------------------------------------------------------
    def run(self) -> SweepOutcome:
        """Run every missing point (blocking) and return how the sweep ended.

        The folder's owner lock is held throughout: a sweep another live
        process runs is refused (``refused`` says so), never run twice.
        """
        try:
            self.sweep.claim()
        except RecordBusy as exc:
            return SweepOutcome(
                record=self.sweep.snapshot(), folder=self.sweep.path, ran=[], stop_requested=False,
                write_error=None, refused=[ConfigProblem("sweep", str(exc))],
            )
        try:
            return self._run()
        finally:
            self.sweep.release()

    def _run(self) -> SweepOutcome:
        todo = self.to_run()
        jobs: queue.Queue[int] = queue.Queue()
        for index in todo:
            jobs.put(index)

        def start(record: SweepRecord) -> None:
            record.owner_pid, record.owner_host = this_owner()
            record.status = RUNNING
            record.message = ""
            record.concurrency = self.concurrency

        self.sweep.update(start)
        threads = [
            threading.Thread(target=self._work, args=(jobs,), name=f"sweep-point-{k}", daemon=True)
            for k in range(min(self.concurrency, max(1, len(todo))))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        def finish(record: SweepRecord) -> None:
            missing = [p for p in record.points if p.missing]
            if not missing:
                record.status = COMPLETE
                failed = sum(1 for p in record.points if p.status == FAILED)
                record.message = f"{failed} of {plural(len(record.points), 'point')} failed" if failed else ""
            elif self._stop.requested:
                record.status = STOPPED
                record.message = f"{self._stop.message}; {plural(len(missing), 'point')} not run (resume runs them)"
            else:
                record.status = "incomplete"
                record.message = f"{plural(len(missing), 'point')} not run"

        final = self.sweep.update(finish)
        return SweepOutcome(
            record=final,
            folder=self.sweep.path,
            ran=list(self._ran),
            stop_requested=self._stop.requested,
            write_error=self.sweep.write_error,
            refused=self._refused,
        )

    def _work(self, jobs: queue.Queue[int]) -> None:
        while not self._stop.requested:
            try:
                index = jobs.get_nowait()
            except queue.Empty:
                return
            try:
                self._run_point(index)
            except Exception as exc:  # noqa: BLE001 - one point never ends the sweep
                self._set_point(index, status=FAILED, message=f"{type(exc).__name__}: {exc}", finished=_now())
            if self.sweep.write_error is not None:
                self.request_stop(self.sweep.write_error)

    def _set_point(self, index: int, **changes: object) -> SweepRecord:
        def change(record: SweepRecord) -> None:
            point = next(p for p in record.points if p.index == index)
            for key, value in changes.items():
                setattr(point, key, value)

        snapshot = self.sweep.update(change)
        if self.on_point is not None:
            self.on_point(snapshot, index)
        return snapshot

    def _environment(self, event: protocol.Event) -> None:
        if isinstance(event, protocol.HelloEvent) and not self.sweep.record.environment:
            env = dict(event.environment)

            def keep(record: SweepRecord) -> None:
                if not record.environment:
                    record.environment = env

            self.sweep.update(keep)

    def _run_point(self, index: int) -> None:
        point = next(p for p in self.sweep.record.points if p.index == index)
        config = self.spec.point_config(self.sweep.record.config, point.value)

        def on_event(event: protocol.Event) -> None:
            self._environment(event)
            if self.on_event is not None:
                self.on_event(index, event)

        def on_log(line: str) -> None:
            if self.on_log is not None:
                self.on_log(index, line)

        with self._lock:
            if self._stop.requested:
                return
            self._ran.append(index)
        try:
            session = self.session_factory(config, RunStore(self.sweep.path), on_event, on_log)
        except OSError as exc:
            self._set_point(
                index, status=FAILED, message=f"cannot create the point's run folder: {exc}", finished=_now()
            )
            return
        with self._lock:
            self._sessions[index] = session
            stop_now = self._stop.requested
        if stop_now:
            session.request_stop(self._stop.message)
        earlier = list(point.earlier_runs)
        if point.run and point.run != session.run_id:
            earlier.append(point.run)
        self._set_point(
            index, status=RUNNING, run=session.run_id, message="", started=_now(), finished="",
            earlier_runs=earlier, variants=[],
        )
        try:
            outcome = session.run()
        finally:
            with self._lock:
                self._sessions.pop(index, None)
        status, message = _point_result(outcome)
        if outcome.config_problems and not outcome.stop_requested:
            swept = self.spec.field()
            if all(p.field != swept for p in outcome.config_problems):
                # not this point's value: every other point would be refused the same way
                self._refused = list(outcome.config_problems)
                self.request_stop("the worker refused the configuration")
        rows = _point_rows(outcome, config) if status != STOPPED or outcome.run.variants else []
        run_name = outcome.folder.name if outcome.folder is not None else ""
        # a stopped point keeps its run folder; a resume starts it afresh and lists this one as earlier
        self._set_point(index, status=status, message=message, finished=_now(), variants=rows, run=run_name)


