"""Finding the benchmark and probe QThreads a test left running (the autouse check in conftest.py).

Each ``BenchmarkThread``/``EnvironmentProbe`` (subclasses too) made after the first check is kept
in a weak set: finding them then costs nothing, where a scan of every object (torch imported)
costs ~0.1 s a test. Threads made before the classes were recorded are found once, by a scan.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import time
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

MODULE = "compile_studio.gui.benchmark_thread"

#: Every benchmark and probe QThread made since their module was first recorded.
made_threads: weakref.WeakSet = weakref.WeakSet()
#: Whether the classes record what they make (from the test after the one that imported them).
_recorded = False


def _record(module: Any) -> None:
    global _recorded
    for cls in (module.BenchmarkThread, module.EnvironmentProbe):
        made = cls.__init__

        def init_and_record(self, *args, _made=made, **kwargs):
            _made(self, *args, **kwargs)
            made_threads.add(self)

        cls.__init__ = init_and_record
    _recorded = True


def running_threads(scan: bool = False) -> list:
    """Benchmark and probe QThreads of this process that are still running (``scan``: look
    through every object, for threads made before their classes were recorded)."""
    module = sys.modules.get(MODULE)
    if module is None:
        return []
    if scan:
        kinds = (module.BenchmarkThread, module.EnvironmentProbe)
        found = [o for o in gc.get_objects() if issubclass(type(o), kinds)]
    else:
        found = list(made_threads)
    return [o for o in found if not module.has_finished(o)]


def leftover_threads(grace_s: float = 3.0, scan: bool = False) -> list:
    """Benchmark/probe QThreads still running after ``grace_s`` (ending ones get time)."""
    deadline = time.monotonic() + grace_s
    while running_threads(scan) and time.monotonic() < deadline:
        time.sleep(0.02)
    return running_threads(scan)


@contextlib.contextmanager
def no_thread_left() -> Iterator[None]:
    """Around one test: fail it if it leaves a benchmark or probe thread running (those are
    stopped and waited for first, so the next test starts clean)."""
    module = sys.modules.get(MODULE)
    scan = not _recorded  # threads made before the classes were recorded are found by a scan
    if module is not None and not _recorded:
        _record(module)
    yield
    module = sys.modules.get(MODULE)
    if module is None:
        return
    if not _recorded:  # imported during this test
        _record(module)
        scan = True
    left = leftover_threads(scan=scan)
    if not left:
        return
    for t in left:
        if isinstance(t, module.BenchmarkThread):
            t.request_stop()
        else:
            t.cancel()
    for t in left:
        t.wait(10_000)
    pytest.fail(f"test left {len(left)} QThread(s) running: {left}")
