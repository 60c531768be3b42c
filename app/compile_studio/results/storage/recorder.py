"""Turns the worker's event stream into a RunResult and the files of its folder."""

from __future__ import annotations

import errno
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ... import __version__
from ...core import protocol
from ...core.config import BenchmarkConfig
from ...core.protocol import ErrorKind, RunStatus, VariantStatus
from ..analysis.summary import summarize
from ..explain.why_files import compact as why_compact
from ..explain.why_files import record_diagnostics
from ..records.run_result import RunResult, gpu_state_rows
from .run_files import RunWriter
from .store import RunStore, folder_stamp

#: Run-level errors after which the run as a whole has failed.
_RUN_FAILING_KINDS = (
    ErrorKind.BAD_CONFIG,
    ErrorKind.DEVICE_UNAVAILABLE,
    ErrorKind.INTERNAL,
    ErrorKind.OOM,
    ErrorKind.PROTOCOL,
)


def describe_write_error(exc: OSError, folder: Path) -> str:
    """A write failure in words a user understands."""
    if exc.errno == errno.ENOSPC:
        return f"the disk is full at {folder}"
    if exc.errno == errno.ENOENT or not folder.exists():
        return f"the run folder {folder} was removed"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"the run folder {folder} cannot be written ({exc.strerror})"
    return f"cannot write the run folder {folder}: {exc.strerror or exc}"


class RunRecorder:
    """Consumes protocol events, keeps the :class:`RunResult`, writes the run folder.

    Used by :class:`~compile_studio.jobs.session.RunSession`. ``folder`` None
    keeps the run in memory only. The summary is computed when a variant ends
    and when the run ends, and stored in run.json; writes in between store
    the last one computed.
    """

    def __init__(self, config: BenchmarkConfig | dict[str, Any], folder: Path | None = None):
        now = datetime.now(timezone.utc)  # the order of runs: UTC, whatever the local clock says
        if not isinstance(config, BenchmarkConfig):
            config = BenchmarkConfig.from_dict(config)
        self.run = RunResult(
            run_id=folder.name if folder else folder_stamp(now),
            created=now.isoformat(timespec="milliseconds"),
            config=config,
            app_version=__version__,
        )
        for name in config.variants:
            self.run.variant(name)
        self.writer = RunWriter(folder, self.run) if folder is not None else None
        self._folder = folder
        #: why the folder could no longer be written (the run goes on in memory)
        self.write_error: str | None = None
        self.finished = False

    @classmethod
    def in_store(
        cls, store: RunStore, config: BenchmarkConfig | dict[str, Any], slug: str | None = None
    ) -> RunRecorder:
        """A recorder writing a new folder of ``store``, named after ``slug``."""
        if not isinstance(config, BenchmarkConfig):
            config = BenchmarkConfig.from_dict(config)
        return cls(config, store.new_run_folder(slug or config.slug(read_factory=True)))

    @property
    def folder(self) -> Path | None:
        return self._folder

    def _write(self, action: Callable[[RunWriter], None]) -> None:
        """Write through the folder's writer; a failure keeps the run in memory and says why."""
        writer = self.writer
        if writer is None:
            return
        try:
            action(writer)
        except OSError as exc:
            self.writer = None
            self.write_error = describe_write_error(exc, writer.folder)
            try:
                writer.close()
            except OSError:
                pass

    def _save(self) -> None:
        """run.json, with the summary as computed when a variant last ended (not computed again)."""
        self._write(RunWriter.write_run_json)

    def save(self) -> None:
        """Write run.json again: what the supervisor noted after the worker said ``done``."""
        self._save()

    def _summarize(self) -> None:
        """A variant ended: the summary is computed now, once (rows of variants that did not
        change since are reused), and stored with every run.json written until the next."""
        summarize(self.run)

    def handle(self, event: protocol.Event) -> None:
        """Apply one event; writes files when the event changes them."""
        run = self.run
        if isinstance(event, protocol.HelloEvent):
            run.environment = dict(event.environment)
            self._save()
        elif isinstance(event, protocol.PhaseEvent):
            if event.variant is None:
                if event.device:
                    run.environment["device"] = event.device
                if event.inductor_cache_dir:
                    run.environment["inductor_cache_dir"] = event.inductor_cache_dir
                self._save()
                return
            v = run.variant(event.variant)
            if v.status == VariantStatus.PENDING:
                v.status = VariantStatus.RUNNING
        elif isinstance(event, protocol.SamplesEvent):
            v = run.variant(event.variant)
            v.samples.extend(
                event.first_iteration, event.phase, event.wall_ms, event.device_ms, event.round
            )
            self._write(
                lambda w: w.append_samples(
                    v.name,
                    event.first_iteration,
                    event.phase,
                    event.wall_ms,
                    event.device_ms,
                    event.round,
                )
            )
        elif isinstance(event, protocol.RunInfoEvent):
            info = protocol.to_dict(event)
            info.pop("type")
            run.measurement.update(info)
            self._save()
        elif isinstance(event, protocol.CompiledEvent):
            run.variant(event.variant).apply_compiled(event)
            self._save()
        elif isinstance(event, protocol.VariantDoneEvent):
            run.variant(event.variant).apply_done(event)
            self._summarize()
            self._save()
        elif isinstance(event, protocol.DiagnosticsEvent):
            run.measurement.setdefault("why", {})[event.variant] = why_compact(event.why)
            self._write(lambda w: record_diagnostics(w.folder, event))
            self._save()
        elif isinstance(event, protocol.GpuStateEvent):
            rows = gpu_state_rows(event)
            run.gpu_state.extend(rows)
            self._write(lambda w: w.append_gpu_state(rows))
        elif isinstance(event, protocol.WarningEvent):
            if event.variant:
                run.variant(event.variant).warnings.append(event.message)
        elif isinstance(event, protocol.ErrorEvent):
            if event.variant:
                v = run.variant(event.variant)
                v.status = VariantStatus.FAILED
                v.error = event.message
                v.error_kind = event.kind
                self._summarize()
            else:
                run.message = event.message
                if event.kind in _RUN_FAILING_KINDS:
                    run.status = RunStatus.FAILED
            self._save()
        elif isinstance(event, protocol.DoneEvent):
            if run.status != RunStatus.FAILED:
                run.status = (
                    RunStatus.STOPPED if event.status == RunStatus.STOPPED else RunStatus.COMPLETE
                )
            if run.status == RunStatus.COMPLETE and run.variants and all(
                v.status == VariantStatus.FAILED for v in run.variants.values()
            ):
                # nothing was measured: not a complete run whatever the worker's own word
                run.status = RunStatus.FAILED
                run.message = run.message or "every variant failed: nothing was measured"
            self.finish()

    def _end(self, status: RunStatus, message: str, variant_status: VariantStatus) -> None:
        self.run.status = status
        self.run.message = message
        self._mark_not_run()
        for v in self.run.variants.values():
            if v.status in (VariantStatus.RUNNING, VariantStatus.PENDING):
                v.status = variant_status
                if variant_status == VariantStatus.FAILED:
                    v.error = v.error or message
                    v.error_kind = v.error_kind or ErrorKind.CRASHED
        self.finish()

    def fail(self, message: str) -> None:
        """The worker ended without ``done`` (crash, killed): keep what arrived."""
        if not self.finished:
            self._end(RunStatus.FAILED, message, VariantStatus.FAILED)

    def stop(self, message: str = "stopped by the user") -> None:
        """Mark a run that was stopped before the worker said ``done``."""
        if not self.finished:
            self._end(RunStatus.STOPPED, message, VariantStatus.STOPPED)

    def cut_short(self, message: str) -> None:
        """A stopped run whose supervisor went away is ``incomplete``, saying why.

        A run that completed or failed on its own before that keeps its status.
        """
        run = self.run
        if run.status not in (RunStatus.STOPPED, RunStatus.INCOMPLETE):
            return
        run.status = RunStatus.INCOMPLETE
        run.message = message
        if self.finished:
            self._save()

    def _mark_not_run(self) -> None:
        """Planned variants the worker never started are ``not run`` (kept, with no samples)."""
        for v in self.run.variants.values():
            if v.status == VariantStatus.PENDING and not len(v.samples) and v.compile_s is None:
                v.status = VariantStatus.NOT_RUN

    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        self._mark_not_run()
        if self.run.status == RunStatus.STOPPED:
            for v in self.run.variants.values():
                if v.status == VariantStatus.RUNNING:
                    v.status = VariantStatus.STOPPED
        self._write(RunWriter.finish)
