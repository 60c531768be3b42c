"""Cold-start jobs: each compiled variant's time to first result, cold, warm and carried, in fresh processes.

One worker (started by any launcher: this machine, SSH, Slurm) is started
with ``--coldstart`` and sent a :class:`protocol.ColdStartRequest`; it starts
a fresh process per measurement (``engine/coldstart.py``) and sends a
``coldstart_point`` for each, kept in the job's folder
(``results/coldstart_record.py``) as it comes.

Carrying the cache: with ``save_cache`` the worker also sends the Mega-Cache
artifacts of each variant's first cold start, written at the end to that file
with the torch, Triton, Python and device they are valid for
(``results/cache_file.py``). With ``load_cache`` (a file read and checked
before the job starts) the carried starts load that file's artifacts; once the
worker has said hello, the file is compared with the machine and configuration
it would run on and the job is refused, with the reasons, before anything is
timed. No Qt, no torch here.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import protocol
from ..core.config import BenchmarkConfig, ConfigError, ConfigProblem
from ..core.protocol import RunStatus
from ..launchers.supervisor import HelloTimer, WorkerLauncher, WorkerProcess
from ..results.cache_file import CacheFile, cache_mismatches, environment_of, write_cache_file
from ..results.coldstart_record import (
    ColdStartFolder,
    ColdStartPoint,
    ColdStartRecord,
    point_from_dict,
)
from ..results.owner_lock import RecordBusy, this_owner
from ..results.sweep_record import COMPLETE, FAILED, RUNNING, STOPPED
from .job import StopSwitch
from .session import STOPPED_BY_USER, hello_timeout_s
from .worker_watch import WatchLimits, WorkerWatch

__all__ = ["ColdStartOutcome", "ColdStartRun", "coldstart_request", "new_coldstart"]


def coldstart_request(
    config: BenchmarkConfig, rounds: int = 3, kinds: list[str] | None = None, calls: int = 20,
) -> protocol.ColdStartRequest:
    """The worker's request; ConfigError listing every problem (the config's included)."""
    request = protocol.ColdStartRequest(
        config=config.to_dict(), rounds=rounds, kinds=list(kinds or protocol.START_KINDS), calls=calls,
    )
    problems = [ConfigProblem(f"--{f}", m) for f, m in request.problems()]
    problems += config.problems()
    if not config.compiled_variants():
        problems.append(ConfigProblem("variants", "a cold-start job needs a compiled variant besides eager"))
    if problems:
        raise ConfigError(problems)
    return request


def new_coldstart(request: protocol.ColdStartRequest, root: Path) -> ColdStartFolder:
    """A new cold-start folder under ``root`` (nothing run yet); raises OSError."""
    config = BenchmarkConfig.from_dict(request.config)
    record = ColdStartRecord(sweep_id="", created="", config=config, **request.settings())
    return ColdStartFolder.create(Path(root), config.slug(), record)


@dataclass
class ColdStartOutcome:
    """How a cold-start job ended."""

    record: ColdStartRecord
    folder: Path
    stop_requested: bool = False
    refused: list[ConfigProblem] | None = None
    write_error: str | None = None

    @property
    def failed(self) -> bool:
        return self.record.status == FAILED or any(p.error for p in self.record.points)


def _add(record: ColdStartRecord, point: ColdStartPoint) -> None:
    record.points.append(point)


class ColdStartRun:
    """Runs a cold-start job in one worker; ``on_point`` gets a copy of the record after each point."""

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
        self.folder = folder
        self.launcher = launcher or WorkerLauncher.local()
        self.on_point = on_point
        self.on_log = on_log
        self.load_cache = load_cache
        self.save_cache = save_cache
        self.watch_limits = watch_limits
        self.hello_timeout = hello_timeout if hello_timeout is not None else hello_timeout_s()
        self.hello: protocol.HelloEvent | None = None
        self._artifacts: dict[str, protocol.CacheArtifactsEvent] = {}
        self._worker: WorkerProcess | None = None
        self._lock = threading.Lock()
        self._stop = StopSwitch(self._lock)

    @property
    def stop_requested(self) -> bool:
        return self._stop.requested

    def request_stop(self, message: str = STOPPED_BY_USER) -> None:
        """Stop the worker (its points so far are kept); returns at once."""
        if not self._stop.trip(message):
            return
        with self._lock:
            worker = self._worker
        if worker is not None:
            self._stopper(worker)

    def _stopper(self, worker: WorkerProcess) -> None:
        threading.Thread(
            target=lambda: self.launcher.stop_worker(worker, self.hello), name="coldstart-stop", daemon=True
        ).start()

    def _log(self, line: str) -> None:
        if self.on_log is not None:
            self.on_log(line)

    def fraction(self) -> float:
        record = self.folder.record
        per_round = 1 + len(record.config.compiled_variants()) * max(1, len(record.kinds))
        total = record.rounds * per_round
        return min(1.0, len(record.points) / total) if total else 1.0

    def run(self) -> ColdStartOutcome:
        """Run the job to its end (blocking); refused while another live process runs the folder."""
        try:
            self.folder.claim()
        except RecordBusy as exc:
            return ColdStartOutcome(self.folder.snapshot(), self.folder.path,
                                    refused=[ConfigProblem("cold-start job", str(exc))])
        try:
            return self._run()
        finally:
            self.folder.release()

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

    def _run(self) -> ColdStartOutcome:
        request = self._request()

        def start(record: ColdStartRecord) -> None:
            record.owner_pid, record.owner_host = this_owner()
            record.status, record.message, record.points = RUNNING, "", []
            if self.load_cache is not None:
                record.loaded_cache = str(self.load_cache[0])

        self.folder.update(start)
        refused: list[ConfigProblem] | None = None
        status, message = FAILED, ""
        worker: WorkerProcess | None = None
        silent = threading.Event()
        timer: HelloTimer | None = None
        watch = WorkerWatch(
            warn=lambda m: self._log(f"[compile studio] {m}"),
            stop=lambda m: (self._log(f"[compile studio] {m}"), self.request_stop(m)),
            recovered=lambda m: self._log(f"[compile studio] {m}"), limits=self.watch_limits,
        )
        try:
            self.launcher.prepare(self._log)
            worker = WorkerProcess(on_log=self.on_log, launcher=self.launcher,
                                   args=(protocol.COLDSTART_FLAG, protocol.NO_COMPILE_HOST_AHEAD_FLAG))

            def expire() -> None:
                silent.set()
                assert worker is not None
                worker.kill()

            timer = self.launcher.hello_timer(
                self.hello_timeout, expire, lambda state: self._log(f"[compile studio] {state}")
            )
            with self._lock:
                self._worker = worker
                stop_now = self._stop.requested
            if stop_now:
                self._stopper(worker)
            done: protocol.DoneEvent | None = None
            errors: list[str] = []
            watch.start()
            for event in worker.events():
                watch.saw(event)
                event = self.launcher.explain(event)
                if isinstance(event, protocol.HelloEvent):
                    timer.cancel()
                    self.hello = protocol.check_hello(event, f"the worker on {self.launcher.describe()}")
                    env = dict(event.environment)
                    self.folder.update(lambda r, env=env: setattr(r, "environment", env))
                    refused = self._refusal(self.hello)
                    if refused is not None:
                        worker.request_stop()
                        worker.close_stdin()
                    elif not self._stop.requested:
                        sent = dataclasses.replace(request, config=self.launcher.worker_config(request.config))
                        worker.send_config(sent.to_json())
                elif isinstance(event, protocol.ColdStartPointEvent):
                    # a worker's output is input: checked with the loader's rules
                    problems: list[str] = []
                    point = point_from_dict(protocol.to_dict(event), problems)
                    for problem in problems:
                        self._log(f"[compile studio] a cold-start point from the worker: {problem}")
                    if point is None:
                        continue
                    snapshot = self.folder.update(functools.partial(_add, point=point))
                    if self.on_point is not None:
                        self.on_point(snapshot)
                elif isinstance(event, protocol.CacheArtifactsEvent):
                    self._artifacts.setdefault(event.variant, event)
                elif isinstance(event, protocol.ErrorEvent):
                    if event.is_config_error and event.problems:
                        refused = [ConfigProblem(p.get("field", "?"), p.get("message", "")) for p in event.problems]
                    errors.append(event.message)
                elif isinstance(event, protocol.DoneEvent):
                    done = event
            worker.wait(30)
            if refused is not None:
                status, message = FAILED, "refused: " + "; ".join(p.message for p in refused)
            elif self._stop.requested:
                status, message = STOPPED, self._stop.message
            elif done is None:
                why = "did not say hello in time" if silent.is_set() else worker.exit_description()
                status, message = FAILED, f"the worker ended without finishing ({why})"
            elif done.status == RunStatus.COMPLETE:
                status, message = COMPLETE, ""
            elif done.status == RunStatus.STOPPED:
                status, message = STOPPED, done.reason or "stopped"
            else:
                status, message = FAILED, "; ".join(errors)[:1000] or (done.reason or "the worker failed")
        except (OSError, protocol.ProtocolMismatch) as exc:
            status, message = FAILED, str(exc)
        finally:
            watch.close()
            if timer is not None:
                timer.cancel()
            if worker is not None:
                worker.stop(grace_s=1.0, term_s=1.0)
            try:
                self.launcher.cleanup(self.hello)
            except Exception as exc:  # noqa: BLE001 - reported; the points are kept
                self._log(f"[compile studio] cleaning up after the worker failed: {exc}")
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

        final = self.folder.update(finish)
        return ColdStartOutcome(final, self.folder.path, self._stop.requested, refused, self.folder.write_error)

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
