"""support/workers.py: a test's local workers fork, or start fresh when it says so."""

from __future__ import annotations

import os
import subprocess

import pytest

from compile_studio.launchers import supervisor
from compile_studio.launchers.supervisor import WorkerLauncher, WorkerProcess
from support import worker_zygote, workers


@pytest.fixture
def zygote(worker_fork_server):
    if worker_fork_server is None:
        pytest.skip("forked worker starts are turned off (COMPILE_STUDIO_TEST_FORK_WORKERS=0)")
    return worker_fork_server


def _start_and_end(launcher: WorkerLauncher | None = None) -> WorkerProcess:
    worker = WorkerProcess(launcher=launcher)  # waits for its configuration on stdin
    worker.kill()
    worker.wait(30)
    return worker


def test_a_worker_that_cannot_fork_fails_a_test_not_marked_fresh_worker(zygote):
    other = WorkerLauncher(env={**os.environ, "OMP_NUM_THREADS": "3"})  # read at import: no fork
    with pytest.raises(pytest.fail.Exception, match="fresh_worker"):
        with workers.worker_starts(zygote, fresh=False):
            worker = _start_and_end(other)
            assert not isinstance(worker.proc, worker_zygote.ForkedWorker)


def test_a_forked_worker_passes(zygote):
    with workers.worker_starts(zygote, fresh=False):
        worker = _start_and_end()
        assert isinstance(worker.proc, worker_zygote.ForkedWorker)


def test_with_fresh_worker_the_pythons_a_test_starts_do_not_fork_either(zygote):
    assert os.environ[workers.FORK_SOCKET_ENV] == zygote.path
    with workers.worker_starts(zygote, fresh=True):
        assert workers.FORK_SOCKET_ENV not in os.environ  # forkhook/sitecustomize.py does nothing
    assert os.environ[workers.FORK_SOCKET_ENV] == zygote.path


@pytest.mark.fresh_worker
def test_a_test_marked_fresh_worker_starts_its_workers_as_the_app_does(zygote):
    assert supervisor.subprocess is subprocess
    worker = _start_and_end()
    assert isinstance(worker.proc, subprocess.Popen)
