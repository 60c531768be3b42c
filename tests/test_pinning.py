"""The timing thread is pinned only after the compiles: what a compile starts keeps every core."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from compile_studio.core import affinity
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.session import RunSession
from compile_studio.launchers.supervisor import WorkerLauncher
from compile_studio.results import RunStore

pytestmark = [
    pytest.mark.long,
    pytest.mark.fresh_worker,  # finds the workers as children of this process
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc"),
]


def _cpus(text: str) -> set[int]:
    """``0-2,5`` as {0, 1, 2, 5}."""
    out: set[int] = set()
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.update(range(int(lo), int(hi) + 1))
        elif part.strip():
            out.add(int(part))
    return out


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid → (parent pid, Cpus_allowed_list, command line) of every process readable now."""
    found: dict[int, tuple[int, str, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        try:
            parent = int(fields.get("PPid", "0").strip())
        except ValueError:
            continue
        found[int(entry)] = (parent, fields.get("Cpus_allowed_list", "").strip(), cmd)
    return found


def _compile_children(me: int) -> dict[int, str]:
    """pid → Cpus_allowed_list of each process under a worker of ``me`` (not the app's own)."""
    procs = _processes()
    workers = {pid for pid, (ppid, _, cmd) in procs.items() if ppid == me and "compile_studio" in cmd}
    children: dict[int, str] = {}
    for pid, (ppid, cpus, cmd) in procs.items():
        if "compile_studio" in cmd or not cpus:
            continue  # the worker, a compile host
        up, seen = ppid, 0
        while up in procs and up not in workers and seen < 64:
            if "compile_studio" in procs[up][2]:
                break  # under a compile host
            up, seen = procs[up][0], seen + 1
        if up in workers:
            children[pid] = cpus
    return children


@pytest.mark.inductor
@pytest.mark.parametrize("rounds", [1, 3])
def test_what_a_compile_starts_is_not_confined_to_the_timing_core(tmp_path, rounds):
    split = affinity.plan()
    if split is None:
        pytest.skip("one CPU available (or pinning turned off): nothing is pinned")
    timing = {split.timing_cpu}
    config = BenchmarkConfig.from_dict({
        "layers": "32,48,8", "batch_size": 4, "device": "cpu", "iterations": 6, "warmup": 2,
        "warmup_min_ms": 0, "rounds": rounds, "variants": ["eager", "default"],
        "compile_timing": "in_run",
    })
    # a cache of its own: Inductor compiles from scratch, starting its compile processes
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    env.pop("TORCHINDUCTOR_COMPILE_THREADS", None)
    session = RunSession(config, RunStore(tmp_path / "runs"), WorkerLauncher(env=env))
    outcome: list = []
    runner = threading.Thread(target=lambda: outcome.append(session.run()), daemon=True)
    runner.start()
    seen: dict[int, set[str]] = {}
    deadline = time.monotonic() + 600
    while runner.is_alive() and time.monotonic() < deadline:
        for pid, cpus in _compile_children(os.getpid()).items():
            seen.setdefault(pid, set()).add(cpus)
        time.sleep(0.05)  # a compile process lives for seconds, a g++ for ~0.5 s
    runner.join(timeout=max(1.0, deadline - time.monotonic()))
    assert outcome and outcome[0].run.status == "complete", outcome and outcome[0].run.message
    assert seen, "no process under the worker was seen while it compiled"
    confined = {pid: c for pid, c in seen.items() if any(_cpus(x) == timing for x in c)}
    assert not confined, f"confined to the timing core {split.timing_cpu}: {confined}"
    measurement = outcome[0].run.measurement
    assert measurement["cpu_pinning"].startswith(f"timing thread alone on CPU {split.timing_cpu}")
    assert measurement["compile_threads"] == min(32, len(split.cpus))
