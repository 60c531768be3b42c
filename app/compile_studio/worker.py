"""The worker process: ``python -m compile_studio.worker``.

Speaks the protocol of :mod:`compile_studio.protocol`: says ``hello``, reads
one JSON config line from stdin, runs it and streams events on stdout. The
line ``stop`` on stdin, SIGTERM, or the end of stdin (the parent is gone) end
it within about two seconds with the samples so far flushed and a ``done``
saying ``stopped``. Anything else printed (compiler logs) goes to stderr.

``--hello`` prints the hello event and exits (the GUI's start-up probe).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
import traceback
from typing import IO

from . import protocol
from .config import BenchmarkConfig, ConfigError, EnvironmentInfo
from .engine.sink import BatchingSink

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
    from . import __version__
    from .engine.environment import probe

    return protocol.HelloEvent(
        protocol=protocol.PROTOCOL_VERSION,
        app_version=__version__,
        pid=os.getpid(),
        environment=probe(),
    )


def _apply_memory_limit() -> None:
    """Test hook: cap this process's address space (simulates a small machine)."""
    extra = os.environ.get(MEMORY_LIMIT_ENV)
    if not extra:
        return
    import resource

    with open("/proc/self/statm") as fh:
        vm_pages = int(fh.read().split()[0])
    limit = vm_pages * os.sysconf("SC_PAGE_SIZE") + int(extra)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = _protocol_stdout()
    sink = StreamSink(out)
    if "--hello" in argv:
        sink.event(hello_event())
        return 0

    stop = threading.Event()
    finished = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

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
        return 3
    sink.event(hello)

    line = sys.stdin.readline()
    if not line.strip():
        sink.finish(protocol.RunStatus.STOPPED, reason="no configuration received")
        return 0
    env = EnvironmentInfo.from_hello(hello.environment)
    try:
        config = BenchmarkConfig.from_json(line).validate(env)
    except ConfigError as exc:
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
        return 2

    def read_stdin() -> None:
        for ln in sys.stdin:
            if ln.strip() == protocol.STOP_LINE:
                break
        stop.set()  # "stop", or end of stdin: the parent is gone

    def watchdog() -> None:
        stop.wait()
        if finished.wait(STOP_GRACE_S):
            return
        # the loop is stuck in a long call (a compile): report and leave now
        sink.finish(protocol.RunStatus.STOPPED, forced=True)
        os._exit(0)

    threading.Thread(target=read_stdin, name="stdin-reader", daemon=True).start()
    threading.Thread(target=watchdog, name="stop-watchdog", daemon=True).start()

    cache_dir = None
    if config.compile_cache == "cold":
        cache_dir = tempfile.mkdtemp(prefix="compile-studio-inductor-")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    _apply_memory_limit()

    from .engine.gpu_monitor import GpuMonitor
    from .engine.runner import BenchmarkRunner

    status = protocol.RunStatus.FAILED
    monitor = None
    try:
        runner = BenchmarkRunner(config, sink, stop)
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
        finished.set()
        sink.finish(status)
        if cache_dir:
            shutil.rmtree(cache_dir, ignore_errors=True)
    return 0 if status != protocol.RunStatus.FAILED else 3


if __name__ == "__main__":
    try:
        code = main()
    except KeyboardInterrupt:
        code = 130
    sys.stderr.flush()
    # torch's atexit hooks can take seconds (compile workers): leave promptly
    os._exit(code)
