"""Keeping the tool out of its own measurement: which CPU cores do what (no Qt, no torch).

On a machine with two or more cores the worker's timing thread (the one that
calls the model and reads the clock) gets the last core to itself, and the
supervising process — the window with its repaints, or the CLI with its
progress bar — keeps to the first. Torch's own threads keep the number the
user chose; they run on every core but the timing one, and the timing thread
joins them in each parallel region as always. A repaint can then delay a
helper thread, never the thread whose clock is read between calls.

Linux only (``os.sched_setaffinity``); elsewhere, or with one core, nothing
is pinned and the run records that. A remote worker is never pinned: the
window is not on its machine.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .env_vars import warn_ignored

#: The core the worker pins its timing thread to (set by the local launcher; absent: no pinning).
TIMING_CPU_ENV = "COMPILE_STUDIO_TIMING_CPU"
#: The cores the worker process may use (it widens itself to them: it inherits the supervisor's).
WORKER_CPUS_ENV = "COMPILE_STUDIO_WORKER_CPUS"
#: Set to ``0`` to leave every process on every core.
PIN_ENV = "COMPILE_STUDIO_PIN_CPUS"


@dataclass(frozen=True)
class CoreSplit:
    """The cores of one run: the timing thread's, and the supervising process's."""

    timing_cpu: int
    supervisor_cpus: tuple[int, ...]
    cpus: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "timing_cpu": self.timing_cpu,
            "supervisor_cpus": list(self.supervisor_cpus),
            "cpus": list(self.cpus),
        }

    def worker_env(self) -> dict[str, str]:
        """What the local launcher adds to the worker's environment."""
        return {TIMING_CPU_ENV: str(self.timing_cpu), WORKER_CPUS_ENV: ",".join(map(str, self.cpus))}

    def describe(self) -> str:
        sup = ",".join(map(str, self.supervisor_cpus))
        return f"timing thread on CPU {self.timing_cpu}, window/CLI on CPU {sup} (of {len(self.cpus)})"


def available_cpus() -> tuple[int, ...]:
    """The cores this process may run on (all of the machine's where that cannot be read)."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return tuple(range(os.cpu_count() or 1))


def plan(cpus: tuple[int, ...] | None = None, env: Mapping[str, str] | None = None) -> CoreSplit | None:
    """The split for a local run, or None (one core, not Linux, or turned off by ``PIN_ENV=0``)."""
    switch = (os.environ if env is None else env).get(PIN_ENV, "1").strip()
    if switch not in ("0", "1"):
        warn_ignored(PIN_ENV, switch, "not 0 or 1; cores are split as by default")
    if switch == "0" or not hasattr(os, "sched_setaffinity"):
        return None
    cpus = available_cpus() if cpus is None else tuple(sorted(cpus))
    if len(cpus) < 2:
        return None
    return CoreSplit(timing_cpu=cpus[-1], supervisor_cpus=(cpus[0],), cpus=cpus)


def _threads() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def pin_process(cpus: tuple[int, ...] | set[int]) -> bool:
    """Keep every thread of this process (and the threads it starts) on ``cpus``."""
    ok = False
    for tid in _threads():
        try:
            os.sched_setaffinity(tid, set(cpus))
            ok = True
        except (AttributeError, OSError):
            continue
    return ok


def pin_timing_thread(cpu: int) -> bool:
    """Give the calling thread core ``cpu`` alone: every other thread of this process moves off it.

    Call it once the thread pools the measurement uses exist (they keep the
    cores they were given here; a thread started later inherits the caller's
    single core).
    """
    if not hasattr(os, "sched_setaffinity"):
        return False
    try:
        everything = set(os.sched_getaffinity(0))
    except OSError:
        return False
    others = everything - {cpu}
    me = _current_tid()
    for tid in _threads():
        if tid == me or not others:
            continue
        try:
            os.sched_setaffinity(tid, others)
        except OSError:
            continue
    try:
        os.sched_setaffinity(0, {cpu})  # 0: the calling thread
    except OSError:
        return False
    return True


def _current_tid() -> int:
    return threading.get_native_id()


def timing_cpu_from_env(env: dict[str, str] | None = None) -> int | None:
    """The core the launcher chose for the timing thread, or None."""
    text = (os.environ if env is None else env).get(TIMING_CPU_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or len(text) > 6:
        warn_ignored(TIMING_CPU_ENV, text, "not a core number; the timing thread is not pinned")
        return None
    return int(text)


def widen_from_env(env: dict[str, str] | None = None) -> None:
    """In a worker: take back every core the launcher names (call before torch is imported)."""
    text = (os.environ if env is None else env).get(WORKER_CPUS_ENV, "")
    if not text or len(text) > 20_000:
        return
    try:
        cpus = {int(c) for c in text.split(",") if c.strip()}
    except ValueError:
        warn_ignored(WORKER_CPUS_ENV, text, "not a list of core numbers; the worker keeps its cores")
        return
    if cpus:
        pin_process(cpus)


_held = threading.Lock()


@contextmanager
def supervising(split: CoreSplit | None) -> Iterator[CoreSplit | None]:
    """While a run lasts, keep this (the supervising) process on ``split``'s supervisor cores.

    Yields the split, or None when there is none or another run of this process
    holds the cores already (concurrent runs are not pinned).
    """
    if split is None or not _held.acquire(blocking=False):
        yield None
        return
    before = available_cpus()
    try:
        pin_process(split.supervisor_cpus)
        yield split
    finally:
        pin_process(before)
        _held.release()
