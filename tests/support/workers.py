"""Local workers in tests fork from a server that has imported torch (worker_zygote.py).

The conftest fixtures call these: :func:`fork_server` once per test process,
:func:`worker_starts` around each test. Every test process has its own server; Pythons a
test starts (a CLI run) fork their workers from it too, through ``forkhook/sitecustomize.py``
on ``PYTHONPATH`` (:func:`route_started_pythons`). ``COMPILE_STUDIO_TEST_FORK_WORKERS=0``
turns forking off: every worker then starts as the app starts it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import worker_zygote
from .worker_zygote import Zygote

#: Where a Python the tests start finds this test process's server.
FORK_SOCKET_ENV = "COMPILE_STUDIO_TEST_FORK_SOCKET"
#: The folder that goes on ``PYTHONPATH``: its sitecustomize routes worker starts to the server.
FORKHOOK = Path(__file__).resolve().parent / "forkhook"


def enabled() -> bool:
    """Whether local workers fork (``COMPILE_STUDIO_TEST_FORK_WORKERS`` is not ``0``)."""
    return os.environ.get("COMPILE_STUDIO_TEST_FORK_WORKERS", "1") != "0"


def route_started_pythons() -> None:
    """Pythons the tests start fork their local workers from the server too (when enabled)."""
    if enabled():
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(FORKHOOK), os.environ.get("PYTHONPATH")) if p
        )


@contextlib.contextmanager
def fork_server() -> Iterator[Zygote | None]:
    """This test process's fork server, ready to fork (None when turned off)."""
    if not enabled():
        yield None
        return
    folder = tempfile.mkdtemp(prefix="cs-fork-")
    zygote = Zygote.start(os.path.join(folder, "socket"))
    os.environ[FORK_SOCKET_ENV] = zygote.path
    # ready before the first test: a CLI a test starts earlier would start its worker with Popen
    zygote.ready(timeout_s=120)
    try:
        yield zygote
    finally:
        report = os.environ.get("COMPILE_STUDIO_TEST_FORK_REPORT")
        if report:  # a file to append this test process's count of forked workers to
            try:
                with open(zygote.path + ".forks", encoding="utf-8") as forks:
                    every = len(forks.read().split())  # with those of the Pythons it started
            except OSError:
                every = 0
            with open(report, "a") as out:
                out.write(f"{os.getpid()} forked {zygote.forked} here, {every} in all\n")
        os.environ.pop(FORK_SOCKET_ENV, None)
        zygote.close()
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def worker_starts(zygote: Zygote | None, fresh: bool) -> Iterator[None]:
    """Around one test: its local workers fork from ``zygote``, or, with ``fresh`` (the test is
    marked ``fresh_worker``), start with Popen as the app does, and so do those of the Pythons
    it starts. A test not marked ``fresh_worker`` whose plain local worker could not fork (its
    environment differs in what torch reads at import) fails: it pays for a fresh worker without
    saying so."""
    if zygote is None or fresh:
        with pytest.MonkeyPatch.context() as mp:
            mp.delenv(FORK_SOCKET_ENV, raising=False)
            yield
        return
    with worker_zygote.forked_workers(zygote) as popen:
        yield
    if popen is not None and popen.fresh:
        pytest.fail(
            f"{len(popen.fresh)} local worker(s) started with Popen, not forked (mark the test "
            f"pytest.mark.fresh_worker): {[' '.join(argv[:6]) for argv in popen.fresh]}"
        )
