"""Worker processes forked from one that has imported torch already: the tests' worker starts, ~3 CPU-s cheaper each.

A local worker is ``python -m compile_studio.worker``; most of its start is
importing torch and Dynamo. The tests start hundreds, on two cores. This module
is both ends of a fork server for them:

- run as a program (``python worker_zygote.py SOCKET``), it imports torch,
  Dynamo and the worker's modules once, then for each request received on the
  Unix socket forks a child that takes the request's stdin/stdout/stderr
  (passed as file descriptors), environment, folder and arguments, starts a
  session of its own (as ``start_new_session=True`` does) and runs
  ``compile_studio.worker`` as ``-m`` would, to a normal interpreter exit. The
  server reaps its children and sends each exit status back.
- imported (by ``workers.py``), :class:`PopenThroughZygote` stands in for
  :class:`subprocess.Popen` where the supervisor starts a local worker: a
  :class:`ForkedWorker` has the Popen attributes the supervisor uses (pipes,
  ``pid``, ``returncode``, ``poll``, ``wait``, ``send_signal``, ``kill``). The
  pid is the worker's own, so the supervisor's process-group signals reach it.

A forked worker's own compile hosts (``compile_timing = "isolated"``: the
worker's ``host_command()``) fork from a second server, forked from the first
before it imports what a worker's hello imports (Dynamo's backends) and a
fresh host imports only inside its timed first call: the child becomes
``python -c HOST_BOOT ROOT --compile-host`` instead.

Only a process that a fresh start would make the same way is forked: the
same interpreter, and the same value of every environment variable read at
import (``TORCH*``, ``OMP_*``, ``PYTHON*``, …). Anything else — another
interpreter, a prefix, a cold-cache folder (a cold run's hosts) — starts with
the real Popen. ``test_worker_zygote.py`` checks the two ends against each other.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

#: Environment variables read when torch, Dynamo or Python start: a child forked from a server
#: started with other values would not be the process a fresh start makes.
IMPORT_TIME_PREFIXES = (
    "TORCH", "PYTORCH", "OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS", "CUDA", "NVIDIA", "TRITON",
    "PYTHON", "LD_", "MALLOC", "CXX", "CC",
)
WORKER_MODULE = "compile_studio.worker"
_MAX_REQUEST = 1 << 20


def _import_time_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME_PREFIXES)}


# -- the server ---------------------------------------------------------------------------------

def _recv_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    fds = array.array("i")
    data = b""
    while not data.endswith(b"\n"):
        msg, anc, _flags, _addr = conn.recvmsg(65536, socket.CMSG_SPACE(3 * fds.itemsize))
        if not msg:
            raise ConnectionError("request cut short")
        data += msg
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
        if len(data) > _MAX_REQUEST:
            raise ConnectionError("request too long")
    return json.loads(data), list(fds)


def _child(request: dict[str, Any], fds: list[int], closing: list[int], started: int) -> None:
    """In the forked child: become the worker ``python -m compile_studio.worker`` would be
    (``started``: a pipe written to once this process leads its own session)."""
    import runpy

    for fd in closing:
        os.close(fd)
    os.setsid()
    os.write(started, b"s")
    os.close(started)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    for sig in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as a Python that starts afresh has it
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    os.sched_setaffinity(0, request["cpus"])
    if request.get("host"):
        # ``python -c HOST_BOOT ROOT FLAGS``: the package root first on the path, then the host
        sys.path[:] = [request["host"]] + [p for p in sys.path[1:] if p not in ("", ".")]
        sys.argv = ["-c", request["host"], *request["args"]]
        from compile_studio.worker import run_as_main

        run_as_main(list(request["args"]))
    # the compile hosts this worker starts fork from this server too (:meth:`Zygote.can_fork`)
    global _HOST_COMMAND
    worker = sys.modules[WORKER_MODULE]
    _HOST_COMMAND = (worker.HOST_BOOT, worker.package_root())
    compile_host = sys.modules["compile_studio.engine.compile_host"]
    compile_host.subprocess = PopenThroughZygote(Zygote(None, request["server"], _import_time_env(os.environ)))
    sys.path[0] = request["cwd"]
    sys.argv = [WORKER_MODULE, *request["args"]]
    sys.modules.pop(WORKER_MODULE, None)  # run as __main__, as ``-m`` does, not as the imported copy
    runpy.run_module(WORKER_MODULE, run_name="__main__", alter_sys=True)
    sys.exit(0)


#: Beside the server's socket ``PATH``: the socket of the server its compile hosts fork from.
HOSTS_SUFFIX = ".hosts"


def hosts_pid_file(path: str) -> str:
    """Where the server on ``path`` writes its compile-host server's pid."""
    return path + HOSTS_SUFFIX + ".pid"


def serve(path: str) -> None:
    """Import the worker's heavy modules, then fork a worker per request on ``path`` until stdin
    closes; compile hosts fork from a second server (``path`` + :data:`HOSTS_SUFFIX`), forked
    before the first imports what a worker's hello imports and a fresh host does not."""
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401
    import torch._inductor.config  # noqa: F401

    import compile_studio.engine.runner  # noqa: F401
    import compile_studio.worker  # noqa: F401

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    hosts = _listen(path + HOSTS_SUFFIX)
    hosts_server = os.fork()
    if hosts_server == 0:
        _end_with_parent()
        _serve_forks(hosts, path)
        os._exit(0)
    hosts.close()
    with open(hosts_pid_file(path), "w", encoding="utf-8") as out:  # not a worker: workers_left()
        out.write(f"{hosts_server}\n")
    # what a worker's hello imports before any configuration reaches it (the environment probe
    # lists Dynamo's backends: ~400 modules, ~0.2 CPU-s a worker); a compile host imports them
    # only inside its timed first call, so it forks from the server above
    torch._dynamo.list_backends(exclude_tags=())
    _warm_dynamo()
    with open(path + ".env.json", "w", encoding="utf-8") as out:  # for processes that attach
        json.dump(_import_time_env(os.environ), out)
    server = _listen(path)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    _serve_forks(server, path)


def _warm_dynamo() -> None:
    """Compile a throwaway module once (``aot_eager``; a forward, and a forward and backward), then
    put Dynamo back as a fresh process has it: each forked worker's first compile is then not its
    process's first (~0.4 CPU-s of lazy imports and first-use set-up, on every forked worker that
    compiles). Only the worker server does this: compile hosts fork from the server forked before,
    so a compile host's timed first call is still its process's first, as the app's is."""
    import torch
    from torch._dynamo.utils import compilation_time_metrics, counters

    with torch.random.fork_rng(devices=[]):
        module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
        x = torch.randn(2, 8)
        with torch.inference_mode():
            torch.compile(module, backend="aot_eager")(x)
        torch.compile(module, backend="aot_eager")(x).sum().backward()
    torch._dynamo.reset()
    counters.clear()
    compilation_time_metrics.clear()
    # a fork keeps only the calling thread: stop the one helper thread a compile starts (tqdm's)
    with contextlib.suppress(Exception):
        import tqdm

        if tqdm.tqdm.monitor is not None:
            tqdm.tqdm.monitor.exit()  # sets its stop event and joins it
            tqdm.tqdm.monitor = None
    alive = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if alive:
        sys.stderr.write(f"worker_zygote: threads left before forking: {alive}\n")


def _listen(path: str) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(16)
    return server


def _end_with_parent() -> None:
    """This process gets SIGKILL when its parent ends (PR_SET_PDEATHSIG; a fork does not keep it)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _reply(conn: socket.socket, number: int) -> None:
    """Send ``number`` as a line; a requester that is gone (killed while it waited) is no error:
    the server goes on serving, and reaps the child as before."""
    try:
        conn.sendall(f"{number}\n".encode())
    except OSError:
        pass


def _serve_forks(server: socket.socket, path: str) -> None:
    """Fork a child per request on ``server`` (each child is told the worker server ``path``)
    and send each its exit status once it ends, until stdin closes."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    waiting: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([server, wake_r, sys.stdin], [], [])
        if sys.stdin in ready and not sys.stdin.readline():
            return  # the test process ended
        if wake_r in ready:
            os.read(wake_r, 4096)
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                _reply(conn, os.waitstatus_to_exitcode(status))
                conn.close()
        if server in ready:
            conn, _ = server.accept()
            try:
                request, fds = _recv_request(conn)
            except (OSError, ValueError) as exc:
                sys.stderr.write(f"worker zygote: bad request: {exc}\n")
                conn.close()
                continue
            started_r, started_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                request["server"] = path
                _child(request, fds, [server.fileno(), wake_r, wake_w, conn.fileno(), started_r,
                                      *(c.fileno() for c in waiting.values())], started_w)
            os.close(started_w)
            # the pid goes back once the child leads its own session, as Popen(start_new_session=True)
            # returns: a process-group signal sent at once reaches it
            os.read(started_r, 1)
            os.close(started_r)
            for fd in fds:
                os.close(fd)
            with open(path + ".forks", "a", encoding="utf-8") as forks:  # one line per worker forked
                forks.write(f"{pid}\n")
            _reply(conn, pid)
            waiting[pid] = conn


# -- the test process's end ----------------------------------------------------------------------

class Zygote:
    """A running fork server (started by :meth:`start`), and whether it can start a given worker."""

    def __init__(self, proc: subprocess.Popen | None, path: str, env: Mapping[str, str]):
        self.proc, self.path, self._import_env = proc, path, _import_time_env(env)
        self.forked = 0
        self._ready = False
        self._ready_lock = threading.Lock()

    @classmethod
    def start(cls, path: str) -> Zygote:
        """Start the server; it takes requests once it has imported torch (:meth:`ready`)."""
        env = dict(os.environ)
        proc = subprocess.Popen(
            [sys.executable, __file__, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=env, cwd=os.path.dirname(path), text=True,
        )
        return cls(proc, path, env)

    @classmethod
    def attach(cls, path: str) -> Zygote | None:
        """The server another process started on ``path`` (a CLI the tests run); None without one."""
        try:
            with open(path + ".env.json", encoding="utf-8") as f:
                env = json.load(f)
        except (OSError, ValueError):
            return None
        return cls(None, path, env) if isinstance(env, dict) else None

    def ready(self, timeout_s: float = 0.0) -> bool:
        """Whether the server takes requests (waits up to ``timeout_s`` for it)."""
        if self.proc is None:
            return os.path.exists(self.path)
        with self._ready_lock:
            if not self._ready and self.proc.poll() is None:
                assert self.proc.stdout is not None
                readable, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
                self._ready = bool(readable) and self.proc.stdout.readline().strip() == "ready"
        return self._ready and self.proc.poll() is None

    def close(self) -> None:
        if self.proc is None:
            return
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def can_fork(self, argv: Sequence[str], env: Mapping[str, str] | None) -> bool:
        """Whether ``argv`` is a plain local worker (or a compile host of one) that a child of
        this server would be exactly."""
        if not self.ready():
            return False  # still importing torch: a fresh process is no slower
        if list(argv[:3]) != [sys.executable, "-m", WORKER_MODULE] and _host_root(argv) is None:
            return False
        return _import_time_env(os.environ if env is None else env) == self._import_env

    def fork(self, argv: Sequence[str], env: Mapping[str, str] | None, cwd: str | None,
             text: bool = True, stderr: Any = subprocess.PIPE) -> ForkedWorker:
        host = _host_root(argv)
        return ForkedWorker(self, list(argv[4:] if host else argv[3:]), dict(os.environ if env is None else env),
                            cwd or os.getcwd(), host=host, text=text, stderr=stderr)


#: In a forked worker: (``worker.HOST_BOOT``, ``worker.package_root()``), how it starts a compile host
_HOST_COMMAND: tuple[str, str] | None = None


def _host_root(argv: Sequence[str]) -> str | None:
    """The package root of ``argv`` when it starts a compile host of the forked worker this
    process is (``worker.host_command()``) from the package the server imported; else None."""
    if _HOST_COMMAND is None or len(argv) < 4 or list(argv[:3]) != [sys.executable, "-c", _HOST_COMMAND[0]]:
        return None
    return argv[3] if argv[3] == _HOST_COMMAND[1] else None


def _umask() -> int:
    """This process's umask, read without setting it (``os.umask`` would, for every thread)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def send_request(conn: socket.socket, args: list[str], env: dict[str, str], cwd: str,
                 host: str | None, fds: Sequence[int]) -> None:
    """Ask the server on ``conn`` for a worker (or, with ``host``, a compile host) with ``args``,
    ``env``, ``cwd``, this process's umask and cores, and ``fds`` as its stdin, stdout, stderr."""
    request = json.dumps({
        "args": args, "env": env, "cwd": cwd, "umask": _umask(),
        "cpus": sorted(os.sched_getaffinity(0)), "host": host,
    }).encode() + b"\n"
    conn.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())])


class ForkedWorker:
    """The Popen face of a worker forked by the server: pipes, pid, poll, wait, signals."""

    def __init__(self, zygote: Zygote, args: list[str], env: dict[str, str], cwd: str,
                 host: str | None = None, text: bool = True, stderr: Any = subprocess.PIPE):
        """``host``: the package root of a compile host (else a worker); ``text``: text pipes
        (else bytes, as Popen without ``text``); ``stderr``: a pipe, or None for this process's."""
        child_ends, ours, made = [], [], []
        for k, writable_by_child in enumerate((False, True, True)):
            if k == 2 and stderr is None:
                child_ends.append(2)  # inherited, as Popen's stderr=None
                continue
            r, w = os.pipe()
            made.append(w if writable_by_child else r)
            child_ends.append(made[-1])
            ours.append(r if writable_by_child else w)
        if host is None:
            self.args = [sys.executable, "-m", WORKER_MODULE, *args]
        else:
            self.args = [sys.executable, "-c", "(compile host)", host, *args]
        self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._received = b""
        try:
            self._conn.connect(zygote.path + (HOSTS_SUFFIX if host else ""))
            send_request(self._conn, args, env, cwd, host, child_ends)
            self.pid = int(self._read_line())
        finally:
            for fd in made:
                os.close(fd)
        zygote.forked += 1
        if text:
            kinds = {"encoding": "utf-8", "errors": "replace"}
            self.stdin = open(ours[0], "w", buffering=1, **kinds)
            self.stdout = open(ours[1], buffering=1, **kinds)
            self.stderr = open(ours[2], buffering=1, **kinds) if len(ours) > 2 else None
        else:
            self.stdin = open(ours[0], "wb", buffering=0)
            self.stdout = open(ours[1], "rb", buffering=0)
            self.stderr = open(ours[2], "rb", buffering=0) if len(ours) > 2 else None
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def _read_line(self, timeout: float | None = None) -> str:
        """The server's next line: the pid, then the exit status (both may come in one read,
        for a child that ends at once)."""
        self._conn.settimeout(timeout)
        while b"\n" not in self._received:
            chunk = self._conn.recv(64)
            if not chunk:
                raise ConnectionError("the fork server closed the connection")
            self._received += chunk
        line, _, self._received = self._received.partition(b"\n")
        return line.decode()

    def poll(self) -> int | None:
        return self.wait(timeout=0, _poll=True)

    def wait(self, timeout: float | None = None, _poll: bool = False) -> int | None:
        with self._lock:
            if self.returncode is None:
                try:
                    line = self._read_line(timeout if timeout is None else max(timeout, 0.0) or 1e-6)
                except (TimeoutError, BlockingIOError):
                    if _poll:
                        return None
                    raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
                except ConnectionError:
                    line = "-9\n"  # the server is gone: so is its child (it dies with it)
                self.returncode = int(line)
                self._conn.close()
            return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __enter__(self) -> ForkedWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        for f in (self.stdin, self.stdout, self.stderr):
            if f is not None:
                f.close()
        self.wait()


class PopenThroughZygote:
    """A stand-in for the ``subprocess`` module seen by the supervisor: Popen forks when it can
    (:attr:`fresh`: the command lines of the plain local workers it started with Popen
    instead: their environment differs in what torch reads at import)."""

    def __init__(self, zygote: Zygote):
        self._zygote = zygote
        self.fresh: list[list[str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    def Popen(self, argv: Sequence[str], *args: Any, **kwargs: Any) -> Any:  # noqa: N802 - as subprocess's
        if args or not self._zygote.can_fork(argv, kwargs.get("env")):
            if list(argv[:3]) == [sys.executable, "-m", WORKER_MODULE]:  # a plain local worker
                self.fresh.append(list(argv))
            return subprocess.Popen(argv, *args, **kwargs)
        text = bool(kwargs.get("text") or kwargs.get("universal_newlines") or kwargs.get("encoding"))
        return self._zygote.fork(argv, kwargs.get("env"), kwargs.get("cwd"), text=text,
                                 stderr=kwargs.get("stderr", None))


@contextlib.contextmanager
def forked_workers(zygote: Zygote | None) -> Iterator[PopenThroughZygote | None]:
    """While the block runs, the supervisor's local workers fork from ``zygote`` once it has
    imported torch (None, or a server that never got ready: they start with Popen, and the
    block gets None, else the stand-in it put in place)."""
    if zygote is None or not zygote.ready(timeout_s=120):
        yield None
        return
    from compile_studio.launchers import supervisor

    real = supervisor.subprocess
    popen = PopenThroughZygote(zygote)
    supervisor.subprocess = popen  # type: ignore[assignment]
    try:
        yield popen
    finally:
        supervisor.subprocess = real


def workers_left(within_s: float = 5.0) -> list[Any]:
    """This process's workers and compile hosts still alive after up to ``within_s`` (psutil
    processes): those started with Popen (found by their command line) and those forked from
    its server (each child of it). A forked compile host is not in its worker's process group:
    when the worker ends, the host ends on its own a moment later (as an orphaned one does)."""
    deadline = time.monotonic() + within_s
    while (left := _live_workers()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _live_workers() -> list[Any]:
    import psutil

    def cmdline(p: psutil.Process) -> list[str]:
        try:
            return p.cmdline()
        except psutil.Error:
            return []

    def parent(p: psutil.Process) -> int | None:
        try:
            return p.ppid()
        except psutil.Error:
            return None

    below = {p: (cmdline(p), parent(p)) for p in psutil.Process().children(recursive=True)}
    # the servers and what they forked (a fork keeps the server's command line)
    from_server = {p.pid for p, (args, _) in below.items() if any(a.endswith("worker_zygote.py") for a in args)}
    servers = set()
    for p, (args, ppid) in below.items():
        if p.pid in from_server and ppid not in from_server:  # a server the tests started
            servers.add(p.pid)
            try:
                with open(hosts_pid_file(args[-1]), encoding="utf-8") as f:
                    servers.add(int(f.read()))  # and its compile hosts' server
            except (OSError, ValueError):
                pass
    out = []
    for p, (args, ppid) in below.items():
        if p.pid in servers or not (ppid in from_server or "compile_studio.worker" in " ".join(args)):
            continue
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


if __name__ == "__main__":
    _end_with_parent()  # with the test process
    serve(sys.argv[1])
