"""Shared test setup: offscreen Qt, one Inductor cache per session, isolated settings/data."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# One Inductor cache shared by every test (and every worker process they start):
# the first Inductor compile of a tiny MLP is slow cold, fast warm.
os.environ.setdefault(
    "TORCHINDUCTOR_CACHE_DIR", str(Path(tempfile.gettempdir()) / "compile-studio-test-inductor")
)
os.environ.setdefault("PYTHONUNBUFFERED", "1")
# Bytecode: the suite starts hundreds of Pythons (CLI runs, workers, compile hosts, windows).
# Where PYTHONDONTWRITEBYTECODE is set (container images often set it), each would compile the
# app's sources (and pytest its test files) again; they share one bytecode cache outside the
# source tree instead, as they share the Inductor cache.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) or sys.dont_write_bytecode:
    os.environ.setdefault(
        "PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "compile-studio-test-pycache")
    )
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
    sys.dont_write_bytecode = False
# no worker started ahead in window tests (tests/test_standby.py turns it on): one process per run
os.environ.setdefault("COMPILE_STUDIO_STANDBY", "0")

#: Starts (and stops) an sshd on a free local port with keys of its own (tests of SSH targets).
SSHD_SCRIPT = Path(__file__).resolve().parent.parent / "packaging" / "dev" / "sshd-local.sh"

#: The smallest useful benchmark: runs in well under a second per variant.
TINY = {
    "layers": "32,32,8",
    "batch_size": 4,
    "device": "cpu",
    "iterations": 30,
    "warmup": 5,
    "variants": ["eager", "aot_eager"],
    # first calls timed in this run: a fresh process per compiled variant is tested on its own
    "compile_timing": "in_run",
    "warmup_min_ms": 0,
}


@pytest.fixture
def tiny_config() -> dict:
    """A fresh dict of the tiny benchmark configuration."""
    return {k: (list(v) if isinstance(v, list) else v) for k, v in TINY.items()}


@pytest.fixture(autouse=True)
def isolated_user_dirs(tmp_path_factory, monkeypatch):
    """No test touches the user's real settings or run store."""
    base = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("COMPILE_STUDIO_DATA_DIR", str(base / "data"))
    monkeypatch.setenv("COMPILE_STUDIO_SETTINGS_DIR", str(base / "settings"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "xdg-data"))
    yield base


#: Every job and probe QThread made since their modules were first imported here.
_made_threads: weakref.WeakSet = weakref.WeakSet()
#: The classes that record what they make (from the test after the one that imported them).
_recorded_kinds: set[type] = set()
_THREAD_MODULES = ("compile_studio.gui.job_thread", "compile_studio.gui.environment_probe")


def _thread_kinds() -> tuple[type, ...] | None:
    """JobThread (every job: a run, a sweep, a trial, …) and EnvironmentProbe, once imported."""
    modules = [sys.modules.get(name) for name in _THREAD_MODULES]
    if modules[0] is None:
        return None
    kinds = [modules[0].JobThread]
    if modules[1] is not None:
        kinds.append(modules[1].EnvironmentProbe)
    return tuple(kinds)


def _record_made_threads(kinds: tuple[type, ...]) -> bool:
    """From now on each JobThread/EnvironmentProbe (subclasses too) is kept in a weak set:
    finding them then costs nothing, where a scan of every object (torch imported) costs ~0.1 s.
    Whether a class was not recorded before (threads it made before are found by a scan)."""
    new = [cls for cls in kinds if cls not in _recorded_kinds]
    for cls in new:
        _recorded_kinds.add(cls)
        made = cls.__init__

        def init_and_record(self, *args, _made=made, **kwargs):
            _made(self, *args, **kwargs)
            _made_threads.add(self)

        cls.__init__ = init_and_record
    return bool(new)


def running_threads(scan: bool = False) -> list:
    """Job and probe QThreads of this process that are still running (``scan``: look
    through every object, for threads made before their classes were recorded)."""
    kinds = _thread_kinds()
    if kinds is None:
        return []
    if scan:
        found = [o for o in gc.get_objects() if issubclass(type(o), kinds)]
    else:
        found = list(_made_threads)
    return [o for o in found if not sys.modules[_THREAD_MODULES[0]].has_finished(o)]


def leftover_threads(grace_s: float = 3.0, scan: bool = False) -> list:
    """Job/probe QThreads still running after ``grace_s`` (ending ones get time)."""
    deadline = time.monotonic() + grace_s
    while running_threads(scan) and time.monotonic() < deadline:
        time.sleep(0.02)
    return running_threads(scan)


@pytest.fixture(autouse=True)
def no_qthread_left():
    """Fail a test that leaves a job's thread (a run, a sweep, …) or a probe thread running."""
    kinds = _thread_kinds()
    # threads made before the classes were recorded are found once, by a scan
    scan = kinds is not None and _record_made_threads(kinds)
    yield
    kinds = _thread_kinds()
    if kinds is None:
        return
    scan = _record_made_threads(kinds) or scan  # imported during this test
    left = leftover_threads(scan=scan)
    if left:
        for t in left:
            if isinstance(t, kinds[0]):
                t.request_stop()
            else:
                t.cancel()
        for t in left:
            t.wait(10_000)
        pytest.fail(f"test left {len(left)} QThread(s) running: {left}")


def _keep_widgets_alive_until_deleted() -> None:
    """qtbot holds its widgets by weak reference: a test that drops its own reference leaves
    a shown window whose Python side is cyclic garbage, and a collection that runs before
    qtbot closes it frees it half-way (Qt then calls into cleared wrappers: crashes in
    ``paintEvent``, ``sizeHint``). Each test's widgets are kept until Qt has deleted them."""
    from pytestqt import qtbot as qtbot_module

    add = qtbot_module._add_widget

    def add_and_keep(item, widget, *args, **kwargs):
        add(item, widget, *args, **kwargs)
        item.__dict__.setdefault("kept_qt_widgets", []).append(widget)

    qtbot_module._add_widget = add_and_keep


_keep_widgets_alive_until_deleted()


@pytest.fixture(autouse=True)
def closed_windows_deleted_then_garbage_collected(request):
    """After each test: the widgets qtbot closed (``deleteLater``) are deleted now, while
    their Python wrappers are whole, and only then is garbage collected (a window whose
    wrappers a collection cleared before Qt deleted it can crash Qt while it goes).
    A window turns automatic collection off (gui/gc_guard.py): what is due is collected
    here, on the main thread, also in tests that never spin the event loop."""
    yield
    qtcore = sys.modules.get("PySide6.QtCore")
    if qtcore is not None and qtcore.QCoreApplication.instance() is not None:
        qtcore.QCoreApplication.sendPostedEvents(None, qtcore.QEvent.Type.DeferredDelete.value)
    request.node.__dict__.pop("kept_qt_widgets", None)
    guard = sys.modules.get("compile_studio.gui.gc_guard")
    if guard is not None and not gc.isenabled():
        guard.collect_due()


def pytest_xdist_auto_num_workers(config) -> int:
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


#: The test files that mostly wait (for an SSH or Slurm worker to start, a queued job, a stopped
#: worker's watch limit): one test process runs them one after another while the others keep
#: both cores busy, instead of two or three test processes waiting at once.
WAITING_FILES = ("test_remote", "test_worker_watch", "test_untrusted_remote")


#: The test files that take longest (each over ~20 s of one test process), longest first.
#: They are handed out first (``--no-loadscope-reorder`` in pyproject.toml keeps this order;
#: xdist would otherwise hand out the files with the most tests first), so that no long file is
#: left running alone at the end while the other test processes have nothing to do, and the
#: files that mostly wait on SSH, Slurm or a watch limit overlap the ones that use the CPU.
LONG_FILES = (
    *WAITING_FILES, "test_standby", "test_cli", "test_measurement", "test_gpu_check",
    "test_advice_models", "test_gui_faults", "test_pinning", "test_why", "test_user_models",
    "test_advice_try", "test_readme_cli", "test_worker_run", "test_packaging", "test_compile_host",
    "test_model_kinds", "test_examples", "test_untrusted_targets",
)


def pytest_xdist_make_scheduler(config, log):  # noqa: ANN001, ANN201 - xdist's hook
    """``--dist loadfile``, with :data:`WAITING_FILES` as one unit of work (one test process)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class WaitingFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "the waiting files" if Path(scope).stem in WAITING_FILES else scope

    return WaitingFilesTogether(config, log)


def pytest_collection_modifyitems(config, items) -> None:
    """The long files first (:data:`LONG_FILES`); the order within each file is unchanged."""
    rank = {name: k for k, name in enumerate(LONG_FILES)}

    def key(item) -> int:
        return rank.get(Path(str(item.fspath)).stem, len(LONG_FILES))

    items.sort(key=key)  # stable: the rest keep their order


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


# -- worker starts ---------------------------------------------------------------------------------
# A local worker forks from a process that has imported torch already (tests/worker_zygote.py):
# the same worker code, ~3 CPU-s less per start. A test marked ``fresh_worker_processes``, the
# modules below (they find workers by their command line or as children), and every test when
# COMPILE_STUDIO_TEST_FORK_WORKERS=0 start each worker as the app does, with Popen.
FRESH_WORKER_MODULES = {"test_pinning", "test_packaging"}
#: Pythons the tests start (a CLI run) fork their workers from this process's server too:
#: tests/forkhook/sitecustomize.py, on PYTHONPATH, routes them to it (COMPILE_STUDIO_TEST_FORK_SOCKET).
FORK_SOCKET_ENV = "COMPILE_STUDIO_TEST_FORK_SOCKET"
FORK_WORKERS = os.environ.get("COMPILE_STUDIO_TEST_FORK_WORKERS", "1") != "0"
if FORK_WORKERS:
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path(__file__).resolve().parent / "forkhook"), os.environ.get("PYTHONPATH")) if p
    )

def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "fresh_worker_processes: start workers with Popen as the app does, not forked"
    )


@pytest.fixture(scope="session")
def worker_fork_server():
    """The fork server of this test process (None when turned off)."""
    if not FORK_WORKERS:
        yield None
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import worker_zygote

    folder = tempfile.mkdtemp(prefix="cs-fork-")
    zygote = worker_zygote.Zygote.start(os.path.join(folder, "socket"))
    os.environ[FORK_SOCKET_ENV] = zygote.path
    # ready before the first test: a CLI a test starts earlier would start its worker with Popen
    zygote.ready(timeout_s=120)
    try:
        yield zygote
    finally:
        report = os.environ.get("COMPILE_STUDIO_TEST_FORK_REPORT")
        if report:  # a file to append this test process's count of forked workers to
            with open(report, "a") as out:
                out.write(f"{os.getpid()} forked {zygote.forked}\n")
        os.environ.pop(FORK_SOCKET_ENV, None)
        zygote.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def forked_worker_starts(request, worker_fork_server):
    """Workers the supervisor starts in this test fork from the server, unless the test's
    module is marked ``fresh_worker_processes``. A module-scoped fixture runs before this one:
    it forks its workers with ``worker_zygote.forked_workers(worker_fork_server)``."""
    if (
        worker_fork_server is None
        or request.node.get_closest_marker("fresh_worker_processes")
        or request.node.module.__name__.rpartition(".")[2] in FRESH_WORKER_MODULES
    ):
        with pytest.MonkeyPatch.context() as mp:
            mp.delenv(FORK_SOCKET_ENV, raising=False)
            yield
        return
    import worker_zygote

    with worker_zygote.forked_workers(worker_fork_server):
        yield
