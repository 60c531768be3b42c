"""How pytest-xdist shares the suite out, through its public options and the tests' markers.

``pyproject.toml`` runs ``-n auto --dist loadfile --no-loadscope-reorder``: each test file
runs in one test process (module fixtures are built once), and the files are handed out in
the order of the collection, which :func:`order` sets (``--no-loadscope-reorder`` keeps it;
xdist would otherwise hand out the files with the most tests first):

- the files marked ``long`` first, so that no long file is left running alone at the end
  while the other test processes have nothing to do;
- the files marked ``waits`` (they mostly wait: for an SSH or Slurm worker to start, a queued
  job, a stopped worker's watch limit) at places 1, n + 1, 2n + 1, … of that order (n test
  processes): xdist hands each process two files at first, in turn, so the first two go to
  the same process, one after the other, instead of two or three processes waiting at once
  while a core has nothing to do.

``--dist loadgroup`` with one ``xdist_group`` for the waiting tests would say this directly,
but with pytest 9.2 and pytest-xdist 3.8 it silently hands out single tests instead of groups
(pytest-dev/pytest-xdist#1386): every module fixture would be built in each process.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def auto_workers() -> int:
    """``-n auto``: one test process per core and two more, at most four (each starts worker
    processes). About a quarter of the suite's time is tests waiting by design (an SSH or Slurm
    worker starting, a queued job, a stopped worker's watch limit): the extra processes keep the
    cores busy meanwhile. On 2 cores, alternated: 3 processes 288.8 and 281.2 s, 4 processes
    267.1 and 265.0 s (one per core had been 385 and 382 s against 356 and 359 s for 3)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(4, cores + 2))


def kind(item: Any) -> str:
    """``waits``, ``long`` or ``other``: how a test's file is scheduled (by its markers)."""
    if item.get_closest_marker("waits") is not None:
        return "waits"
    return "long" if item.get_closest_marker("long") is not None else "other"


def order(items: list, processes: int) -> None:
    """Sort ``items`` file by file (the order within a file is kept): the ``long`` files first,
    then the others, with the ``waits`` files at places 1, n + 1, 2n + 1, … (n = ``processes``)."""
    files: dict[Path, str] = {}
    for item in items:
        files.setdefault(Path(str(item.path)), kind(item))
    waiting = [f for f, k in files.items() if k == "waits"]
    queue = [f for f, k in files.items() if k == "long"] + [f for f, k in files.items() if k == "other"]
    step = max(1, processes)
    for n, f in enumerate(waiting):
        queue.insert(min(n * step, len(queue)), f)
    place = {f: n for n, f in enumerate(queue)}
    items.sort(key=lambda item: place[Path(str(item.path))])  # stable


def processes() -> int:
    """The number of test processes of this run (``PYTEST_XDIST_WORKER_COUNT``; 1 without xdist)."""
    try:
        return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    except ValueError:
        return 1
