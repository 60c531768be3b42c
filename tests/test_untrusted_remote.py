"""A remote worker runs the verified bundle and nothing else; target fields never reach a local shell.

The SSH tests use a private sshd on 127.0.0.1 (``packaging/dev/sshd-local.sh``, as in
tests/test_remote.py); the Slurm run uses the one-node cluster of
``packaging/dev/slurm-local.sh`` when it answers. Without them those tests skip saying why.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from compile_studio import worker
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.session import RunSession
from compile_studio.launchers.remote import REMOTE_CACHE_ENV, RemoteLauncher, launcher_for
from compile_studio.launchers.supervisor import WorkerStartFailed
from compile_studio.launchers.targets import Target
from compile_studio.launchers.worker_bundle import (
    WorkerBundle,
    build_bundle,
    bundle_sources,
    worker_bundle,
)
from compile_studio.results.storage.store import RunStore

pytestmark = pytest.mark.waits  # mostly waits for a service: see tests/support/markers.py

SLURM_CONF = "/tmp/compile-studio-slurm/slurm.conf"


def _plant(folder: Path, marker: Path) -> None:
    """A ``compile_studio`` package in ``folder`` whose import writes ``marker``."""
    package = folder / "compile_studio"
    package.mkdir(parents=True, exist_ok=True)
    code = f"open({str(marker)!r}, 'a').write('planted\\n')\n"
    (package / "__init__.py").write_text(code)
    (package / "worker.py").write_text(code + "def main(argv=None):\n    return 0\n")
    (folder / "torch.py").write_text(code)


def _config(tiny_config: dict[str, Any]) -> BenchmarkConfig:
    return BenchmarkConfig.from_dict(dict(tiny_config, variants=["eager"], iterations=20))


def _importing_pids(lines: list[str]) -> set[str]:
    """The processes that imported a :func:`_marking_bundle`, from its marker's lines."""
    return {line.split()[0] for line in lines}


def _marking_bundle(marker: Path) -> WorkerBundle:
    """This installation's bundle, whose package appends ``<pid> <__file__>`` to ``marker`` on import."""
    line = f"open({str(marker)!r}, 'a').write(f'{{__import__(\"os\").getpid()}} {{__file__}}\\n')\n"
    sources = [(name, line.encode() + data if name == "compile_studio/__init__.py" else data)
               for name, data in bundle_sources()]
    return build_bundle(sources)


# -- the cache folder and the bundle must be the user's own -----------------------------------

def test_a_cache_folder_of_another_user_is_refused(box, tiny_config, tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("needs root: giving a folder to another user takes chown")
    cache = tmp_path / "shared-cache"
    marker = tmp_path / "planted-ran"
    _plant(cache, marker)
    cache.chmod(0o755)
    nobody = pwd.getpwnam("nobody").pw_uid
    os.chown(cache, nobody, -1)
    monkeypatch.setenv(REMOTE_CACHE_ENV, str(cache))
    outcome = RunSession(_config(tiny_config), RunStore(tmp_path / "runs"), launcher=launcher_for(box)).run()
    assert outcome.status == "failed"
    message = outcome.run.message
    assert "SSH target 'box'" in message and "refusing to run the worker" in message
    assert f"the cache folder {cache} belongs to uid {nobody}, not to you" in message
    assert not marker.exists()
    assert not list(cache.glob("worker-*.pyz"))  # nothing copied into it either


def test_a_cache_folder_others_can_write_is_refused(box, tiny_config, tmp_path, monkeypatch):
    cache = tmp_path / "open-cache"
    marker = tmp_path / "planted-ran"
    _plant(cache, marker)
    cache.chmod(0o777)
    monkeypatch.setenv(REMOTE_CACHE_ENV, str(cache))
    outcome = RunSession(_config(tiny_config), RunStore(tmp_path / "runs"), launcher=launcher_for(box)).run()
    assert outcome.status == "failed"
    message = outcome.run.message
    assert f"the cache folder {cache} can be written by its group and others" in message
    assert REMOTE_CACHE_ENV in message  # says what to do
    assert not marker.exists()
    assert not list(cache.glob("worker-*.pyz"))


def test_a_bundle_others_can_write_is_refused(box, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(REMOTE_CACHE_ENV, str(cache))
    launcher = launcher_for(box)
    assert isinstance(launcher, RemoteLauncher)
    launcher.prepare()  # copies the bundle: a private folder, a file only its owner writes
    bundle = cache / worker_bundle().file_name
    assert (cache.stat().st_mode & 0o777, bundle.stat().st_mode & 0o777) == (0o700, 0o644)
    bundle.chmod(0o666)
    with pytest.raises(WorkerStartFailed, match=f"the worker bundle {bundle} can be written by its group"):
        launcher_for(box).prepare()


# -- nothing but the verified bundle is imported ----------------------------------------------

def test_a_planted_package_in_the_own_cache_does_not_run(box, tiny_config, tmp_path, monkeypatch):
    """The cache is the user's own and private: still only the verified bundle runs, in the
    worker and in its compile host, from a private copy of the bytes that were checked."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    planted = tmp_path / "planted-ran"
    _plant(cache, planted)
    monkeypatch.setenv(REMOTE_CACHE_ENV, str(cache))
    ran = tmp_path / "bundle-ran"
    bundle = _marking_bundle(ran)
    launcher = RemoteLauncher(target=box, login=box, bundle=bundle)
    # a compiled variant timed in a fresh process: the worker starts a compile host
    config = BenchmarkConfig.from_dict(
        dict(tiny_config, variants=["eager", "aot_eager"], iterations=20, compile_timing="isolated"))
    outcome = RunSession(config, RunStore(tmp_path / "runs"), launcher=launcher).run()
    assert outcome.status == "complete", outcome.run.message
    assert not planted.exists(), planted.read_text()
    lines = ran.read_text().splitlines()
    assert len(_importing_pids(lines)) == 2, lines  # the worker and its compile host
    copy = f"/compile-studio-worker-{os.getuid()}/{bundle.file_name}/compile_studio/__init__.py"
    assert all(line.endswith(copy) for line in lines), lines


def test_a_run_that_times_first_calls_in_the_run_starts_no_compile_host_there(box, tiny_config, tmp_path, monkeypatch):
    """A compile host is started ahead only for a run that will use one, on a target as here."""
    monkeypatch.setenv(REMOTE_CACHE_ENV, str(tmp_path / "cache"))
    ran = tmp_path / "bundle-ran"
    launcher = RemoteLauncher(target=box, login=box, bundle=_marking_bundle(ran))
    config = BenchmarkConfig.from_dict(dict(tiny_config, variants=["eager", "aot_eager"], iterations=20))
    assert config.compile_timing == "in_run"
    outcome = RunSession(config, RunStore(tmp_path / "runs"), launcher=launcher).run()
    assert outcome.status == "complete", outcome.run.message
    lines = ran.read_text().splitlines()
    assert len(_importing_pids(lines)) == 1, lines  # the worker alone


def test_a_changed_bundle_is_not_run(box, tiny_config, tmp_path, monkeypatch):
    """Bytes changed after the check (same name, another sha256): the worker does not start."""
    cache = tmp_path / "cache"
    monkeypatch.setenv(REMOTE_CACHE_ENV, str(cache))
    launcher = RemoteLauncher(target=box, login=box, bundle=worker_bundle())
    launcher.prepare()
    swapped = tmp_path / "swapped-ran"
    (cache / worker_bundle().file_name).write_bytes(_marking_bundle(swapped).data)
    object.__setattr__(launcher, "prepare", lambda on_status=None: None)  # the check already ran
    outcome = RunSession(_config(tiny_config), RunStore(tmp_path / "runs"), launcher=launcher).run()
    assert outcome.status == "failed"
    assert f"does not have sha256 {worker_bundle().sha256}" in outcome.run.message
    assert not swapped.exists()


def test_a_compile_host_imports_its_workers_package_not_the_start_folders(tmp_path, monkeypatch):
    start = tmp_path / "start"
    marker = tmp_path / "planted-ran"
    _plant(start, marker)
    monkeypatch.setattr(worker, "_START_FOLDER", str(start))
    stop = threading.Event()
    host = worker.IsolatedCompile.start_host(stop, timeout_s=120)
    try:
        host.wait_ready("eager")
    finally:
        host.close()
    assert host.ready and not marker.exists()


# -- target fields reach no local shell -------------------------------------------------------

def _marking_slurm_target(marker: Path) -> Target:
    """A local Slurm target whose preamble and Python each write a line to ``marker``:
    ``job=<id>`` in a job step, ``job=none`` anywhere else."""
    def mark(who: str) -> str:
        return f'echo "{who} job=${{SLURM_JOB_ID:-none}}" >> {marker}'

    return Target(name="cluster", kind="slurm", partition="debug", preamble=mark("preamble"),
                  python=f"$({mark('python')}){sys.executable}")


def test_a_local_slurm_worker_command_is_srun_with_the_script_as_its_step(tmp_path):
    marker = tmp_path / "marker"
    launcher = launcher_for(_marking_slurm_target(marker))
    assert isinstance(launcher, RemoteLauncher)
    argv = launcher.argv()
    assert argv[0] == "srun" and argv[-3:-1] == ["sh", "-c"]
    assert str(marker) in argv[-1] and not any(str(marker) in a for a in argv[:-1])
    assert f"--job-name={launcher.job_name}" in argv


def test_side_commands_of_a_local_slurm_target_run_no_target_field_here(tmp_path, monkeypatch):
    marker = tmp_path / "marker"
    monkeypatch.setenv(REMOTE_CACHE_ENV, str(tmp_path / "cache"))
    launcher = launcher_for(_marking_slurm_target(marker))
    assert isinstance(launcher, RemoteLauncher)
    launcher.prepare()  # the check and the copy, for real, on this machine
    assert not marker.exists(), marker.read_text()
    assert (tmp_path / "cache" / worker_bundle().file_name).read_bytes() == worker_bundle().data
    ran: list[list[str]] = []

    def record(argv: list[str], **_: Any) -> subprocess.CompletedProcess[bytes]:
        ran.append(list(argv))
        return subprocess.CompletedProcess(argv, 0, b"", b"")

    monkeypatch.setattr("compile_studio.launchers.remote.subprocess.run", record)
    launcher.queue_state()
    launcher.end_remote(None)
    assert [a[0] for a in ran] == ["squeue", "scancel"]
    assert not any(str(marker) in word for argv in ran for word in argv)


def _slurm_answers() -> bool:
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and any(s in proc.stdout for s in ("idle", "mix", "alloc"))


def test_a_slurm_run_runs_the_preamble_and_python_only_in_its_job_step(tiny_config, tmp_path, monkeypatch):
    if shutil.which("srun") is None:
        pytest.skip("Slurm is not installed: run packaging/dev/slurm-local.sh as root")
    if not os.environ.get("SLURM_CONF") and Path(SLURM_CONF).is_file():
        monkeypatch.setenv("SLURM_CONF", SLURM_CONF)
    if not _slurm_answers():
        pytest.skip("no local Slurm cluster answers: run packaging/dev/slurm-local.sh as root")
    marker = tmp_path / "marker"
    monkeypatch.setenv(REMOTE_CACHE_ENV, str(tmp_path / "cache"))
    launcher = launcher_for(_marking_slurm_target(marker))
    outcome = RunSession(_config(tiny_config), RunStore(tmp_path / "runs"), launcher=launcher).run()
    assert outcome.status == "complete", outcome.run.message
    lines = marker.read_text().splitlines()
    assert sorted(line.split()[0] for line in lines) == ["preamble", "python"]
    assert all(line.split()[1] != "job=none" and line.split()[1][4:].isdigit() for line in lines), lines
