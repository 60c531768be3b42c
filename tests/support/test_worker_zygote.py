"""The tests' forked workers (worker_zygote.py) behave as workers the app starts with Popen."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from compile_studio.core import protocol
from compile_studio.launchers import supervisor
from compile_studio.launchers.supervisor import WorkerProcess
from support import worker_zygote


@pytest.fixture
def zygote(worker_fork_server):
    if worker_fork_server is None:
        pytest.skip("forked worker starts are turned off (COMPILE_STUDIO_TEST_FORK_WORKERS=0)")
    assert worker_fork_server.ready(timeout_s=120), "the fork server did not start"
    return worker_fork_server


def hello_of(worker: WorkerProcess) -> protocol.HelloEvent:
    events = list(worker.events())
    assert worker.wait(30) == 0, worker.stderr_tail
    hellos = [e for e in events if isinstance(e, protocol.HelloEvent)]
    assert len(hellos) == 1, events
    return hellos[0]


def test_a_forked_worker_says_the_same_hello_as_a_started_one(zygote):
    before = zygote.forked
    forked = WorkerProcess(args=("--hello",))
    assert isinstance(forked.proc, worker_zygote.ForkedWorker)
    assert zygote.forked == before + 1
    forked_hello = hello_of(forked)
    real_sub = supervisor.subprocess
    supervisor.subprocess = subprocess
    try:
        started = WorkerProcess(args=("--hello",))
    finally:
        supervisor.subprocess = real_sub
    assert isinstance(started.proc, subprocess.Popen)
    started_hello = hello_of(started)
    assert forked.stderr_tail == [] and started.stderr_tail == []
    a, b = dict(forked_hello.environment), dict(started_hello.environment)
    for changing in ("pid", "device_memory"):  # free memory moves between two calls
        a.pop(changing, None)
        b.pop(changing, None)
    assert a == b


def test_the_worker_gets_the_environment_folder_and_cores_of_its_request(zygote, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    worker = zygote.fork(
        [sys.executable, "-m", worker_zygote.WORKER_MODULE],
        {**os.environ, "SLURM_JOB_ID": "77", "SLURM_STEP_ID": "3"}, str(tmp_path),
    )
    try:
        line = worker.stdout.readline()  # the hello: the worker now waits for its configuration
        hello = protocol.decode(line)
        assert isinstance(hello, protocol.HelloEvent), line
        assert hello.environment.get("slurm_job_id") == "77"  # read from the request's environment
        assert os.readlink(f"/proc/{worker.pid}/cwd") == str(tmp_path)
        assert sorted(os.sched_getaffinity(worker.pid)) == cpus
        assert os.getsid(worker.pid) == worker.pid  # a session of its own, as start_new_session
    finally:
        worker.stdin.close()  # end of input: the worker ends
    assert worker.wait(30) == 0


def test_exit_codes_and_signals_come_back_as_popen_gives_them(zygote):
    worker = WorkerProcess()  # waits for its configuration on stdin
    assert isinstance(worker.proc, worker_zygote.ForkedWorker)
    assert worker.proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        worker.proc.wait(0.2)
    os.killpg(worker.pid, signal.SIGKILL)  # the worker leads a process group of its own
    assert worker.wait(30) == -signal.SIGKILL
    assert "SIGKILL" in worker.exit_description()

    polite = WorkerProcess()
    deadline = time.monotonic() + 60
    hello = next(iter(polite.events()))
    assert isinstance(hello, protocol.HelloEvent) and time.monotonic() < deadline
    assert polite.stop() == 0  # ``stop`` before any configuration: a clean exit


def test_a_process_group_signal_sent_the_moment_a_worker_is_forked_reaches_it(zygote):
    """As Popen(start_new_session=True) does, the fork returns once the child leads its own
    session: a process-group kill at once (a run stopped as it starts) ends it."""
    for _ in range(5):
        with zygote.fork([sys.executable, "-m", worker_zygote.WORKER_MODULE], None, os.getcwd()) as worker:
            assert os.getsid(worker.pid) == worker.pid
            os.killpg(worker.pid, signal.SIGKILL)
            assert worker.wait(30) == -signal.SIGKILL


@pytest.mark.parametrize("hosts", [False, True], ids=["worker server", "compile host server"])
def test_a_requester_gone_before_its_pid_comes_back_leaves_the_server_serving(zygote, monkeypatch, hosts):
    """A worker killed while it waits for its compile host's pid: the server's reply fails, and
    the server forks the next request (it used to end, and every later host start was refused)."""
    from compile_studio import worker as worker_module

    socket_path = zygote.path + (worker_zygote.HOSTS_SUFFIX if hosts else "")
    server_pid = int(Path(worker_zygote.hosts_pid_file(zygote.path)).read_text()) if hosts else zygote.proc.pid
    null = os.open(os.devnull, os.O_RDWR)
    os.kill(server_pid, signal.SIGSTOP)  # the request and the hang-up both wait for the server
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as gone:
            gone.connect(socket_path)
            worker_zygote.send_request(
                gone, [worker_module.HOST_FLAG] if hosts else ["--hello"], dict(os.environ), os.getcwd(),
                worker_module.package_root() if hosts else None, [null] * 3,
            )
    finally:
        os.kill(server_pid, signal.SIGCONT)
        os.close(null)
    if hosts:
        monkeypatch.setattr(worker_zygote, "_HOST_COMMAND", (worker_module.HOST_BOOT, worker_module.package_root()))
        argv = worker_module.host_command()
    else:
        argv = [sys.executable, "-m", worker_zygote.WORKER_MODULE, "--hello"]
    with zygote.fork(argv, None, os.getcwd()) as started:
        started.stdin.close()
        assert started.wait(60) is not None
    assert psutil.pid_exists(server_pid) and psutil.Process(server_pid).status() != psutil.STATUS_ZOMBIE


def test_a_pid_and_exit_status_read_together_are_two_lines():
    """A child that ends at once: the server's two lines arrive in one read."""
    ours, server = socket.socketpair()
    with ours, server:
        worker = worker_zygote.ForkedWorker.__new__(worker_zygote.ForkedWorker)
        worker._conn, worker._received = ours, b""
        server.sendall(b"123\n0\n")
        assert worker._read_line(5) == "123"
        assert worker._read_line(5) == "0"


def test_only_a_worker_a_fresh_start_would_make_the_same_is_forked(zygote):
    worker = [sys.executable, "-m", worker_zygote.WORKER_MODULE]
    env = dict(os.environ)
    assert zygote.can_fork(worker, env)
    assert zygote.can_fork([*worker, "--hello"], None)
    assert not zygote.can_fork(["/usr/bin/env", *worker], env)  # a prefix
    assert not zygote.can_fork(["python3.99", *worker[1:]], env)  # another interpreter
    assert not zygote.can_fork(worker, {**env, "TORCHINDUCTOR_CACHE_DIR": "/elsewhere"})
    assert not zygote.can_fork(worker, {**env, "OMP_NUM_THREADS": "3"})
    assert zygote.can_fork(worker, {**env, "COMPILE_STUDIO_DATA_DIR": "/elsewhere"})  # read at run time


def test_a_cli_the_tests_start_forks_its_worker_from_the_server(zygote, tmp_path, tiny_config):
    """forkhook/sitecustomize.py: a CLI run started by a test forks its worker too."""
    forks = Path(zygote.path + ".forks")
    before = forks.read_text().split() if forks.exists() else []
    flags = ["--layers", tiny_config["layers"], "--batch-size", "2", "--device", "cpu", "--iterations", "5",
             "--warmup", "1", "--warmup-min-ms", "0", "--rounds", "1", "--variants", "eager", "--quiet",
             "--no-diagnostics", "--out", str(tmp_path)]
    done = subprocess.run([sys.executable, "-m", "compile_studio.cli", "run", *flags],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    after = forks.read_text().split()
    assert len(after) == len(before) + 1



def test_a_forked_workers_compile_host_forks_too(zygote, tmp_path, tiny_config):
    """A forked worker's compile hosts (``compile_timing = "isolated"``) fork from the server as
    well: the one started ahead and the one the run's compiled variant takes (the same here)."""
    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.jobs.session import RunSession
    from compile_studio.results import RunStore

    forks = Path(zygote.path + ".forks")
    before = forks.read_text().split() if forks.exists() else []
    config = BenchmarkConfig.from_dict({
        **tiny_config, "iterations": 5, "compile_timing": "isolated", "diagnostics": False,
    })
    outcome = RunSession(config, RunStore(tmp_path / "runs")).run()
    assert outcome.run.status == "complete", outcome.run.message
    compiled = outcome.run.variants["aot_eager"]
    assert compiled.compile_timing == "isolated" and compiled.compile_s is not None and compiled.compile_s > 0
    after = forks.read_text().split()
    assert len(after) == len(before) + 2  # the worker and its compile host


def test_only_a_compile_host_a_fresh_start_would_make_the_same_is_forked(zygote, monkeypatch):
    """In a forked worker (:data:`worker_zygote._HOST_COMMAND` set): its own host command forks;
    one with caches of its own (a cold run's), another package root or interpreter does not."""
    from compile_studio import worker

    monkeypatch.setattr(worker_zygote, "_HOST_COMMAND", (worker.HOST_BOOT, worker.package_root()))
    host, env = worker.host_command(), dict(os.environ)
    assert zygote.can_fork(host, env)
    assert not zygote.can_fork(host, {**env, **worker.cold_cache_environment("/tmp/cold")})
    assert not zygote.can_fork([*host[:3], "/elsewhere", *host[4:]], env)
    assert not zygote.can_fork(["python3.99", *host[1:]], env)
    monkeypatch.setattr(worker_zygote, "_HOST_COMMAND", None)
    assert not zygote.can_fork(host, env)  # not in a forked worker: started as the app does


def test_the_server_forks_workers_from_its_one_thread(zygote):
    """The server compiles a throwaway module before serving (its workers' first compiles are
    then cheaper); whatever that started must be gone: a fork keeps only the calling thread."""
    tasks = os.listdir(f"/proc/{zygote.proc.pid}/task")
    assert tasks == [str(zygote.proc.pid)], f"the server has {len(tasks)} threads"
