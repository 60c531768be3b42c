"""Compile hosts: each isolated compile timed in a fresh process that was started ahead."""

from __future__ import annotations

import glob
import subprocess
import tempfile
import threading
import time

import psutil
import pytest

from compile_studio.core.config import BenchmarkConfig
from compile_studio.engine.compile_host import CompileHostError
from compile_studio.worker import IsolatedCompile

pytestmark = pytest.mark.long


def _config(**changes) -> BenchmarkConfig:
    base = dict(layers="8,8,4", batch_size=2, device="cpu", iterations=3, warmup=0, rounds=1,
                variants=["eager", "aot_eager"], compile_timing="isolated")
    base.update(changes)
    return BenchmarkConfig(**base)


@pytest.fixture(autouse=True)
def hosts_fork_as_a_workers_do(worker_fork_server, monkeypatch):
    """The hosts these tests start fork from the tests' server of compile hosts, as a forked
    worker's hosts do (tests/support/worker_zygote.py); one with other caches (cold) starts with Popen."""
    if worker_fork_server is None or not worker_fork_server.ready(timeout_s=120):
        return
    from compile_studio import worker
    from compile_studio.engine import compile_host
    from support import worker_zygote

    monkeypatch.setattr(worker_zygote, "_HOST_COMMAND", (worker.HOST_BOOT, worker.package_root()))
    monkeypatch.setattr(compile_host, "subprocess", worker_zygote.PopenThroughZygote(worker_fork_server))


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_each_compile_gets_a_fresh_host_and_all_are_ready_before_the_first():
    stop = threading.Event()
    early = IsolatedCompile.start_host(stop)
    isolated = IsolatedCompile(_config(), stop, compiles=2, hosts=[early])
    try:
        hosts = list(isolated._hosts)
        assert len(hosts) == 2 and hosts[0] is early, "the early host is used, one more started"
        first = isolated("aot_eager")
        assert all(h.ready for h in hosts), "no host was still importing during the compile"
        assert _gone(hosts[0].proc.pid), "a host times one compile and is gone"
        second = isolated("aot_eager")
        assert _gone(hosts[1].proc.pid)
        # the second is a fresh process too: Dynamo's work is all redone, no warm in-memory state
        assert 0.0 < first < 120 and 0.0 < second < 120
        assert second > 0.25 * first
        assert isolated._hosts == []
    finally:
        isolated.close()


def test_a_compile_that_fails_says_why_and_the_next_one_runs():
    stop = threading.Event()
    isolated = IsolatedCompile(_config(), stop, compiles=2)
    try:
        with pytest.raises(CompileHostError, match="no-such-variant|unknown|not"):
            isolated("no-such-variant")
        assert isolated("aot_eager") > 0.0
    finally:
        isolated.close()


def test_a_dead_host_is_replaced_and_a_stop_ends_the_compile_at_once(monkeypatch):
    from compile_studio.engine import compile_host

    # hosts started as the app starts them: one killed here is still importing torch
    monkeypatch.setattr(compile_host, "subprocess", subprocess)
    stop = threading.Event()
    isolated = IsolatedCompile(_config(), stop, compiles=1)
    try:
        dead = isolated._hosts[0].proc.pid
        psutil.Process(dead).kill()
        assert _gone(dead)
        assert isolated("aot_eager") > 0.0, "a host that died importing is replaced"
        isolated._hosts.append(isolated._new_host())
        host = isolated._hosts[0]
        host.wait_ready("test")
        compiling: list[psutil.Process] = []

        def stop_mid_compile() -> None:
            compiling.append(psutil.Process(host.proc.pid))
            compiling.extend(psutil.Process(host.proc.pid).children(recursive=True))
            stop.set()

        threading.Timer(0.4, stop_mid_compile).start()
        t0 = time.monotonic()
        with pytest.raises(CompileHostError, match="stopped"):
            isolated("default")  # Inductor: longer than 0.4 s even with a warm cache
        assert time.monotonic() - t0 < 5.0
        assert compiling, "the compile ran in the host"
        assert all(_gone(p.pid) for p in compiling), "the host and its compile workers are killed"
    finally:
        isolated.close()


def test_cold_cache_gives_each_host_empty_caches_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # cold folders of this test only
    stop = threading.Event()
    early = IsolatedCompile.start_host(stop)
    before: set[str] = set()
    isolated = IsolatedCompile(_config(compile_cache="cold"), stop, compiles=2, hosts=[early])
    try:
        assert _gone(early.proc.pid), "the early host has the shared caches: closed"
        assert len(isolated._hosts) == 2
        folders = set(glob.glob(f"{tempfile.gettempdir()}/compile-studio-cold-*")) - before
        assert len(folders) == 2, "one empty cache folder per host"
        assert isolated("aot_eager") > 0.0
        left = set(glob.glob(f"{tempfile.gettempdir()}/compile-studio-cold-*")) - before
        assert len(left) == 1, "a host's cold caches go with it"
    finally:
        isolated.close()
    assert not set(glob.glob(f"{tempfile.gettempdir()}/compile-studio-cold-*")) - before
