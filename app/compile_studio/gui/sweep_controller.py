"""Sweeps and shape sweeps run: started, resumed and stopped in their threads, their progress as signals.

The :class:`~compile_studio.gui.sweep_view.SweepView` shows; a :class:`SweepController`
runs its jobs: it makes the sweep's folder, asks about code the user has not agreed to
run, and runs the points (a :class:`~compile_studio.jobs.sweep.SweepRunner`, or a shape
sweep's :class:`~compile_studio.jobs.shape_sweep_run.ShapeSweepRun`) on a
:class:`~compile_studio.gui.job_thread.JobThread`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import cast

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from ..core import protocol
from ..core.config import BenchmarkConfig, ConfigError
from ..jobs.shape_sweep_run import ShapeSweepOutcome, ShapeSweepRun, new_shape_sweep
from ..jobs.sweep import (
    SweepOutcome,
    SweepRunner,
    local_session,
    new_sweep,
    planned_configs,
    sweep_configs,
)
from ..jobs.sweep_spec import SweepSpec
from ..jobs.trust import Agreement, code_of_configs
from ..results.records.sweep_record import SweepDamaged
from ..results.storage.sweep_store import SweepFolder
from .job_thread import JobThread
from .trust_dialog import NOT_AGREED, CodeConsent


class SweepController(QObject):
    """Runs one sweep or shape sweep at a time; new ones go in ``root``.

    ``busy`` says why no sweep may start now ("" when one may). Each start emits
    :attr:`sweep_started` (or :attr:`shape_started`), then the record's changes, then
    :attr:`sweep_ended` (:attr:`shape_ended`) and :attr:`running_changed`.
    """

    #: a problem to show the user
    message = Signal(str)
    #: a log line (the sweep's workers' stderr, point by point)
    log_line = Signal(str)
    #: a sweep or shape sweep started or ended (True while running)
    running_changed = Signal(bool)
    #: a sweep started: its SweepFolder
    sweep_started = Signal(object)
    #: a copy of the running sweep's record (SweepRecord) and the index of the point that changed
    point_changed = Signal(object, object)
    #: an event of the worker running a point: its index, the event (phase, error, warning)
    worker_event = Signal(object, object)
    #: the sweep ended: its record (SweepRecord; None: none could be read)
    sweep_ended = Signal(object)
    #: a shape sweep started, changed (its record and the point) or ended: its record (ShapeSweepRecord)
    shape_started = Signal(object)
    shape_changed = Signal(object, object)
    shape_ended = Signal(object)

    def __init__(self, root: Path, busy: Callable[[], str] = lambda: "", parent: QWidget | None = None):
        super().__init__(parent)
        self.root = Path(root)
        self.busy = busy
        self.sweep_thread: JobThread | None = None
        #: the folder of the sweep running or run last
        self.folder: SweepFolder | None = None
        #: the shape sweep running (one worker), if any
        self.shape_thread: JobThread | None = None
        self.last_outcome: SweepOutcome | None = None
        self.last_shape_outcome: ShapeSweepOutcome | None = None
        #: asks before a sweep from a received folder runs the code it names (shared with the window)
        self.code_consent = CodeConsent(parent)
        #: whether the code a new sweep's configurations name may run (the window's form rule):
        #: called with the base and the other configurations the sweep will run (its points)
        self.agree_base: Callable[..., Agreement | None] = lambda base, more=None: Agreement()
        #: the sweep folders started in this session: resuming one is not asked about
        self._own_folders: set[str] = set()
        #: what was agreed when each of them started: a resume runs the same copies
        self._agreements: dict[str, Agreement] = {}

    def is_running(self) -> bool:
        return self.sweep_thread is not None or self.shape_thread is not None

    def stop_requested(self) -> bool:
        thread = self.sweep_thread or self.shape_thread
        return thread is not None and thread.stop_requested

    def fraction(self) -> float:
        """How far the running job is (0 when none runs)."""
        thread = self.sweep_thread or self.shape_thread
        return thread.fraction() if thread is not None else 0.0

    def may_start(self) -> bool:
        """Whether a sweep may start now; says why not (:attr:`message`)."""
        if self.is_running():
            self.message.emit("A sweep is running: stop it first")
            return False
        busy = self.busy()
        if busy:
            self.message.emit(busy)
            return False
        return True

    def start(self, spec: SweepSpec, base: BenchmarkConfig, concurrency: int = 1) -> bool:
        """Make a sweep folder for ``spec`` from ``base`` and run it; returns whether it started."""
        if not self.may_start():
            return False
        agreement = self.agree_base(base, planned_configs(spec, base)[1:])
        if agreement is None:
            self.message.emit(self.code_consent.problem or NOT_AGREED)
            return False
        try:
            folder = new_sweep(spec, base, self.root)
        except ConfigError as exc:
            self.message.emit("Cannot sweep: " + "; ".join(str(p) for p in exc.problems))
            return False
        except OSError as exc:
            self.message.emit(f"Cannot create the sweep folder in {self.root}: {exc.strerror or exc}")
            return False
        self._own_folders.add(os.path.abspath(folder.path))
        self._agreements[os.path.abspath(folder.path)] = agreement
        return self._run(folder, concurrency, agreement)

    def resume(self, path: Path, concurrency: int | None = None) -> bool:
        """Run the points of the sweep in ``path`` that are missing (pending, stopped, cut off)."""
        if self.is_running():
            return False
        busy = self.busy()
        if busy:
            self.message.emit(busy)
            return False
        try:
            folder = SweepFolder.open(path)
        except SweepDamaged as exc:
            self.message.emit(f"Cannot resume {path.name}: {exc}")
            return False
        if not any(p.missing for p in folder.record.points):
            self.message.emit("Nothing to resume: every point of this sweep has run")
            return False
        agreement: Agreement | None = self._agreements.get(os.path.abspath(folder.path), Agreement())
        if os.path.abspath(folder.path) not in self._own_folders:
            refs = code_of_configs(sweep_configs(folder.record))
            agreement = self.code_consent.agreed(refs, f"The sweep {folder.path}")
            if agreement is None:
                self.message.emit(self.code_consent.problem or NOT_AGREED)
                return False
        return self._run(folder, concurrency or folder.record.concurrency, agreement)

    def _run(self, folder: SweepFolder, concurrency: int, agreement: Agreement | None = None) -> bool:
        self.folder = folder
        factory = (agreement or Agreement()).sessions(local_session)  # the agreed copies run
        thread = JobThread(parent=self, what="the sweep")
        thread.runner = SweepRunner(
            folder, concurrency=concurrency, session_factory=factory, on_point=thread.relay_changed,
            on_event=thread.relay_event, on_log=lambda index, line: thread.log.emit(f"[point {index + 1}] {line}"),
        )
        thread.changed.connect(self.point_changed)  # (a copy of the record, the point that changed)
        thread.worker_event.connect(self.worker_event)
        thread.log.connect(self.log_line)
        thread.failed.connect(self.message)
        thread.finished_job.connect(self._on_finished)
        thread.finished.connect(self._on_thread_ended)
        self.sweep_thread = thread
        self.last_outcome = None
        thread.start()
        self.sweep_started.emit(folder)
        self.running_changed.emit(True)
        return True

    def start_shape(self, request: protocol.ShapeSweepRequest) -> bool:
        """Make a shape-sweep folder for ``request`` and run it in one worker; returns whether it started."""
        if not self.may_start():
            return False
        try:
            base = BenchmarkConfig.from_dict(request.config)
        except (ConfigError, TypeError, ValueError) as exc:
            self.message.emit(f"Cannot sweep: {exc}")
            return False
        agreement = self.agree_base(base)
        if agreement is None:
            self.message.emit(self.code_consent.problem or NOT_AGREED)
            return False
        try:
            folder = new_shape_sweep(request, self.root)
        except OSError as exc:
            self.message.emit(f"Cannot create the shape-sweep folder in {self.root}: {exc.strerror or exc}")
            return False
        thread = JobThread(parent=self, what="the shape sweep")
        thread.runner = ShapeSweepRun(folder, on_point=thread.relay_changed, on_log=thread.log.emit, pin=agreement.apply)
        thread.changed.connect(self.shape_changed)
        thread.log.connect(self.log_line)
        thread.failed.connect(self.message)
        thread.finished_job.connect(self._on_shape_finished)
        thread.finished.connect(self._on_thread_ended)
        self.shape_thread = thread
        self.last_shape_outcome = None
        thread.start()
        self.shape_started.emit(folder.record.copy())
        self.running_changed.emit(True)
        return True

    def _on_shape_finished(self, outcome: ShapeSweepOutcome) -> None:
        self.last_shape_outcome = outcome
        if outcome.refused is not None:
            self.message.emit("Cannot run the shape sweep: " + "; ".join(str(p) for p in outcome.refused))
        elif outcome.record.status == "failed":
            self.message.emit(f"The shape sweep failed: {outcome.record.message[:300]}")

    def _on_finished(self, outcome: SweepOutcome) -> None:
        self.last_outcome = outcome
        if outcome.refused is not None:
            self.message.emit("Cannot sweep: " + "; ".join(str(p) for p in outcome.refused))

    def stop(self) -> bool:
        """Stop the running sweep: no new point starts, the running one stops; points done are
        kept. Returns whether a stop was asked for now."""
        thread = self.sweep_thread or self.shape_thread
        if thread is None or thread.stop_requested:
            return False
        thread.request_stop()
        return True

    def close(self, wait_ms: int) -> None:
        """The window closes: stop a running sweep and wait up to ``wait_ms`` for its workers."""
        thread = self.sweep_thread or self.shape_thread
        if thread is None:
            return
        thread.request_stop("the window was closed during the sweep")
        thread.wait(wait_ms)

    def wait_done(self, timeout_ms: int) -> bool:
        """Wait (processing nothing) for the sweep thread to end; for scripts and tests."""
        thread = self.sweep_thread or self.shape_thread
        return thread is None or thread.wait(timeout_ms)

    def _on_thread_ended(self) -> None:
        shape = self.shape_thread
        if shape is not None:
            self.shape_thread = None
            ended = shape.outcome
            folder = cast(ShapeSweepRun, shape.runner).folder
            shape.deleteLater()
            self.shape_ended.emit(ended.record if ended is not None else folder.record.copy())
            if ended is not None and ended.write_error:
                self.message.emit(ended.write_error)
            self.running_changed.emit(False)
            return
        thread = self.sweep_thread
        self.sweep_thread = None
        if thread is not None:
            outcome = thread.outcome
            if outcome is not None and outcome.write_error:
                self.message.emit(outcome.write_error)
            thread.deleteLater()
            record = outcome.record if outcome is not None else (self.folder.snapshot() if self.folder else None)
            self.sweep_ended.emit(record)
        self.running_changed.emit(False)
