"""Jobs run in one worker from start to end: a shape sweep, a cold-start job.

:class:`OneWorkerJob` is what such kinds share: the folder's claim, the stop,
the watch on a silent worker, and the talk with the worker (started with the
kind's flags, sent the request once it said hello, every error and the end
read back) down to how the job ended. A kind adds its request and its own
events (:meth:`OneWorkerJob._event`). No Qt, no torch here.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from ..core import protocol
from ..core.config import BenchmarkConfig, ConfigError, ConfigProblem
from ..core.protocol import RunStatus
from ..launchers.supervisor import HelloTimer, WorkerLauncher, WorkerProcess
from ..results.records.sweep_record import COMPLETE, FAILED, RUNNING, STOPPED
from ..results.storage.owner_lock import RecordBusy, this_owner
from ..results.storage.record_folder import RecordFolder
from .job import StopSwitch
from .session import STOPPED_BY_USER, hello_timeout_s
from .worker_watch import WatchLimits, WorkerWatch

__all__ = ["OneWorkerJob", "OneWorkerOutcome", "checked_request"]


class _Request(Protocol):
    def problems(self) -> list[tuple[str, str]]: ...


RequestT = TypeVar("RequestT", bound=_Request)


def checked_request(request: RequestT, config: BenchmarkConfig, what: str, skip: tuple[str, ...] = ()) -> RequestT:
    """``request`` when it can run as ``what`` (``a shape sweep``); ConfigError listing every
    problem: the request's settings, ``config``'s (less the fields in ``skip``), no compiled variant."""
    problems = [ConfigProblem(f"--{f.replace('_', '-')}", m) for f, m in request.problems()]
    problems += [p for p in config.problems() if p.field not in skip]
    if not config.compiled_variants():
        problems.append(ConfigProblem("variants", f"{what} needs a compiled variant besides eager"))
    if problems:
        raise ConfigError(problems)
    return request


@dataclass
class OneWorkerOutcome:
    """How a one-worker job ended."""

    record: Any
    folder: Path
    stop_requested: bool = False
    #: the worker refused the configuration (or the job was refused): what is wrong
    refused: list[ConfigProblem] | None = None
    write_error: str | None = None

    @property
    def failed(self) -> bool:
        return bool(self.record.status == FAILED or any(p.error for p in self.record.points))


OutcomeT = TypeVar("OutcomeT", bound=OneWorkerOutcome)


def _set_environment(record: Any, env: dict[str, Any]) -> None:
    record.environment = env


class OneWorkerJob(Generic[OutcomeT]):
    """A job run in one worker (started by ``launcher``: this machine, SSH or Slurm).

    Its points go into the folder's record (saved at once) and ``on_point``
    gets a copy of the record after each. A subclass names its outcome class
    and the name of its stop thread, and writes ``_run`` with :meth:`_drive`.
    """

    outcome_class: type[OutcomeT]
    #: the name of the thread that stops the worker
    stop_thread = "job-stop"
    #: whether a refusal (the worker's or :meth:`_refusal`'s) is how the job ends, in words
    refusal_fails = False

    def __init__(
        self,
        folder: RecordFolder,
        launcher: WorkerLauncher | None = None,
        on_point: Callable[[Any], None] | None = None,
        on_log: Callable[[str], None] | None = None,
        hello_timeout: float | None = None,
        watch_limits: WatchLimits | None = None,
    ):
        self.folder = folder
        self.watch_limits = watch_limits
        #: what the worker watch warned of (a frozen or silent worker), in order
        self.watch_warnings: list[str] = []
        self.launcher = launcher or WorkerLauncher.local()
        self.on_point = on_point
        self.on_log = on_log
        self.hello_timeout = hello_timeout if hello_timeout is not None else hello_timeout_s()
        self.hello: protocol.HelloEvent | None = None
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
        with self._lock:  # a worker registered after the trip sees it and is stopped at once
            worker = self._worker
        if worker is not None:
            self._stopper(worker)

    def _stopper(self, worker: WorkerProcess) -> None:
        threading.Thread(
            target=lambda: self.launcher.stop_worker(worker, self.hello), name=self.stop_thread, daemon=True
        ).start()

    def _log(self, line: str) -> None:
        if self.on_log is not None:
            self.on_log(line)

    def _watch(self) -> WorkerWatch:
        """The watch on the job's worker: a silent worker is warned of in the log, then stopped."""

        def warn(message: str) -> None:
            self.watch_warnings.append(message)
            self._log(f"[compile studio] {message}")

        def stop(message: str) -> None:
            warn(message)
            self.request_stop(message)

        return WorkerWatch(
            warn=warn, stop=stop, recovered=lambda m: self._log(f"[compile studio] {m}"),
            limits=self.watch_limits,
        )

    def run(self) -> OutcomeT:
        """Run the job to its end (blocking) and return how it ended (refused while another
        live process runs its folder)."""
        try:
            self.folder.claim()
        except RecordBusy as exc:
            return self.outcome_class(
                record=self.folder.snapshot(), folder=self.folder.path, stop_requested=False,
                refused=[ConfigProblem(self.folder.what, str(exc))], write_error=None,
            )
        try:
            return self._run()
        finally:
            self.folder.release()

    def _run(self) -> OutcomeT:
        raise NotImplementedError

    def _outcome(self, final: Any, refused: list[ConfigProblem] | None) -> OutcomeT:
        return self.outcome_class(
            record=final, folder=self.folder.path, stop_requested=self._stop.requested,
            refused=refused, write_error=self.folder.write_error,
        )

    def _start(self, record: Any) -> None:
        """The record as the job starts: owned by this process, running, no points yet."""
        record.owner_pid, record.owner_host = this_owner()
        record.status = RUNNING
        record.message = ""
        record.points = []

    def _refusal(self, hello: protocol.HelloEvent) -> list[ConfigProblem] | None:
        """Why the job must not run on the worker that said ``hello`` (None: it may)."""
        return None

    def _event(self, event: object) -> None:
        """One of the worker's events that is not a hello, an error or the end (the kind's points)."""

    def _drive(self, request: Any, args: tuple[str, ...]) -> tuple[str, str, list[ConfigProblem] | None]:
        """Start a worker with ``args``, send it ``request`` once it said hello, and read it to
        its end: (the record's status, its message, the refusal or None)."""
        refused: list[ConfigProblem] | None = None
        status, message = FAILED, ""
        worker: WorkerProcess | None = None
        silent = threading.Event()
        timer: HelloTimer | None = None
        watch = self._watch()
        try:
            self.launcher.prepare(self._log)
            worker = WorkerProcess(on_log=self.on_log, launcher=self.launcher, args=args)

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
                    self.folder.update(functools.partial(_set_environment, env=dict(event.environment)))
                    refusal = self._refusal(self.hello)
                    if refusal is not None:
                        refused = refusal
                        worker.request_stop()
                        worker.close_stdin()
                    elif not self._stop.requested:
                        sent = dataclasses.replace(request, config=self.launcher.worker_config(request.config))
                        worker.send_config(sent.to_json())
                elif isinstance(event, protocol.ErrorEvent):
                    if event.is_config_error and event.problems:
                        refused = [ConfigProblem(p.get("field", "?"), p.get("message", "")) for p in event.problems]
                    errors.append(event.message)
                elif isinstance(event, protocol.DoneEvent):
                    done = event
                else:
                    self._event(event)
            worker.wait(30)
            if refused is not None and self.refusal_fails:
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
        return status, message, refused
