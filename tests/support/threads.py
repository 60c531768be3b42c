"""Finding the job and probe QThreads a test left running (the autouse check in conftest.py).

Each ``JobThread`` (every job: a run, a sweep, a trial, …) and ``EnvironmentProbe`` (subclasses
too) made after the first check is kept in a weak set: finding them then costs nothing, where a
scan of every object (torch imported) costs ~0.1 s a test. Threads made before the classes were
recorded are found once, by a scan.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import time
import weakref
from collections.abc import Iterator

import pytest

#: The modules of the thread classes checked: the job thread first, then the probe's.
MODULES = ("compile_studio.gui.job_thread", "compile_studio.gui.environment_probe")

#: Every job and probe QThread made since their classes were recorded.
made_threads: weakref.WeakSet = weakref.WeakSet()
#: The classes that record what they make (from the test after the one that imported them).
_recorded_kinds: set[type] = set()


def _kinds() -> tuple[type, ...] | None:
    """JobThread and EnvironmentProbe, once imported (None before JobThread is)."""
    modules = [sys.modules.get(name) for name in MODULES]
    if modules[0] is None:
        return None
    kinds = [modules[0].JobThread]
    if modules[1] is not None:
        kinds.append(modules[1].EnvironmentProbe)
    return tuple(kinds)


def _record(kinds: tuple[type, ...]) -> bool:
    """From now on each thread of ``kinds`` is kept in :data:`made_threads`; whether a class
    was not recorded before (threads it made before are found by a scan)."""
    new = [cls for cls in kinds if cls not in _recorded_kinds]
    for cls in new:
        _recorded_kinds.add(cls)
        made = cls.__init__

        def init_and_record(self, *args, _made=made, **kwargs):
            _made(self, *args, **kwargs)
            made_threads.add(self)

        cls.__init__ = init_and_record
    return bool(new)


def running_threads(scan: bool = False) -> list:
    """Job and probe QThreads of this process that are still running (``scan``: look
    through every object, for threads made before their classes were recorded)."""
    kinds = _kinds()
    if kinds is None:
        return []
    if scan:
        found = [o for o in gc.get_objects() if issubclass(type(o), kinds)]
    else:
        found = list(made_threads)
    return [o for o in found if not sys.modules[MODULES[0]].has_finished(o)]


def leftover_threads(grace_s: float = 3.0, scan: bool = False) -> list:
    """Job/probe QThreads still running after ``grace_s`` (ending ones get time)."""
    deadline = time.monotonic() + grace_s
    while running_threads(scan) and time.monotonic() < deadline:
        time.sleep(0.02)
    return running_threads(scan)


@contextlib.contextmanager
def no_thread_left() -> Iterator[None]:
    """Around one test: fail it if it leaves a job's or a probe's thread running (those are
    stopped and waited for first, so the next test starts clean)."""
    kinds = _kinds()
    scan = kinds is not None and _record(kinds)
    yield
    kinds = _kinds()
    if kinds is None:
        return
    scan = _record(kinds) or scan  # imported during this test
    left = leftover_threads(scan=scan)
    if not left:
        return
    for t in left:
        if isinstance(t, kinds[0]):
            t.request_stop()
        else:
            t.cancel()
    for t in left:
        t.wait(10_000)
    pytest.fail(f"test left {len(left)} QThread(s) running: {left}")
