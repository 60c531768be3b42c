"""One benchmark run, supervised: the worker, the recorder, progress and the outcome.

:class:`RunSession` is the one place a run is driven from, for the window
(through ``jobs.run_job.RunJob`` on the thread every job runs on, ``gui.job_thread``) and
the CLI alike. It has no Qt and no torch: it starts the worker through a
:class:`~compile_studio.launchers.supervisor.WorkerLauncher`, checks its protocol
version, feeds every event to a :class:`~compile_studio.results.storage.recorder.RunRecorder`
(the run folder) and to :class:`Progress`, and decides how the run ended.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import os
import shutil
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import affinity, protocol
from ..core.config import BenchmarkConfig, ConfigProblem
from ..core.env_vars import warn_ignored
from ..core.model_specs import factory_file
from ..core.protocol import ErrorKind, RunStatus, VariantStatus
from ..launchers.standby_worker import StandbyWorker
from ..launchers.supervisor import WorkerLauncher, WorkerProcess, WorkerStartFailed
from ..results.records.run_result import RunResult
from ..results.storage.recorder import RunRecorder
from ..results.storage.store import RunStore
from .progress import Progress
from .turn_log import TurnLog
from .worker_watch import WatchLimits, WorkerWatch

STOPPED_BY_USER = "stopped by the user"
#: How long a worker may take to say ``hello`` (a cold remote start imports torch
#: over a network file system); ``COMPILE_STUDIO_HELLO_TIMEOUT_S`` overrides it.
HELLO_TIMEOUT_S = 600.0
HELLO_TIMEOUT_ENV = "COMPILE_STUDIO_HELLO_TIMEOUT_S"


def hello_timeout_s() -> float:
    """The ``hello`` timeout: from the environment when set to a positive number."""
    text = os.environ.get(HELLO_TIMEOUT_ENV, "")
    try:
        value = float(text[:20]) if text else HELLO_TIMEOUT_S
    except ValueError:
        value = -1.0
    if 0 < value < 1e7:
        return value
    warn_ignored(HELLO_TIMEOUT_ENV, text, f"not a number of seconds; using {HELLO_TIMEOUT_S:g}")
    return HELLO_TIMEOUT_S


def _with_env(launcher: WorkerLauncher, extra: dict[str, str]) -> WorkerLauncher:
    """``launcher`` with ``extra`` added to the environment its worker gets."""
    env = {**(launcher.env if launcher.env is not None else os.environ), **extra}
    return dataclasses.replace(launcher, env=env)


def worker_launcher(launcher: WorkerLauncher, split: affinity.CoreSplit | None) -> WorkerLauncher:
    """The launcher a run starts its worker with: ``launcher`` plus the core split's environment."""
    if split is None:
        return launcher
    return _with_env(launcher, split.worker_env())


def compile_hosts_wanted(config: BenchmarkConfig | None) -> int:
    """How many compile processes a worker for a run of ``config`` starts ahead: one per
    compiled variant when their first calls are timed in fresh processes (up to
    protocol.MAX_COMPILE_HOSTS_AHEAD), so they import side by side with the worker instead
    of after it; none when the run will not use one (all eager, first calls timed in the
    run, or ``config`` None: a shape sweep), which saves ~3 CPU-s and a process's memory."""
    if config is None or config.compile_timing != "isolated":
        return 0
    return min(len(config.compiled_variants()), protocol.MAX_COMPILE_HOSTS_AHEAD)


def compile_host_flags(config: BenchmarkConfig | None) -> tuple[str, ...]:
    """The worker flags that tell a new worker (on this machine or a target) how many compile
    processes to start ahead (:func:`compile_hosts_wanted`)."""
    return protocol.compile_hosts_flags(compile_hosts_wanted(config))


def standby_launcher(launcher: WorkerLauncher | None = None) -> WorkerLauncher:
    """How a run through ``launcher`` (default: this machine's) would start its worker now.

    A worker started ahead is started with it, so that a run can use it
    only when it would have started the very same process.
    """
    launcher = launcher or WorkerLauncher.local()
    return worker_launcher(launcher, affinity.plan() if launcher.runs_here() else None)


def fresh_worker_reason(
    config: BenchmarkConfig, launcher: WorkerLauncher, standby: StandbyWorker
) -> str | None:
    """Why a run of ``config`` through ``launcher`` cannot use ``standby`` (None: it can).

    A worker started ahead has imported torch and said hello, nothing else:
    the config (backend modules included: the worker imports them after its
    hello either way) reaches it as it would reach a new one. Only what is
    fixed when the process starts needs a new one: its environment and
    command (another target, a prefix, a core split that differs), and a cold
    compile cache, which is a process of its own with empty caches. The
    default ``compile_timing="isolated"`` is no reason: each first call is
    then timed in a child process the worker starts itself.
    """
    if config.compile_cache == "cold":
        return "a cold compile cache needs a new process"
    if not launcher.runs_here():
        return "the run is not on this machine"
    if not standby.usable:
        return "the worker started ahead has ended"
    if not standby.matches(standby_launcher(launcher)):
        return "the worker's environment changed since it was started"
    return None


@dataclass
class RunOutcome:
    """How a session ended and what it kept."""

    run: RunResult
    folder: Path | None
    #: the worker refused the configuration: what is wrong with it
    config_problems: list[ConfigProblem] | None = None
    #: the last lines the worker wrote to stderr (shown after a crash)
    stderr_tail: list[str] = field(default_factory=list)
    stop_requested: bool = False
    #: the run folder could not be written (from then on the run was kept in memory only)
    write_error: str | None = None

    @property
    def status(self) -> RunStatus:
        return RunStatus.parse(self.run.status, RunStatus.INCOMPLETE)

    @property
    def any_failed(self) -> bool:
        return self.status == RunStatus.FAILED or any(
            v.status == VariantStatus.FAILED for v in self.run.variants.values()
        )



def config_problems(event: protocol.ErrorEvent) -> list[ConfigProblem]:
    """What the worker found wrong with the configuration (its message when it named no field)."""
    return [
        ConfigProblem(p.get("field", "config"), p.get("message", ""))
        for p in event.problems or []
    ] or [ConfigProblem("config", event.message)]


@dataclass
class _RunState:
    """What one :meth:`RunSession.run` learns as it goes (read when it closes the run)."""

    recorder: RunRecorder
    watch: WorkerWatch
    worker: WorkerProcess | None = None
    #: the worker refused the configuration: what is wrong with it
    problems: list[ConfigProblem] | None = None
    #: the worker said ``done``
    saw_done: bool = False
    #: the worker's protocol version does not match (the run failed on its hello)
    protocol_refused: bool = False
    #: the run folder could not be written (the run stopped, kept in memory)
    write_failed: bool = False
    #: no worker process could be started
    start_failed: bool = False
    #: set when the worker said no hello in time and was killed
    silent: threading.Event = field(default_factory=threading.Event)
    hello_timer: Any = None


class RunSession:
    """Drives one benchmark run from start to outcome (no Qt, no torch).

    ``on_event`` receives every protocol event, in order, from the thread
    that calls :meth:`run` — and the session's own ``error`` events (a crashed
    worker, a protocol mismatch, an unwritable folder). ``on_log`` receives
    the worker's stderr lines from a reader thread. The run folder is created
    at construction (so its name is the run id from the start); that raises
    OSError when the store cannot be written.
    """

    def __init__(
        self,
        config: BenchmarkConfig,
        store: RunStore | None = None,
        launcher: WorkerLauncher | None = None,
        on_event: Callable[[protocol.Event], None] | None = None,
        on_log: Callable[[str], None] | None = None,
        hello_timeout: float | None = None,
        standby: StandbyWorker | None = None,
        watch_limits: WatchLimits | None = None,
        turn_taker: Callable[[protocol.TurnEvent], None] | None = None,
    ):
        self.config = config
        #: takes the worker's pauses (a window draws, then calls :meth:`answer_turn`); None:
        #: every pause is answered at once, as it is for a worker on another machine
        self.turn_taker = turn_taker
        #: the timed calls and the window's paints: which calls met a repaint
        self.turn_log = TurnLog()
        #: when a quiet worker is warned about and stopped (see :mod:`compile_studio.jobs.worker_watch`)
        self.watch_limits = watch_limits or WatchLimits()
        #: warnings the session itself raised about the worker (kept with the run)
        self.watch_warnings: list[str] = []
        #: a worker started ahead and taken for this run (see :func:`fresh_worker_reason`)
        self.standby = standby
        self.hello_timeout = hello_timeout if hello_timeout is not None else hello_timeout_s()
        self.folder: Path | None = (
            store.new_run_folder(config.slug(read_factory=True)) if store is not None else None
        )
        self.run_id = self.folder.name if self.folder is not None else ""
        self.launcher = launcher or WorkerLauncher.local()
        self.progress = Progress(config)
        self.on_event = on_event
        self.on_log = on_log
        self.recorder: RunRecorder | None = None
        self.outcome: RunOutcome | None = None
        self.worker_pid: int | None = None
        #: whether the run used a worker started ahead (recorded as ``measurement.worker_prestarted``)
        self.worker_prestarted = False
        #: the worker's hello (remote launchers stop and clean up by its pid group / job)
        self.hello: protocol.HelloEvent | None = None
        self._worker: WorkerProcess | None = None
        self._worker_ready = threading.Event()
        self._stop_requested = threading.Event()
        self._stop_message = STOPPED_BY_USER
        self._cut_short_message: str | None = None
        self._stopper: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- control (any thread) ---------------------------------------------------------------
    @property
    def stop_requested(self) -> bool:
        return self._stop_requested.is_set()

    def answer_turn(self, block: int, paints: list[tuple[int, int]] | None = None) -> None:
        """Answer the worker's pause before ``block`` (any thread); ``paints``: the window's
        paint intervals since its last answer (monotonic ns)."""
        if paints is not None:
            self.turn_log.add_paints(paints)
        worker = self._worker
        if worker is not None:
            worker.answer_turn(block)

    def _take_turn(self, worker: WorkerProcess, event: protocol.TurnEvent) -> None:
        """A pause of the worker: the turn taker's, or answered at once."""
        if self.turn_taker is None or not self.launcher.runs_here():
            if event.state == "pause":
                worker.answer_turn(event.block)
            return
        self.turn_taker(event)

    def _record_turns(self, recorder: RunRecorder, variant: str, worker_turns: dict[str, Any]) -> None:
        """``variant``'s pauses and the calls that met a repaint, in ``measurement.turns``."""
        if not isinstance(worker_turns, dict):
            return
        if not worker_turns:
            # no pause of its own: its timed calls ran in blocks another variant opened (rounds
            # alternate within a block); they are still counted against the repaints
            if not self.turn_log.overlapped(variant)[1]:
                return
            worker_turns = {"blocks": 0}
        turns = recorder.run.measurement.setdefault("turns", {})
        turns[variant] = self.turn_log.record(variant, worker_turns)

    def request_stop(self, message: str = STOPPED_BY_USER) -> None:
        """Stop the run (recorded as ``stopped`` with ``message``); returns at once.

        The worker gets ``stop``, then SIGTERM, then SIGKILL of its process
        group, from a background thread; it is always reaped.
        """
        with self._lock:
            if self._stop_requested.is_set():
                return
            self._stop_message = message
            self._stop_requested.set()
            worker = self._worker if self._worker_ready.is_set() else None
        if worker is not None:
            self._start_stopper(worker)

    def cut_short(self, message: str) -> None:
        """End the run because its supervisor goes away: left ``incomplete``, saying why."""
        self._cut_short_message = message
        self.request_stop(message)

    def _start_stopper(self, worker: WorkerProcess) -> None:
        self._stopper = threading.Thread(
            target=lambda: self.launcher.stop_worker(worker, self.hello),
            name="compile-studio-stop", daemon=True,
        )
        self._stopper.start()

    # -- the run ---------------------------------------------------------------------------
    def _keep_factory(self, recorder: RunRecorder) -> None:
        """A custom model's factory file: a copy in the run folder and its sha256 in run.json.

        The file is copied as bytes, never imported here: its code runs in the worker only.
        """
        if self.config.model != "custom":
            return
        path = factory_file(self.config.factory)
        if path is None or not path.is_file():
            return
        try:
            data = path.read_bytes()
        except OSError:
            return
        recorder.run.measurement["factory_file"] = str(path.resolve())
        recorder.run.measurement["factory_sha256"] = hashlib.sha256(data).hexdigest()
        if recorder.folder is not None:
            try:
                (recorder.folder / "factory").mkdir(exist_ok=True)
                (recorder.folder / "factory" / path.name).write_bytes(data)
                recorder.run.measurement["factory_copy"] = f"factory/{path.name}"
            except OSError:
                pass

    @staticmethod
    def _note_load(recorder: RunRecorder, key: str) -> None:
        """The machine's load (other programs, CPU use) kept with the run, where readable."""
        try:
            from ..results.analysis.machine_load import machine_load

            recorder.run.measurement[key] = machine_load().to_dict()
        except Exception:  # noqa: BLE001 - psutil missing or /proc unreadable: no reading
            return

    def _emit(self, event: protocol.Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def _log(self, line: str) -> None:
        if self.on_log is not None:
            self.on_log(line)

    def _cleanup_launcher(self) -> None:
        """The launcher leaves nothing of the worker running where it ran (and frees its GPU)."""
        try:
            self.launcher.cleanup(self.hello)
        except Exception as exc:  # noqa: BLE001 - reported; the run keeps what it has
            self._log(f"[compile studio] cleaning up after the worker failed: {exc}")

    def _on_queued(self, state: str) -> None:
        """The worker waits in a batch queue: its own phase, with the reason."""
        self.progress.phase = state
        self._log(f"[compile studio] {state}")
        self._emit(protocol.PhaseEvent(variant=None, phase=protocol.Phase.QUEUED, detail=state))

    def _watch(self) -> WorkerWatch:
        """The watch on this run's worker: warnings go to ``on_event``, a passed limit stops the run."""

        def recovered(message: str) -> None:
            self._log(f"[compile studio] {message}")
            self._emit(protocol.WarningEvent(message=message))

        def warn(message: str) -> None:
            self.watch_warnings.append(message)
            recovered(message)

        def stop(message: str) -> None:
            warn(message)
            self.cut_short(message)

        return WorkerWatch(
            warn=warn, stop=stop, recovered=recovered, limits=self.watch_limits,
            iterations=self.config.iterations,
        )

    def _session_error(self, kind: ErrorKind, message: str) -> None:
        self._emit(protocol.ErrorEvent(kind=kind, message=message))

    def _start_hello_timer(self, worker: WorkerProcess, silent: threading.Event) -> Any:
        """Kill a worker that says nothing for ``hello_timeout`` seconds (sets ``silent``).

        A worker waiting in a batch queue gets the time once its job runs; the
        wait is reported as the run-level phase ``queued`` (from a watcher thread).
        """

        def expire() -> None:
            silent.set()
            worker.kill()

        return self.launcher.hello_timer(self.hello_timeout, expire, self._on_queued)

    def _register(
        self, worker: WorkerProcess, config: dict[str, Any] | str | None = None
    ) -> bool:
        """The run's worker from now on (a stop reaches it); returns whether a stop was asked already.

        ``config`` is sent under the same lock as a stop checks the worker: the
        ``stop`` line can never reach the worker ahead of its configuration.
        """
        self.worker_pid = worker.pid
        with self._lock:
            self._worker = worker
            self._worker_ready.set()
            stop_now = self._stop_requested.is_set()
            if config is not None and not stop_now:
                worker.send_config(config)
            return stop_now

    def _prestarted_worker(
        self, launcher: WorkerLauncher
    ) -> tuple[WorkerProcess | None, protocol.HelloEvent | None]:
        """The worker started ahead and its hello (waited for if still coming); (None, None): start one.

        A worker started ahead that ended before it could be used is put aside
        quietly (a line in the log): the run starts a new one, as it would have.
        """
        standby, self.standby = self.standby, None
        worker = standby.worker if standby is not None else None
        if standby is None or worker is None:
            return None, None
        if self.config.compile_cache == "cold" or not standby.matches(launcher):
            worker.kill()
            worker.stop(grace_s=0.5, term_s=0.5)
            return None, None
        self._register(worker)
        hello = standby.wait_hello(self.on_log)
        if self._stop_requested.is_set():
            return worker, hello
        if hello is None or worker.proc.poll() is not None:
            worker.kill()
            worker.stop(grace_s=0.5, term_s=0.5)
            with self._lock:
                self._worker = None
                self._worker_ready.clear()
            self._log(
                "[compile studio] the worker started ahead had ended "
                f"({standby.ended_because or worker.exit_description()}); starting a new one"
            )
            return None, None
        return worker, hello

    def run(self) -> RunOutcome:
        """Run the benchmark to its end (blocking) and return how it ended."""
        recorder = self._open_recorder()
        cores = contextlib.ExitStack()
        split = cores.enter_context(
            affinity.supervising(affinity.plan() if self.launcher.runs_here() else None)
        )
        if split is not None:
            recorder.run.measurement["core_split"] = split.describe()
        state = _RunState(recorder=recorder, watch=self._watch())
        try:
            worker, first = self._start_worker(state, worker_launcher(self.launcher, split))
            events = worker.events() if first is None else itertools.chain([first], worker.events())
            self._read_events(state, worker, events)
        except WorkerStartFailed as exc:
            state.start_failed = state.worker is None
            self._fail(recorder, f"cannot start the worker process: {exc}")
        except OSError as exc:
            self._fail(recorder, f"cannot start the worker process: {exc}")
        except Exception as exc:  # noqa: BLE001 - reported; the run keeps what it has
            self._fail(recorder, f"{type(exc).__name__}: {exc}")
        finally:
            self._close(state)
            cores.close()
        self.outcome = self._outcome(state)
        return self.outcome

    def _open_recorder(self) -> RunRecorder:
        """The run's recorder (in memory only when its folder cannot be written), load and factory noted."""
        try:
            recorder = RunRecorder(self.config, self.folder)
        except OSError as exc:
            recorder = RunRecorder(self.config, None)
            self._session_error(ErrorKind.INTERNAL, f"cannot write the run folder: {exc}")
        if self.run_id:
            recorder.run.run_id = self.run_id
        self.recorder = recorder
        self._note_load(recorder, "load_before")
        self._keep_factory(recorder)
        return recorder

    def _fail(self, recorder: RunRecorder, message: str, kind: ErrorKind = ErrorKind.INTERNAL) -> None:
        """Say ``message`` as the session's error and fail the run with it."""
        self._session_error(kind, message)
        recorder.fail(message)

    def _start_worker(
        self, state: _RunState, launcher: WorkerLauncher
    ) -> tuple[WorkerProcess, protocol.HelloEvent | None]:
        """The run's worker (one started ahead, else a new one), sent its config, and the
        hello already read from a worker started ahead (None: its events bring it)."""
        measurement = state.recorder.run.measurement
        measurement["worker_prestarted"] = False
        self.launcher.prepare(self._log)
        worker, first = self._prestarted_worker(launcher)
        if worker is not None:
            state.worker = worker
            self.worker_prestarted = True
            measurement["worker_prestarted"] = True
        else:
            worker = state.worker = WorkerProcess(
                on_log=self.on_log, launcher=launcher, args=compile_host_flags(self.config)
            )
            state.hello_timer = self._start_hello_timer(worker, state.silent)
        sent = self.launcher.worker_config(self.config.to_dict())
        if self._register(worker, config=sent):
            self._start_stopper(worker)
        return worker, first

    def _read_events(
        self, state: _RunState, worker: WorkerProcess, events: Iterable[protocol.Event]
    ) -> None:
        """Every event of the worker, watched, recorded and passed on, until its end or a refusal."""
        recorder = state.recorder
        state.watch.start()
        for event in events:
            state.watch.saw(event)
            if isinstance(event, protocol.HeartbeatEvent):
                continue
            event = self.launcher.explain(event)
            if isinstance(event, protocol.TurnEvent):
                self._take_turn(worker, event)
                self._emit(event)
                continue
            if isinstance(event, protocol.SamplesEvent) and self.launcher.runs_here():
                self.turn_log.add_samples(event)
            elif isinstance(event, protocol.VariantDoneEvent):
                self._record_turns(recorder, event.variant, event.turns)
            if isinstance(event, protocol.HelloEvent):
                if not self._accept_hello(state, event):
                    break
            elif isinstance(event, protocol.DoneEvent):
                state.saw_done = True
            elif isinstance(event, protocol.ErrorEvent) and event.is_config_error:
                state.problems = config_problems(event)
            recorder.handle(event)
            self.progress.update(event)
            self._emit(event)
            if recorder.write_error is not None and not state.write_failed:
                state.write_failed = True
                message = (
                    f"{recorder.write_error}: the run stops; everything measured so far "
                    "is kept in memory"
                )
                self._fail(recorder, message, ErrorKind.WRITE_FAILED)
                break

    def _accept_hello(self, state: _RunState, event: protocol.HelloEvent) -> bool:
        """Take the worker's hello; False (the run fails) when its protocol does not match."""
        if state.hello_timer is not None:
            state.hello_timer.cancel()
        self.hello = event
        try:
            where = self.launcher.describe()
            where = "the worker" if where == "this machine" else f"the worker on {where}"
            protocol.check_hello(event, where)
        except protocol.ProtocolMismatch as exc:
            state.protocol_refused = True
            self._fail(state.recorder, str(exc), ErrorKind.PROTOCOL)
            return False
        return True

    def _close(self, state: _RunState) -> None:
        """After the events: the worker stopped and reaped, how the run ended said, the run saved."""
        recorder, worker = state.recorder, state.worker
        state.watch.close()
        if state.hello_timer is not None:
            state.hello_timer.cancel()
        if self.watch_warnings:
            recorder.run.measurement["worker_watch"] = list(self.watch_warnings)
        if worker is not None and worker.refused:
            # events the worker sent that were not kept: the run says so (see launchers.event_checks)
            recorder.run.measurement["worker_refused"] = {
                "events": worker.refused, "first": list(worker.refused_why),
            }
        self._close_standby()
        if worker is not None:
            self._stop_worker(recorder, worker)
            if not state.saw_done and not state.protocol_refused and not state.write_failed:
                self._say_why_it_ended(recorder, worker, state.silent.is_set())
        else:
            self._cleanup_launcher()
        if self._cut_short_message is not None:
            recorder.cut_short(self._cut_short_message)
        for name, kept in dict(recorder.run.measurement.get("turns") or {}).items():
            self._record_turns(recorder, name, kept)  # paints that came after its end
        self._note_load(recorder, "load_after")
        if recorder.finished:
            recorder.save()  # ended by the worker's done: what was noted since is kept too
        recorder.finish()

    def _close_standby(self) -> None:
        """A worker started ahead that the run never reached the point of using (it failed first)."""
        if self.standby is None:
            return
        self.standby.close()
        if self.standby.worker is not None:
            self.standby.worker.stop(grace_s=0.5, term_s=0.5)
        self.standby = None

    def _stop_worker(self, recorder: RunRecorder, worker: WorkerProcess) -> None:
        """The worker stopped and reaped, its output past the caps noted, its launcher cleaned up."""
        if self._stopper is not None:
            self._stopper.join()
        worker.stop()
        cut = worker.output_cut()
        if cut:
            # lines the worker sent past the caps: how many, and the bytes not read
            recorder.run.measurement["worker_output_cut"] = cut
        self._cleanup_launcher()

    def _say_why_it_ended(self, recorder: RunRecorder, worker: WorkerProcess, silent: bool) -> None:
        """A worker that ended without ``done``: garbage, a lost connection, silence, a stop or a crash."""
        lost = self.launcher.lost_connection(worker)
        if worker.garbage_stop is not None:
            recorder.fail(worker.garbage_stop)  # said as a protocol error already
        elif lost is not None and not silent:
            self._session_error(ErrorKind.CRASHED, lost)
            recorder.stop(lost)
            recorder.cut_short(lost)
        elif silent:
            tail = [ln for ln in worker.stderr_tail[-3:] if ln.strip()]
            message = (
                f"the worker did not say hello within {self.hello_timeout:.0f} s, "
                "so Compile Studio stopped it" + (": " + " | ".join(tail) if tail else "")
            )
            self._fail(recorder, message, ErrorKind.CRASHED)
        elif self._stop_requested.is_set():
            recorder.stop(self._stop_message)
        else:
            self._fail(recorder, f"the worker process died ({worker.exit_description()})", ErrorKind.CRASHED)

    def _outcome(self, state: _RunState) -> RunOutcome:
        """How the run ended; a run where nothing ran leaves no folder behind."""
        recorder, worker, problems = state.recorder, state.worker, state.problems
        folder = recorder.folder
        config_refused = problems is not None and not any(
            len(v.samples.wall_ms) for v in recorder.run.variants.values()
        )
        if (state.start_failed or config_refused) and folder is not None:
            # nothing ran (the worker could not start, or refused the configuration before any
            # work): leave no folder behind that looks like a run
            shutil.rmtree(folder, ignore_errors=True)
            folder = None
        return RunOutcome(
            write_error=recorder.write_error,
            run=recorder.run,
            folder=folder,
            config_problems=problems,
            stderr_tail=list(worker.stderr_tail[-10:]) if worker is not None else [],
            stop_requested=self._stop_requested.is_set(),
        )
