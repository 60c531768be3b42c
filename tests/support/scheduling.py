"""How pytest-xdist shares the suite out, through its public options and the tests' markers.

``pyproject.toml`` runs ``-n auto --dist loadgroup --no-loadscope-reorder``. xdist's
``loadgroup`` keeps the tests of one ``xdist_group`` in one test process; here every test
is put in a group before xdist reads the groups (:func:`group_and_order`):

- a test marked ``waits`` (it mostly waits: for an SSH or Slurm worker to start, a queued job,
  a stopped worker's watch limit) joins the one group ``waits``: one test process runs them
  one after another while the others keep the cores busy, instead of two or three test
  processes waiting at once;
- every other test joins the group of its file: module fixtures are built once.

The groups go out in the order of the collection, which is sorted so that the ``waits`` group
comes first and the files marked ``long`` next (``--no-loadscope-reorder`` keeps that order;
xdist would otherwise hand out the groups with the most tests first): no long file is left
running alone at the end while the other test processes have nothing to do, and the waiting
tests overlap the ones that use the CPU.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

#: The group of the tests marked ``waits``.
WAITS_GROUP = "waits"


def auto_workers() -> int:
    """``-n auto``: one test process per core and one more, at most four (each starts worker
    processes). About a quarter of the suite's time is tests waiting by design (an SSH or Slurm
    worker starting, a queued job, a stopped worker's watch limit): the extra process keeps the
    cores busy meanwhile (on 2 cores, two runs each: 356 and 359 s, against 385 and 382 s with one
    per core)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(4, cores + 1))


def rank(item: Any) -> int:
    """0 for a test marked ``waits``, 1 for one marked ``long``, 2 for the rest."""
    if item.get_closest_marker("waits") is not None:
        return 0
    return 1 if item.get_closest_marker("long") is not None else 2


def group_of(item: Any) -> str:
    """The ``xdist_group`` a test is given: ``waits``, or its file."""
    if item.get_closest_marker("waits") is not None:
        return WAITS_GROUP
    return Path(str(item.path)).name


def group_and_order(config: Any, items: list) -> None:
    """Sort ``items`` (waits, long, the rest; the order within each file is unchanged) and,
    under ``--dist loadgroup``, give each test without an ``xdist_group`` of its own its
    group (:func:`group_of`)."""
    items.sort(key=rank)  # stable
    if config.pluginmanager.hasplugin("xdist") and config.getoption("dist", "no") == "loadgroup":
        for item in items:
            if item.get_closest_marker("xdist_group") is None:
                item.add_marker(pytest.mark.xdist_group(group_of(item)))
