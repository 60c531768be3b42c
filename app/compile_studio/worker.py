"""The worker process: ``python -m compile_studio.worker``.

Speaks the protocol of :mod:`compile_studio.core.protocol`: says ``hello``, reads
one JSON config line from stdin, runs it and streams events on stdout. The
line ``stop`` on stdin, SIGTERM, or the end of stdin (the parent is gone) end
it within about two seconds with the samples so far flushed and a ``done``
saying ``stopped``. Anything else printed (compiler logs) goes to stderr.

``--hello`` prints the hello event and exits (the GUI's start-up probe); it and
the worker's other one-shot modes are named by their flags in :data:`ONE_SHOT_MODES`.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, NamedTuple, NoReturn

from .core import affinity, protocol
from .core.config import BenchmarkConfig, ConfigError, ConfigProblem, EnvironmentInfo
from .engine.compile_host import (
    HOST_FLAG,
    CompileHost,
    CompileHostError,
    host_main,
    time_first_call,
)
from .engine.sink import BatchingSink

if TYPE_CHECKING:
    from .engine.turns import TurnGate

#: How long a stop waits for the timed loop to return before the worker
#: flushes what it has and exits on its own (e.g. in the middle of a compile).
STOP_GRACE_S = 1.0
MEMORY_LIMIT_ENV = "COMPILE_STUDIO_WORKER_MEMORY_LIMIT"


class StreamSink(BatchingSink):
    """Writes protocol lines to the supervisor, samples batched (≤ every 50 ms)."""

    def __init__(self, out: IO[str]):
        super().__init__()
        self._out = out

    def _write(self, event: protocol.Event) -> None:
        if self.closed:
            return
        try:
            self._out.write(protocol.encode(event) + "\n")
            self._out.flush()
        except (BrokenPipeError, ValueError, OSError):
            # the supervisor is gone: nobody to report to
            os._exit(0)


def _protocol_stdout() -> IO[str]:
    """A private handle on stdout for protocol lines; fd 1 then points to stderr."""
    sys.stdout.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


def hello_event() -> protocol.HelloEvent:
    import platform

    from . import __version__
    from .engine.environment import probe

    environment = probe()
    host = platform.node()
    environment["host"] = host
    job, step = os.environ.get("SLURM_JOB_ID"), os.environ.get("SLURM_STEP_ID")
    if job:
        environment["slurm_job_id"] = job
    return protocol.HelloEvent(
        protocol=protocol.PROTOCOL_VERSION,
        app_version=__version__,
        pid=os.getpid(),
        environment=environment,
        pgid=os.getpgid(0),
        host=host,
        slurm_job_id=job,
        slurm_step_id=step,
    )


def _apply_memory_limit() -> None:
    """Test hook: cap this process's address space (simulates a small machine)."""
    extra = os.environ.get(MEMORY_LIMIT_ENV)
    if not extra:
        return
    if not extra.strip().isdigit() or len(extra.strip()) > 15:
        from .core.env_vars import warn_ignored

        warn_ignored(MEMORY_LIMIT_ENV, extra, "not a number of bytes; no limit")
        return
    import resource

    with open("/proc/self/statm") as fh:
        vm_pages = int(fh.read().split()[0])
    limit = vm_pages * os.sysconf("SC_PAGE_SIZE") + int(extra)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def cold_cache_environment(folder: str) -> dict[str, str]:
    """Every compiler cache pointed into ``folder`` (a fresh, empty one)."""
    return {
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(folder, "inductor"),
        "TRITON_CACHE_DIR": os.path.join(folder, "triton"),
    }


def _with_backend_modules(env: EnvironmentInfo, modules: list[str]) -> EnvironmentInfo:
    """``env`` with the backends that ``modules`` register; ConfigError if one fails."""
    from .engine.backends import BackendModuleError, load_backend_modules

    try:
        added = load_backend_modules(modules)
    except BackendModuleError as exc:
        raise ConfigError([ConfigProblem("backend_modules", str(exc))]) from None
    return dataclasses.replace(
        env, compile_backends=tuple(sorted({*env.compile_backends, *added}))
    )


def _check_factory(config: BenchmarkConfig) -> None:
    """Build the user's model once: any failure is a ConfigError on ``factory``.

    The user's own traceback goes to stderr (the log); the message says why in a line.
    """
    from .engine.workloads import FactoryError, build_workload

    try:
        build_workload(config)
    except FactoryError as exc:
        traceback.print_exc(file=sys.stderr)
        raise ConfigError([ConfigProblem("factory", str(exc))]) from None


class IsolatedCompile:
    """Times a variant's first call in a fresh process (``compile_timing = "isolated"``).

    That is what a new program pays for this variant in the chosen cache mode:
    Inductor's imports, its compile workers and every cache start as they
    would for the user, whatever variants ran before. Each compile runs in a
    compile host of its own (:mod:`.engine.compile_host`), started ahead so
    the hosts import side by side while the worker builds its model; all are
    ready before the first compile, and none is used twice. In cold mode each
    host gets empty caches of its own. Any host left is closed before the
    timed calls.
    """

    def __init__(
        self,
        config: BenchmarkConfig,
        stop: threading.Event,
        compiles: int,
        timeout_s: float = 3600.0,
        hosts: Sequence[CompileHost] = (),
    ):
        self.config = config
        self.stop = stop
        self.timeout_s = timeout_s
        #: set by the run for a random model: compile as it does (Inductor's fallback_random)
        self.fallback_random = False
        self._hosts: list[CompileHost] = []
        for host in hosts:
            if config.compile_cache == "cold":
                host.close()  # started early with the shared caches: not for a cold run
            else:
                host.timeout_s = timeout_s
                self._hosts.append(host)
        while len(self._hosts) < compiles:
            self._hosts.append(self._new_host())

    @staticmethod
    def start_host(
        stop: threading.Event,
        env: dict[str, str] | None = None,
        timeout_s: float = 3600.0,
        on_close: Callable[[], None] | None = None,
    ) -> CompileHost:
        """A compile host started now (it imports while the caller does other work)."""
        if getattr(sys, "frozen", False):
            cmd = [sys.executable, "--worker", HOST_FLAG]
        else:
            cmd = host_command()
        # like this worker: never in the user's folder
        return CompileHost(cmd, dict(os.environ) if env is None else env, _START_FOLDER, stop,
                           timeout_s, on_close)

    def _new_host(self) -> CompileHost:
        if self.config.compile_cache != "cold":
            return self.start_host(self.stop, timeout_s=self.timeout_s)
        folder = tempfile.mkdtemp(prefix="compile-studio-cold-")
        return self.start_host(
            self.stop, {**os.environ, **cold_cache_environment(folder)}, self.timeout_s,
            on_close=lambda: shutil.rmtree(folder, ignore_errors=True),
        )

    def _take(self, variant: str) -> CompileHost:
        """A ready host, once no other host is still importing (nothing runs beside a compile)."""
        for host in list(self._hosts):
            try:
                host.wait_ready(variant)
            except CompileHostError:
                if self.stop.is_set():
                    raise
                self._hosts.remove(host)  # died while importing: a new one below
        if not self._hosts:
            self._hosts.append(self._new_host())
        return self._hosts.pop(0)

    def __call__(self, variant: str) -> float:
        return self._take(variant).compile_s(self.config.to_json(), variant, self.fallback_random)

    def close(self) -> None:
        """No more compiles: hosts left over go (nothing of them runs beside the timed calls)."""
        while self._hosts:
            self._hosts.pop().close()


#: the safe folder this worker was started in; its own child processes start there too
_START_FOLDER: str | None = None

#: How a compile host starts: ``python -c`` with this program, the folder this worker's
#: ``compile_studio`` was imported from, then the host's flags. It puts that folder first on
#: ``sys.path`` and drops the current folder before it imports anything, so the host runs
#: the same code as its worker, whatever lies in the folder it starts in (``python -m``
#: would put that folder first).
HOST_BOOT = (
    "import sys\n"
    "sys.path[:] = [sys.argv[1]] + [p for p in sys.path if p not in ('', '.')]\n"
    "from compile_studio.worker import run_as_main\n"
    "run_as_main(sys.argv[2:])\n"
)


def package_root() -> str:
    """The folder (or worker bundle) this worker's ``compile_studio`` package was imported from."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def host_command(python: str | None = None) -> list[str]:
    """The command line of a compile host of this worker (see :data:`HOST_BOOT`)."""
    return [python or sys.executable, "-c", HOST_BOOT, package_root(), HOST_FLAG]


def _return_to_user_folder() -> None:
    """Back to the folder the user started in, without putting it on the import path.

    The supervisor starts the worker in a safe folder (see
    ``supervisor.safe_start_folder``): relative paths in the config (backend
    module files) mean the user's folder again, while a ``torch.py`` lying
    there is never imported. Empty ``sys.path`` entries (the current folder)
    are dropped, and so is the start folder itself (``python -m`` puts it
    first) unless this package was imported from it.
    """
    global _START_FOLDER
    try:
        _START_FOLDER = os.getcwd()
    except OSError:
        _START_FOLDER = None
    start = os.path.realpath(_START_FOLDER) if _START_FOLDER else None
    own = os.path.realpath(package_root())

    def keep(entry: str) -> bool:
        if entry in ("", "."):
            return False
        return start is None or start == own or os.path.realpath(entry) != start

    sys.path[:] = [p for p in sys.path if keep(p)]
    folder = os.environ.get(protocol.WORKER_CWD_ENV)
    if folder:
        try:
            os.chdir(folder)
        except OSError:
            pass


def _hello_mode(argv: list[str], out: IO[str], sink: StreamSink) -> int:
    """``--hello``: the hello event, then exit (the window's start-up probe)."""
    sink.event(hello_event())
    return 0


def _isolated_compile_mode(argv: list[str], out: IO[str], sink: StreamSink) -> int:
    """``--isolated-compile VARIANT``: time that variant's first call in this process started
    on demand (the reference a compile host is checked against: bench/compile_host.py)."""
    variant = argv[argv.index("--isolated-compile") + 1]
    return time_first_call(out, variant, sys.stdin.readline())


def _compile_host_mode(argv: list[str], out: IO[str], sink: StreamSink) -> int:
    """``--compile-host``: a compile host of a worker (see :mod:`.engine.compile_host`)."""
    return host_main(out)


def _coldstart_child_mode(argv: list[str], out: IO[str], sink: StreamSink) -> int:
    """``--coldstart-child T0``: one measuring process of a cold-start job."""
    from .engine.coldstart import child_main

    return child_main(out, argv)


#: The worker's one-shot modes, by the flag that asks for each (the first one present wins);
#: with none of them the worker runs one job read from stdin (:func:`_job_mode`).
ONE_SHOT_MODES: dict[str, Callable[[list[str], IO[str], StreamSink], int]] = {
    "--hello": _hello_mode,
    "--isolated-compile": _isolated_compile_mode,
    HOST_FLAG: _compile_host_mode,
    protocol.COLDSTART_CHILD_FLAG: _coldstart_child_mode,
}


def main(argv: list[str] | None = None) -> int:
    """The worker's program: the one-shot mode a flag names, else one job (see the module)."""
    argv = sys.argv[1:] if argv is None else argv
    affinity.widen_from_env()  # before torch sizes its thread pool from the cores it may use
    _return_to_user_folder()
    out = _protocol_stdout()
    sink = StreamSink(out)
    mode = next((mode for flag, mode in ONE_SHOT_MODES.items() if flag in argv), _job_mode)
    return mode(argv, out, sink)


class _Job(NamedTuple):
    """The job a worker was sent: a run's config, with a shape sweep's or cold-start's request."""

    config: BenchmarkConfig
    shape: protocol.ShapeSweepRequest | None
    cold: protocol.ColdStartRequest | None


def _job_mode(argv: list[str], out: IO[str], sink: StreamSink) -> int:
    """One job: hello, its configuration line from stdin checked, then a run, a shape sweep
    (``--shape-sweep``) or a cold-start job (``--coldstart``) to its ``done``."""
    stop = threading.Event()
    finished = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    # the compile hosts import torch beside this worker's own start: ready by the first compile
    ahead = 0 if os.environ.get(MEMORY_LIMIT_ENV) else protocol.compile_hosts_ahead(argv)
    early_hosts = [IsolatedCompile.start_host(stop) for _ in range(ahead)]

    hello = _say_hello(sink)
    if hello is None:
        return 3
    # torch, Dynamo and the backends are imported: what they made lives as long as the process,
    # so the collection before the timed calls need not look at it again (~0.25 s -> ~0.01 s)
    gc.freeze()

    line = _config_line(early_hosts, stop)
    if not line.strip() or line.strip() == protocol.STOP_LINE:
        # end of input, or a stop that came ahead of any configuration
        sink.finish(protocol.RunStatus.STOPPED, reason="no configuration received")
        return 0
    sink.start_heartbeat()  # from here on the supervisor can tell a stopped worker from a busy one
    try:
        job = _read_job(line, argv, hello)
    except ConfigError as exc:
        _refuse_config(sink, exc)
        return 2

    gate = _listen(sink, stop, finished)
    if job.cold is not None:
        for host in early_hosts:
            host.close()
        return _run_coldstart(job.cold, sink, stop, finished)
    return _run_benchmark(job, sink, stop, finished, gate, early_hosts)


def _config_line(hosts: list[CompileHost], stop: threading.Event) -> str:
    """The next stdin line that is not ``hosts <n>``; each of those first starts compile
    processes ahead until ``hosts`` holds n (a worker started ahead, told the form's variants)."""
    while True:
        line = sys.stdin.readline()
        wanted = protocol.parse_hosts_line(line)
        if wanted is None:
            return line
        if os.environ.get(MEMORY_LIMIT_ENV):
            continue
        while len(hosts) < wanted:
            hosts.append(IsolatedCompile.start_host(stop))


def _say_hello(sink: StreamSink) -> protocol.HelloEvent | None:
    """The hello sent; None (the worker failed, said as an error) when torch cannot start."""
    try:
        hello = hello_event()
    except Exception as exc:  # noqa: BLE001
        sink.event(
            protocol.ErrorEvent(
                kind=protocol.ErrorKind.INTERNAL,
                message=f"the worker could not start torch: {exc}",
                traceback=traceback.format_exc(),
            )
        )
        sink.finish(protocol.RunStatus.FAILED)
        return None
    sink.event(hello)
    return hello


def _read_job(line: str, argv: list[str], hello: protocol.HelloEvent) -> _Job:
    """The job on the configuration ``line``, checked against this worker; ConfigError if wrong."""
    shape_request: protocol.ShapeSweepRequest | None = None
    cold_request: protocol.ColdStartRequest | None = None
    if protocol.SHAPE_SWEEP_FLAG in argv:
        from .engine.shape_sweep import read_request

        shape_request, line = read_request(line)
    if protocol.COLDSTART_FLAG in argv:
        try:
            cold_request = protocol.ColdStartRequest.from_json(line)
        except (ValueError, TypeError) as exc:
            raise ConfigError([ConfigProblem("coldstart", str(exc))]) from None
        line = json.dumps(cold_request.config)
    config = BenchmarkConfig.from_json(line)
    env = EnvironmentInfo.from_hello(hello.environment)
    if config.backend_modules:
        env = _with_backend_modules(env, config.backend_modules)
    config.validate(env)
    if config.model == "custom":
        _check_factory(config)
    return _Job(config, shape_request, cold_request)


def _refuse_config(sink: StreamSink, exc: ConfigError) -> None:
    """The configuration's problems said as an error, and the worker done (failed)."""
    fields = {p.field for p in exc.problems}
    sink.event(
        protocol.ErrorEvent(
            kind=protocol.ErrorKind.DEVICE_UNAVAILABLE
            if fields == {"device"}
            else protocol.ErrorKind.BAD_CONFIG,
            message="; ".join(str(p) for p in exc.problems),
            problems=[{"field": p.field, "message": p.message} for p in exc.problems],
        )
    )
    sink.finish(protocol.RunStatus.FAILED)


def _listen(sink: StreamSink, stop: threading.Event, finished: threading.Event) -> TurnGate:
    """Threads that read stdin (``stop``, the window's turn answers) and end a stuck stop.

    Returns the gate the turn answers open.
    """
    from .engine.turns import TurnGate

    gate = TurnGate()

    def read_stdin() -> None:
        for ln in sys.stdin:
            if ln.strip() == protocol.STOP_LINE:
                break
            block = protocol.parse_drawn_line(ln)
            if block is not None:
                gate.answer(block)
        stop.set()  # "stop", or end of stdin: the parent is gone
        gate.interrupt()

    def watchdog() -> None:
        stop.wait()
        if finished.wait(STOP_GRACE_S):
            return
        # the loop is stuck in a long call (a compile): report and leave now
        sink.finish(protocol.RunStatus.STOPPED, forced=True)
        os._exit(0)

    threading.Thread(target=read_stdin, name="stdin-reader", daemon=True).start()
    threading.Thread(target=watchdog, name="stop-watchdog", daemon=True).start()
    return gate


def _run_benchmark(
    job: _Job,
    sink: StreamSink,
    stop: threading.Event,
    finished: threading.Event,
    gate: TurnGate,
    early_hosts: list[CompileHost],
) -> int:
    """A run or a shape sweep in this worker, to its ``done``; the exit code."""
    config, shape_request = job.config, job.shape
    cache_dir = None
    if config.compile_cache == "cold":
        cache_dir = tempfile.mkdtemp(prefix="compile-studio-cold-")
        os.environ.update(cold_cache_environment(cache_dir))
    _apply_memory_limit()

    from .engine.gpu_monitor import GpuMonitor
    from .engine.runner import BenchmarkRunner
    from .engine.shape_sweep import ShapeSweepRunner

    status = protocol.RunStatus.FAILED
    monitor = None
    isolated: IsolatedCompile | None = None
    try:
        from .core.variants import is_eager

        compiles = 0
        if shape_request is None and config.compile_timing == "isolated":
            compiles = sum(not is_eager(v) for v in config.variants)
        while len(early_hosts) > compiles:
            early_hosts.pop().close()  # not needed: nothing of it stays beside the timed calls
        runner: BenchmarkRunner | ShapeSweepRunner
        if shape_request is not None:
            runner = ShapeSweepRunner(config, shape_request, sink, stop)
        else:
            if config.compile_timing == "isolated":
                isolated = IsolatedCompile(config, stop, compiles, hosts=early_hosts)
                early_hosts = []
            runner = BenchmarkRunner(config, sink, stop, isolated_compile=isolated, turn_gate=gate)
        sink.event(
            protocol.PhaseEvent(
                variant=None,
                phase=protocol.Phase.BUILD,
                device=str(runner.device),
                inductor_cache_dir=os.environ.get("TORCHINDUCTOR_CACHE_DIR"),
            )
        )
        monitor = GpuMonitor.start(runner.device, sink)
        status = runner.run()
    except Exception as exc:  # noqa: BLE001 - reported as an event
        from .engine.runner import classify_error

        sink.event(
            protocol.ErrorEvent(
                kind=classify_error(exc),
                message=f"the benchmark could not run: {exc}"[:1000],
                traceback=traceback.format_exc()[-8000:],
            )
        )
    finally:
        if monitor is not None:
            monitor.stop()
        if isolated is not None:
            isolated.close()
        for host in early_hosts:
            host.close()
        finished.set()
        sink.finish(status)
        if cache_dir:
            shutil.rmtree(cache_dir, ignore_errors=True)
    return 0 if status != protocol.RunStatus.FAILED else 3


def coldstart_child_command() -> list[str]:
    """The command line of one measuring process of a cold-start job (its start time follows)."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "--worker", protocol.COLDSTART_CHILD_FLAG]
    return [sys.executable, "-c", HOST_BOOT, package_root(), protocol.COLDSTART_CHILD_FLAG]


def _run_coldstart(
    request: protocol.ColdStartRequest, sink: StreamSink, stop: threading.Event, finished: threading.Event
) -> int:
    """A cold-start job in this worker: fresh processes, their points streamed (engine.coldstart)."""
    from .engine.coldstart import ColdStartRunner

    status = protocol.RunStatus.FAILED
    try:
        status = ColdStartRunner(request, sink.event, stop, coldstart_child_command(), _START_FOLDER).run()
    except Exception as exc:  # noqa: BLE001 - reported as an event
        sink.event(protocol.ErrorEvent(
            kind=protocol.ErrorKind.INTERNAL, message=f"the cold-start job could not run: {exc}"[:1000],
            traceback=traceback.format_exc()[-8000:],
        ))
    finally:
        finished.set()
        sink.finish(status)
    return 0 if status != protocol.RunStatus.FAILED else 3


def run_as_main(argv: list[str] | None = None) -> NoReturn:
    """Run :func:`main` as the process's program and leave with its exit code."""
    try:
        code = main(argv)
    except KeyboardInterrupt:
        code = 130
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    # torch's atexit hooks can take seconds (compile workers): leave promptly
    os._exit(code)


if __name__ == "__main__":
    run_as_main()
