"""Cold-start jobs: each compiled variant's time to first result, cold, warm and carried, in fresh processes.

One worker (started by any launcher: this machine, SSH, Slurm) is started
with ``--coldstart`` and sent a :class:`protocol.ColdStartRequest`; it starts
a fresh process per measurement (``engine/coldstart.py``) and sends a
``coldstart_point`` for each, kept in the job's folder
(``results/records/coldstart_record.py``) as it comes.

Carrying the cache: with ``save_cache`` the worker also sends the Mega-Cache
artifacts of each variant's first cold start, written at the end to that file
with the torch, Triton, Python and device they are valid for
(``results/records/cache_file.py``). With ``load_cache`` (a file read and checked
before the job starts) the carried starts load that file's artifacts; once the
worker has said hello, the file is compared with the machine and configuration
it would run on and the job is refused, with the reasons, before anything is
timed. No Qt, no torch here.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import protocol
from ..core.config import BenchmarkConfig, ConfigProblem
from ..launchers.supervisor import WorkerLauncher
from ..results.records.cache_file import (
    CacheFile,
    cache_mismatches,
    environment_of,
    write_cache_file,
)
from ..results.records.coldstart_record import (
    ColdStartFolder,
    ColdStartPoint,
    ColdStartRecord,
    point_from_dict,
)
from ..results.records.sweep_record import FAILED
from .one_worker import OneWorkerJob, OneWorkerOutcome, checked_request
from .worker_watch import WatchLimits

__all__ = ["ColdStartOutcome", "ColdStartRun", "coldstart_request", "new_coldstart"]


def coldstart_request(
    config: BenchmarkConfig, rounds: int = 3, kinds: list[str] | None = None, calls: int = 20,
) -> protocol.ColdStartRequest:
    """The worker's request; ConfigError listing every problem (the config's included)."""
    request = protocol.ColdStartRequest(
        config=config.to_dict(), rounds=rounds, kinds=list(kinds or protocol.START_KINDS), calls=calls,
    )
    return checked_request(request, config, "a cold-start job")


def new_coldstart(request: protocol.ColdStartRequest, root: Path) -> ColdStartFolder:
    """A new cold-start folder under ``root`` (nothing run yet); raises OSError."""
    config = BenchmarkConfig.from_dict(request.config)
    record = ColdStartRecord(sweep_id="", created="", config=config, **request.settings())
    return ColdStartFolder.create(Path(root), config.slug(), record)


@dataclass
class ColdStartOutcome(OneWorkerOutcome):
    """How a cold-start job ended."""

    record: ColdStartRecord


def _add(record: ColdStartRecord, point: ColdStartPoint) -> None:
    record.points.append(point)


class ColdStartRun(OneWorkerJob[ColdStartOutcome]):
    """Runs a cold-start job in one worker; ``on_point`` gets a copy of the record after each point."""

    outcome_class = ColdStartOutcome
    stop_thread = "coldstart-stop"
    refusal_fails = True
    folder: ColdStartFolder
    on_point: Callable[[ColdStartRecord], None] | None

    def __init__(
        self,
        folder: ColdStartFolder,
        launcher: WorkerLauncher | None = None,
        on_point: Callable[[ColdStartRecord], None] | None = None,
        on_log: Callable[[str], None] | None = None,
        load_cache: tuple[Path, CacheFile] | None = None,
        save_cache: Path | None = None,
        hello_timeout: float | None = None,
        watch_limits: WatchLimits | None = None,
    ):
        super().__init__(folder, launcher, on_point, on_log, hello_timeout, watch_limits)
        self.load_cache = load_cache
        self.save_cache = save_cache
        self._artifacts: dict[str, protocol.CacheArtifactsEvent] = {}

    def fraction(self) -> float:
        record = self.folder.record
        per_round = 1 + len(record.config.compiled_variants()) * max(1, len(record.kinds))
        total = record.rounds * per_round
        return min(1.0, len(record.points) / total) if total else 1.0

    def _request(self) -> protocol.ColdStartRequest:
        record = self.folder.record
        request = protocol.ColdStartRequest(
            config=record.config.to_dict(), **record.settings(), save_artifacts=self.save_cache is not None,
        )
        if self.load_cache is not None:
            cache = self.load_cache[1]
            request.artifacts = {
                v: base64.b64encode(data).decode("ascii") for v, data in cache.blobs.items()
                if v in record.config.compiled_variants()
            }
        return request

    def _refusal(self, hello: protocol.HelloEvent) -> list[ConfigProblem] | None:
        if self.load_cache is None:
            return None
        path, cache = self.load_cache
        config = self.folder.record.config
        reasons = cache_mismatches(cache, environment_of(hello.environment, config.device), config)
        if not reasons:
            return None
        return [ConfigProblem("--load-cache", f"{path.name} will not help: {r}") for r in reasons]

    def _start(self, record: ColdStartRecord) -> None:
        super()._start(record)
        if self.load_cache is not None:
            record.loaded_cache = str(self.load_cache[0])

    def _event(self, event: object) -> None:
        if isinstance(event, protocol.ColdStartPointEvent):
            # a worker's output is input: checked with the loader's rules
            problems: list[str] = []
            point = point_from_dict(protocol.to_dict(event), problems)
            for problem in problems:
                self._log(f"[compile studio] a cold-start point from the worker: {problem}")
            if point is None:
                return
            snapshot = self.folder.update(functools.partial(_add, point=point))
            if self.on_point is not None:
                self.on_point(snapshot)
        elif isinstance(event, protocol.CacheArtifactsEvent):
            self._artifacts.setdefault(event.variant, event)

    def _run(self) -> ColdStartOutcome:
        request = self._request()
        self.folder.update(self._start)
        status, message, refused = self._drive(
            request, (protocol.COLDSTART_FLAG, protocol.NO_COMPILE_HOST_AHEAD_FLAG)
        )
        saved_note = self._save() if refused is None else None

        def finish(record: ColdStartRecord) -> None:
            record.status, record.message = status, message
            if saved_note is not None:
                record.saved_cache = saved_note[0]
                if saved_note[1]:
                    record.notes.append(saved_note[1])
            if status != FAILED and self.load_cache is None and "carried" in record.kinds \
                    and not any(p.start == "carried" and not p.error for p in record.points):
                record.notes.append("no carried start was measured")

        return self._outcome(self.folder.update(finish), refused)

    def _save(self) -> tuple[str | None, str] | None:
        """Write the artifacts to ``save_cache``: (its path or None, a note in words)."""
        if self.save_cache is None:
            return None
        blobs: dict[str, tuple[bytes, dict[str, int]]] = {}
        environment: dict[str, Any] = {}
        for name, event in self._artifacts.items():
            try:
                data = base64.b64decode(event.data.encode("ascii"), validate=True)
            except (ValueError, UnicodeEncodeError):
                continue
            if hashlib.sha256(data).hexdigest() != event.sha256:
                continue
            blobs[name] = (data, {str(k): int(n) for k, n in event.artifacts.items() if isinstance(n, int)})
            environment = environment or dict(event.environment)
        if not blobs:
            return None, f"no cache artifacts to save in {self.save_cache}: no cold start saved any"
        try:
            write_cache_file(self.save_cache, environment, self.folder.record.config.to_dict(), blobs,
                             created=self.folder.record.created)
        except OSError as exc:
            return None, f"the cache file {self.save_cache} could not be written: {exc.strerror or exc}"
        return str(self.save_cache), ""
