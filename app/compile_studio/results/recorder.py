"""Turns the worker's event stream into a RunResult and the files of its folder."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from .. import __version__, protocol
from .run_result import RunResult, gpu_state_rows
from .store import RunStore, RunWriter


class RunRecorder:
    """Consumes protocol events, keeps the :class:`RunResult`, writes the run folder.

    Used by the CLI and by the GUI's benchmark thread alike. ``folder`` None
    keeps the run in memory only.
    """

    def __init__(self, config: dict[str, Any], folder: Path | None = None):
        now = datetime.now()
        self.run = RunResult(
            run_id=folder.name if folder else f"{now:%Y%m%d-%H%M%S}",
            created=now.isoformat(timespec="seconds"),
            config=dict(config),
            app_version=__version__,
        )
        self.writer = RunWriter(folder, self.run) if folder is not None else None
        self.finished = False

    @classmethod
    def in_store(cls, store: RunStore, config: dict[str, Any], slug: str) -> RunRecorder:
        return cls(config, store.new_run_folder(slug))

    @property
    def folder(self) -> Path | None:
        return self.writer.folder if self.writer else None

    def handle(self, event: dict[str, Any]) -> None:
        """Apply one event; writes files when the event changes them."""
        kind = event.get("type")
        run = self.run
        if kind == protocol.HELLO:
            run.environment = dict(event.get("environment") or {})
            if self.writer:
                self.writer.write_run_json()
        elif kind == protocol.PHASE:
            if event.get("variant") is None:
                for key in ("device", "inductor_cache_dir"):
                    if event.get(key):
                        run.environment[key] = event[key]
                if self.writer:
                    self.writer.write_run_json()
                return
            v = run.variant(event["variant"])
            if v.status == "pending":
                v.status = "running"
        elif kind == protocol.SAMPLES:
            v = run.variant(event["variant"])
            v.samples.extend(
                int(event["first_iteration"]),
                event["phase"],
                event["wall_ms"],
                event.get("device_ms"),
            )
            if self.writer:
                self.writer.append_samples(
                    v.name,
                    int(event["first_iteration"]),
                    event["phase"],
                    event["wall_ms"],
                    event.get("device_ms"),
                )
        elif kind == protocol.COMPILED:
            run.variant(event["variant"]).apply_compiled(event)
            if self.writer:
                self.writer.write_run_json()
        elif kind == protocol.VARIANT_DONE:
            run.variant(event["variant"]).apply_done(event)
            if self.writer:
                self.writer.write_run_json()
        elif kind == protocol.GPU_STATE:
            rows = gpu_state_rows(event)
            run.gpu_state.extend(rows)
            if self.writer:
                self.writer.append_gpu_state(rows)
        elif kind == protocol.WARNING:
            if event.get("variant"):
                run.variant(event["variant"]).warnings.append(event.get("message", ""))
        elif kind == protocol.ERROR:
            name = event.get("variant")
            if name:
                v = run.variant(name)
                v.status = "failed"
                v.error = event.get("message")
                v.error_kind = event.get("kind")
            else:
                run.message = event.get("message", "")
                if event.get("kind") in ("bad_config", "device_unavailable", "internal", "oom"):
                    run.status = "failed"
            if self.writer:
                self.writer.write_run_json()
        elif kind == protocol.DONE:
            status = event.get("status", "complete")
            if run.status != "failed":
                run.status = "stopped" if status == "stopped" else "complete"
            self.finish()

    def fail(self, message: str) -> None:
        """The worker ended without ``done`` (crash, killed): keep what arrived."""
        if self.finished:
            return
        self.run.status = "failed"
        self.run.message = message
        for v in self.run.variants.values():
            if v.status in ("running", "pending"):
                v.status = "failed"
                v.error = v.error or message
                v.error_kind = v.error_kind or "crashed"
        self.finish()

    def stop(self, message: str = "stopped by the user") -> None:
        """Mark a run that was stopped before the worker said ``done``."""
        if self.finished:
            return
        self.run.status = "stopped"
        self.run.message = message
        for v in self.run.variants.values():
            if v.status in ("running", "pending"):
                v.status = "stopped"
        self.finish()

    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        if self.run.status == "stopped":
            for v in self.run.variants.values():
                if v.status == "running":
                    v.status = "stopped"
        if self.writer:
            self.writer.finish()
