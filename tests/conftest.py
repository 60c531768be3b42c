"""The tests' fixtures and hooks; the machinery they call lives in tests/support/ (see its README)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import environment, markers, qt_widgets, scheduling, threads, workers

environment.prepare()
workers.route_started_pythons()
qt_widgets.keep_widgets_alive_until_deleted()

#: Starts (and stops) an sshd on a free local port with keys of its own (tests of SSH targets).
SSHD_SCRIPT = Path(__file__).resolve().parent.parent / "packaging" / "dev" / "sshd-local.sh"


# -- hooks -----------------------------------------------------------------------------------------

def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: see :func:`support.scheduling.auto_workers`."""
    return scheduling.auto_workers()


def pytest_collection_modifyitems(config, items) -> None:
    """The files in the order xdist hands them out: long ones first, waiting ones spread
    (support/scheduling.py)."""
    scheduling.order(items, scheduling.processes())


def pytest_runtest_setup(item) -> None:
    """A test whose markers break a rule of support/markers.py fails, saying which."""
    found = markers.problems_of(item)
    if found:
        pytest.fail("; ".join(found), pytrace=False)


# -- fixtures --------------------------------------------------------------------------------------

@pytest.fixture
def tiny_config() -> dict:
    """A fresh dict of the tiny benchmark configuration (:data:`support.environment.TINY`)."""
    return environment.tiny_config()


@pytest.fixture(autouse=True)
def isolated_user_dirs(tmp_path_factory, monkeypatch):
    """No test touches the user's real settings or run store."""
    base = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("COMPILE_STUDIO_DATA_DIR", str(base / "data"))
    monkeypatch.setenv("COMPILE_STUDIO_SETTINGS_DIR", str(base / "settings"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "xdg-data"))
    yield base


@pytest.fixture(autouse=True)
def no_qthread_left():
    """Fail a test that leaves a job's thread (a run, a sweep, …) or a probe thread running."""
    with threads.no_thread_left():
        yield


@pytest.fixture(autouse=True)
def closed_windows_deleted_then_garbage_collected(request):
    """After each test, Qt deletes the widgets it closed, then garbage is collected."""
    yield
    qt_widgets.delete_closed_widgets_then_collect(request.node)


@pytest.fixture(scope="session")
def worker_fork_server():
    """The fork server of this test process (None when turned off: support/workers.py)."""
    with workers.fork_server() as zygote:
        yield zygote


@pytest.fixture(autouse=True)
def forked_worker_starts(request, worker_fork_server):
    """Workers the supervisor starts in this test fork from the server, unless the test is
    marked ``fresh_worker``. A module-scoped fixture runs before this one: it forks its
    workers with ``worker_zygote.forked_workers(worker_fork_server)``."""
    fresh = request.node.get_closest_marker("fresh_worker") is not None
    with workers.worker_starts(worker_fork_server, fresh):
        yield


@pytest.fixture(scope="module")
def ssh_config(tmp_path_factory):
    """The ssh config file of an sshd on this machine (one per test module); skips without one."""
    if shutil.which("ssh") is None:
        pytest.skip("no ssh client (apt-get install openssh-client)")
    folder = tmp_path_factory.mktemp("sshd")
    proc = subprocess.run([str(SSHD_SCRIPT), str(folder)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        pytest.skip(f"no local sshd (packaging/dev/sshd-local.sh): {proc.stderr.strip()[-300:]}")
    yield proc.stdout.strip().splitlines()[-1]
    subprocess.run([str(SSHD_SCRIPT), str(folder), "stop"], timeout=30)


@pytest.fixture
def box(ssh_config):
    """An SSH target: this machine through the test sshd, with this Python."""
    from compile_studio.launchers.targets import Target

    return Target(name="box", kind="ssh", host="compile-studio-local",
                  ssh_options=("-F", ssh_config), python=sys.executable)
