"""Shape sweeps: one worker calls the same compiled variant at each batch size in turn.

Once per dynamic mode, recording the recompiles and compile time each batch
size causes (:class:`ShapeSweepRun`). No Qt, no torch here.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import protocol
from ..core.config import MAX_BATCH, BenchmarkConfig, ConfigError, ConfigProblem
from ..core.protocol import RunStatus
from ..launchers.supervisor import HelloTimer, WorkerLauncher, WorkerProcess
from ..results.owner_lock import RecordBusy, this_owner
from ..results.shape_record import ShapePoint, ShapeSweepRecord
from ..results.sweep_record import COMPLETE, FAILED, RUNNING, STOPPED
from ..results.sweep_store import ShapeSweepFolder
from .job import StopSwitch
from .session import (
    STOPPED_BY_USER,
    compile_host_flags,
    hello_timeout_s,
)
from .sweep_spec import SweepSpec
from .worker_watch import WatchLimits, WorkerWatch

# -- shape sweeps ------------------------------------------------------------------------------

#: Timed calls per point of a shape sweep (their median is the point's time).
SHAPE_REPEATS = 5


def parse_batches(values: str | None = None, range_text: str | None = None) -> list[int]:
    """The batch sizes of a shape sweep from ``--values`` or ``--range``; ConfigError saying what is wrong."""
    spec = SweepSpec.parse("batch_size", values, range_text)
    batches = [int(v) for v in spec.values]
    problems = []
    if len(batches) > protocol.MAX_SHAPE_BATCHES:
        problems.append(ConfigProblem("--values", f"at most {protocol.MAX_SHAPE_BATCHES} batch sizes"))
    if len(set(batches)) != len(batches):
        problems.append(ConfigProblem("--values", "a batch size is listed twice"))
    bad = [b for b in batches if not 1 <= b <= MAX_BATCH]
    if bad:
        problems.append(ConfigProblem("--values", f"batch {bad[0]} is outside 1–{MAX_BATCH:,}"))
    if problems:
        raise ConfigError(problems)
    return batches


def shape_request(
    config: BenchmarkConfig,
    batches: Sequence[int],
    modes: Sequence[str] = protocol.SHAPE_MODES,
    recompile_limit: int = 0,
    repeats: int = SHAPE_REPEATS,
) -> protocol.ShapeSweepRequest:
    """The worker's request for a shape sweep; ConfigError listing every problem (config included)."""
    request = protocol.ShapeSweepRequest(
        config=config.to_dict(), batches=list(batches), modes=list(modes),
        recompile_limit=recompile_limit, repeats=repeats,
    )
    problems = [ConfigProblem(f"--{f.replace('_', '-')}", m) for f, m in request.problems()]
    problems += [p for p in config.problems() if p.field != "batch_size"]
    if not config.compiled_variants():
        problems.append(ConfigProblem("variants", "a shape sweep needs a compiled variant besides eager"))
    if problems:
        raise ConfigError(problems)
    return request


def new_shape_sweep(request: protocol.ShapeSweepRequest, root: Path) -> ShapeSweepFolder:
    """A new shape-sweep folder under ``root`` (nothing run yet); raises OSError."""
    config = BenchmarkConfig.from_dict(request.config)
    record = ShapeSweepRecord(sweep_id="", created="", config=config, **request.settings())
    slug = re.sub(r"_b\d+_", "_", config.slug(), count=1)
    return ShapeSweepFolder.create(Path(root), slug, record)


def shape_request_of(record: ShapeSweepRecord) -> protocol.ShapeSweepRequest:
    """The request a saved shape sweep was made from."""
    return protocol.ShapeSweepRequest(config=record.config.to_dict(), **record.settings())


@dataclass
class ShapeSweepOutcome:
    """How a shape sweep ended."""

    record: ShapeSweepRecord
    folder: Path
    stop_requested: bool = False
    #: the worker refused the configuration: what is wrong with it
    refused: list[ConfigProblem] | None = None
    write_error: str | None = None

    @property
    def failed(self) -> bool:
        return self.record.status == FAILED or any(p.error for p in self.record.points)


def _set_environment(record: ShapeSweepRecord, env: dict[str, Any]) -> None:
    record.environment = env


def _add_point(record: ShapeSweepRecord, point: ShapePoint) -> None:
    record.add(point)


class ShapeSweepRun:
    """Runs a shape sweep in one worker (started by ``launcher``: this machine, SSH or Slurm).

    The worker is started with ``--shape-sweep`` and sent the request; every
    ``shape_point`` it sends is added to the folder's record (saved at once)
    and passed to ``on_point`` with a copy of the record. No Qt, no torch.
    """

    def __init__(
        self,
        folder: ShapeSweepFolder,
        launcher: WorkerLauncher | None = None,
        on_point: Callable[[ShapeSweepRecord], None] | None = None,
        on_log: Callable[[str], None] | None = None,
        hello_timeout: float | None = None,
        watch_limits: WatchLimits | None = None,
        pin: Callable[[BenchmarkConfig], BenchmarkConfig] | None = None,
    ):
        self.folder = folder
        #: the configuration as it runs (an Agreement's apply: the agreed copies of its code)
        self.pin = pin
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
            target=lambda: self.launcher.stop_worker(worker, self.hello), name="shape-sweep-stop", daemon=True
        ).start()

    def _log(self, line: str) -> None:
        if self.on_log is not None:
            self.on_log(line)

    def _watch(self) -> WorkerWatch:
        """The watch on the sweep's worker: a silent worker is warned of in the log, then stopped."""

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

    def fraction(self) -> float:
        record = self.folder.record
        total = len(record.batches) * (1 + len(record.modes) * len(record.config.compiled_variants()))
        return min(1.0, len(record.points) / total) if total else 1.0

    def run(self) -> ShapeSweepOutcome:
        """Run the sweep to its end (blocking) and return how it ended (refused while another
        live process runs it)."""
        try:
            self.folder.claim()
        except RecordBusy as exc:
            return ShapeSweepOutcome(
                record=self.folder.snapshot(), folder=self.folder.path, stop_requested=False,
                refused=[ConfigProblem("shape sweep", str(exc))], write_error=None,
            )
        try:
            return self._run()
        finally:
            self.folder.release()

    def _run(self) -> ShapeSweepOutcome:
        request = shape_request_of(self.folder.record)
        if self.pin is not None:
            request.config = self.pin(BenchmarkConfig.from_dict(request.config)).to_dict()

        def start(record: ShapeSweepRecord) -> None:
            record.owner_pid, record.owner_host = this_owner()
            record.status = RUNNING
            record.message = ""
            record.points = []

        self.folder.update(start)
        refused: list[ConfigProblem] | None = None
        status, message = FAILED, ""
        worker: WorkerProcess | None = None
        silent = threading.Event()
        timer: HelloTimer | None = None
        watch = self._watch()
        try:
            self.launcher.prepare(self._log)
            worker = WorkerProcess(
                on_log=self.on_log, launcher=self.launcher,
                args=(protocol.SHAPE_SWEEP_FLAG, *compile_host_flags(None)),
            )

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
                    if not self._stop.requested:
                        sent = dataclasses.replace(request, config=self.launcher.worker_config(request.config))
                        worker.send_config(sent.to_json())
                elif isinstance(event, protocol.ShapePointEvent):
                    snapshot = self.folder.update(functools.partial(_add_point, point=ShapePoint.from_event(event)))
                    if self.on_point is not None:
                        self.on_point(snapshot)
                elif isinstance(event, protocol.ErrorEvent):
                    if event.is_config_error and event.problems:
                        refused = [ConfigProblem(p.get("field", "?"), p.get("message", "")) for p in event.problems]
                    errors.append(event.message)
                elif isinstance(event, protocol.DoneEvent):
                    done = event
            worker.wait(30)
            if self._stop.requested:
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

        def finish(record: ShapeSweepRecord) -> None:
            record.status = status
            record.message = message

        final = self.folder.update(finish)
        return ShapeSweepOutcome(
            record=final, folder=self.folder.path, stop_requested=self._stop.requested,
            refused=refused, write_error=self.folder.write_error,
        )
