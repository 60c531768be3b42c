"""The compile host: fresh-process compile times from children forked off one clean host."""

from __future__ import annotations

import threading
import time

import psutil
import pytest

from compile_studio.config import BenchmarkConfig
from compile_studio.engine.compile_host import CompileHostError
from compile_studio.worker import IsolatedCompile


def _config(**changes) -> BenchmarkConfig:
    base = dict(layers="8,8,4", batch_size=2, device="cpu", iterations=3, warmup=0, rounds=1,
                variants=["eager", "aot_eager"], compile_timing="isolated")
    base.update(changes)
    return BenchmarkConfig(**base)


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


def test_one_host_times_every_variant_and_is_closed_before_the_timed_calls():
    stop = threading.Event()
    isolated = IsolatedCompile(_config(), stop, host=IsolatedCompile.start_host(stop))
    try:
        host = isolated._host
        assert host is not None and host.alive
        first = isolated("aot_eager")
        second = isolated("aot_eager")
        # each time a child of the same host, starting from the same clean state:
        # Dynamo's work is redone (no cache hit inside the host), so both are real compiles
        assert 0.0 < first < 120 and 0.0 < second < 120
        assert isolated._host is host, "the host is kept between variants"
        assert host.proc.pid and psutil.Process(host.proc.pid).children() == []
    finally:
        isolated.close()
    assert isolated._host is None
    assert _gone(host.proc.pid)


def test_a_compile_that_fails_says_why_and_the_host_goes_on():
    stop = threading.Event()
    isolated = IsolatedCompile(_config(), stop)
    try:
        with pytest.raises(CompileHostError, match="no-such-variant|unknown|not"):
            isolated("no-such-variant")
        assert isolated("aot_eager") > 0.0
    finally:
        isolated.close()


def test_a_dead_host_is_replaced_and_a_stop_ends_the_compile_at_once():
    stop = threading.Event()
    isolated = IsolatedCompile(_config(), stop)
    try:
        assert isolated._host is None, "without a host given, one starts at the first compile"
        assert isolated("aot_eager") > 0.0
        assert isolated._host is not None
        dead = isolated._host.proc.pid
        psutil.Process(dead).kill()
        assert _gone(dead)
        assert isolated("aot_eager") > 0.0
        assert isolated._host.proc.pid != dead
        host = isolated._host
        compiling: list[psutil.Process] = []

        def stop_mid_compile() -> None:
            compiling.extend(psutil.Process(host.proc.pid).children(recursive=True))
            stop.set()

        threading.Timer(0.4, stop_mid_compile).start()
        t0 = time.monotonic()
        with pytest.raises(CompileHostError, match="stopped"):
            isolated("default")  # Inductor: longer than 0.2 s even with a warm cache
        assert time.monotonic() - t0 < 5.0
        assert _gone(host.proc.pid)
        assert compiling, "the compile ran in a child of the host"
        assert all(_gone(p.pid) for p in compiling), "the child and its compile workers are killed"
    finally:
        isolated.close()


def test_cold_cache_gives_each_variant_a_host_of_its_own():
    stop = threading.Event()
    early = IsolatedCompile.start_host(stop)
    isolated = IsolatedCompile(_config(compile_cache="cold"), stop, host=early)
    assert isolated._host is None, "a host started early has the shared caches: closed"
    assert _gone(early.proc.pid)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert isolated("aot_eager") > 0.0
    after = {p.pid for p in psutil.Process().children(recursive=True) if p.status() != "zombie"}
    assert after <= before, "the cold host is closed after its one compile"
    isolated.close()
