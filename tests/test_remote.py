"""Workers on an SSH host and in Slurm job steps: real sshd and Slurm on 127.0.0.1.

The services come from ``packaging/dev/sshd-local.sh`` (started here, in a
temporary folder) and ``packaging/dev/slurm-local.sh`` (started by ``.ci/run``,
or here when running as root); without them these tests skip saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from compile_studio.cli import commands as cli
from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.session import RunSession
from compile_studio.launchers.remote import REMOTE_CACHE_ENV, RemoteLauncher, launcher_for
from compile_studio.launchers.targets import Target, save_targets
from compile_studio.launchers.worker_bundle import build_bundle, bundle_sources
from compile_studio.results.storage.store import RunStore

pytestmark = pytest.mark.waits  # mostly waits for a service: see tests/support/markers.py

REPO = Path(__file__).resolve().parent.parent
SLURM_SCRIPT = REPO / "packaging" / "dev" / "slurm-local.sh"
SLURM_CONF = "/tmp/compile-studio-slurm/slurm.conf"
STOP_LIMIT_S = 5.0
#: the hello timeout of the queue test: longer than a worker's start on a loaded 2-core machine,
#: shorter than the wait
HELLO_TIMEOUT_S = 12.0


@pytest.fixture(scope="module", autouse=True)
def remote_cache(tmp_path_factory):
    """The remote's bundle cache in a temp folder (the remote is this machine)."""
    old = os.environ.get(REMOTE_CACHE_ENV)
    os.environ[REMOTE_CACHE_ENV] = str(tmp_path_factory.mktemp("remote-cache"))
    yield
    if old is None:
        os.environ.pop(REMOTE_CACHE_ENV, None)
    else:
        os.environ[REMOTE_CACHE_ENV] = old


def _slurm_answers() -> bool:
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and any(s in proc.stdout for s in ("idle", "mix", "alloc"))


@pytest.fixture(scope="module")
def slurm():
    if shutil.which("srun") is None:
        pytest.skip("Slurm is not installed: run packaging/dev/slurm-local.sh as root")
    old = os.environ.get("SLURM_CONF")
    if not old and Path(SLURM_CONF).is_file():
        os.environ["SLURM_CONF"] = SLURM_CONF
    if not _slurm_answers() and os.geteuid() == 0:
        subprocess.run([str(SLURM_SCRIPT)], capture_output=True, timeout=300)
        os.environ["SLURM_CONF"] = SLURM_CONF
    if not _slurm_answers():
        pytest.skip("no local Slurm cluster answers: run packaging/dev/slurm-local.sh as root")
    yield Target(name="cluster", kind="slurm", partition="debug", python=sys.executable)
    if old is None:
        os.environ.pop("SLURM_CONF", None)


def _config(tiny_config, **changes) -> BenchmarkConfig:
    data = dict(tiny_config, variants=["eager"], **changes)
    return BenchmarkConfig.from_dict(data)


def _long(tiny_config) -> BenchmarkConfig:
    return _config(tiny_config, iterations=200_000, warmup=0)


def _stop_on_first_samples(session_box: list, marks: dict):
    def on_event(event):
        if isinstance(event, protocol.HelloEvent):
            marks["hello"] = event
        if isinstance(event, protocol.SamplesEvent) and "stop_at" not in marks:
            marks["stop_at"] = time.monotonic()
            session_box[0].request_stop()
    return on_event


def _run_with_stop(launcher, config, store) -> tuple[RunSession, dict]:
    box: list = []
    marks: dict = {}
    session = RunSession(config, store, launcher=launcher, on_event=_stop_on_first_samples(box, marks))
    box.append(session)
    session.run()
    marks["ended"] = time.monotonic()
    return session, marks


def _ssh(target: Target, command: str) -> str:
    launcher = launcher_for(target)
    assert isinstance(launcher, RemoteLauncher)
    return subprocess.run(launcher.shell(command), capture_output=True, text=True, timeout=30).stdout


# -- SSH --------------------------------------------------------------------------------------

def test_ssh_run_has_the_shape_of_a_local_run(box, tiny_config, tmp_path, capsys):
    save_targets([box])
    config_file = tmp_path / "tiny.json"
    config_file.write_text(json.dumps(dict(tiny_config, variants=["eager"], iterations=20)))
    common = ["--config", str(config_file), "--quiet"]
    assert cli.main(["run", "--target", "box", "--out", str(tmp_path / "remote"), *common]) == 0
    assert cli.main(["run", "--out", str(tmp_path / "local"), *common]) == 0
    (remote,), (local,) = (list((tmp_path / k).iterdir()) for k in ("remote", "local"))
    assert sorted(p.name for p in remote.iterdir()) == sorted(p.name for p in local.iterdir())
    remote_json = json.loads((remote / "run.json").read_text())
    local_json = json.loads((local / "run.json").read_text())
    assert remote_json.keys() == local_json.keys()
    assert remote_json["status"] == "complete"
    env = remote_json["environment"]
    assert env["host"] == socket.gethostname() and env["target"] == "box" and env["target_kind"] == "ssh"
    assert env["torch"] and env["python"] and env["devices"]
    assert "target" not in local_json["environment"]
    capsys.readouterr()
    assert cli.main(["list", "--out", str(tmp_path / "remote")]) == 0
    assert f"on {socket.gethostname()} (target box)" in capsys.readouterr().out
    assert cli.main(["show", str(remote)]) == 0
    assert f"on {socket.gethostname()} (target box)" in capsys.readouterr().out


def test_stop_through_ssh_leaves_no_remote_worker(box, tiny_config, tmp_path):
    launcher = launcher_for(box)
    session, marks = _run_with_stop(launcher, _long(tiny_config), RunStore(tmp_path))
    assert session.outcome is not None and session.outcome.status == "stopped"
    assert marks["ended"] - marks["stop_at"] < STOP_LIMIT_S
    hello = marks["hello"]
    assert hello.pgid > 1 and hello.host == socket.gethostname()
    assert session.outcome.run.variants["eager"].samples.wall_ms  # what was measured is kept
    left = _ssh(box, f"ps -eo pid,pgid,args | grep -- '--run-tag={launcher.run_tag}' | grep -v grep; "
                     f"ps -o pid= -g {hello.pgid} || true")
    assert left.strip() == "", f"still running remotely:\n{left}"


def test_a_worker_of_another_protocol_version_is_refused(box, tiny_config, tmp_path):
    version = protocol.PROTOCOL_VERSION
    sources = [
        (name, data.replace(f"PROTOCOL_VERSION = {version}".encode(), f"PROTOCOL_VERSION = {version + 1}".encode()))
        for name, data in bundle_sources()
    ]
    other = build_bundle(sources)
    launcher = RemoteLauncher(target=box, login=box, bundle=other)
    outcome = RunSession(_config(tiny_config), RunStore(tmp_path), launcher=launcher).run()
    assert outcome.status == "failed"
    message = outcome.run.message
    assert f"protocol version {version + 1}" in message and f"speaks version {version}" in message
    assert "SSH target 'box'" in message


def test_a_remote_without_torch_says_so(box, tiny_config, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    bare = Target(name="bare", kind="ssh", host=box.host, ssh_options=box.ssh_options,
                  python=str(venv / "bin" / "python"))
    events: list = []
    outcome = RunSession(_config(tiny_config), RunStore(tmp_path / "runs"),
                         launcher=launcher_for(bare), on_event=events.append).run()
    assert outcome.status == "failed" and outcome.folder is None
    message = outcome.run.message
    assert "SSH target 'bare'" in message and f"host {socket.gethostname()} has no torch" in message
    assert str(venv / "bin" / "python") in message or "Python" in message
    assert any(isinstance(e, protocol.ErrorEvent) and "has no torch" in e.message for e in events)


# -- Slurm ------------------------------------------------------------------------------------

def _squeue(name: str) -> str:
    return subprocess.run(["squeue", "-h", "-n", name], capture_output=True, text=True, timeout=20).stdout


def test_two_runs_through_srun_at_once_overlap(slurm, tiny_config, tmp_path):
    """Two runs at once, each its own job step, run at the same time: each is long enough to go
    on until both have timed calls (then both are stopped), so the overlap does not depend on
    how fast a busy machine starts the second."""
    spans: dict[int, dict] = {0: {}, 1: {}}
    sessions: list[RunSession] = []
    both = threading.Event()

    for k in (0, 1):
        def on_event(event, span=spans[k]):
            if isinstance(event, protocol.HelloEvent):
                span["hello"] = event
            if isinstance(event, protocol.SamplesEvent) and event.phase == protocol.Phase.MEASURE:
                span.setdefault("start", time.monotonic())
                if all("start" in spans[j] for j in (0, 1)):
                    both.set()
            if isinstance(event, protocol.DoneEvent):
                span["end"] = time.monotonic()
        # a million calls: tens of seconds alone, against the second run's start of a few
        config = _config(tiny_config, iterations=1_000_000, warmup=0)
        sessions.append(RunSession(config, RunStore(tmp_path), launcher=launcher_for(slurm, index=k),
                                   on_event=on_event))
    threads = [threading.Thread(target=s.run) for s in sessions]
    for t in threads:
        t.start()
    overlapped = both.wait(240)
    for s in sessions:
        s.request_stop()
    for t in threads:
        t.join(120)
    assert overlapped, f"the two runs did not time calls at the same time: {spans}"
    assert [s.outcome.status for s in sessions] == ["stopped", "stopped"]
    jobs = {spans[k]["hello"].slurm_job_id for k in (0, 1)}
    assert len(jobs) == 2 and all(jobs)  # each its own job step
    assert max(spans[0]["start"], spans[1]["start"]) < min(spans[0]["end"], spans[1]["end"])
    env = sessions[0].outcome.run.environment
    assert env["target_kind"] == "slurm" and env["slurm_partition"] == "debug" and env["slurm_job_id"]


def test_stop_during_a_slurm_run_leaves_no_job(slurm, tiny_config, tmp_path):
    launcher = launcher_for(slurm)
    session, marks = _run_with_stop(launcher, _long(tiny_config), RunStore(tmp_path))
    assert session.outcome is not None and session.outcome.status == "stopped"
    assert marks["ended"] - marks["stop_at"] < STOP_LIMIT_S
    deadline = time.monotonic() + 30
    while _squeue(launcher.job_name).strip() and time.monotonic() < deadline:
        time.sleep(0.5)  # a cancelled step stays listed while it completes
    assert _squeue(launcher.job_name).strip() == ""


def test_a_queue_wait_is_its_own_phase_and_not_a_hello_timeout(slurm, tiny_config, tmp_path):
    blocker = subprocess.run(
        ["sbatch", "--parsable", "-J", "compile-studio-test-blocker", f"--cpus-per-task={os.cpu_count()}",
         "--output=/dev/null", "--wrap", "sleep 60"], capture_output=True, text=True, timeout=30,
    )
    assert blocker.returncode == 0, blocker.stderr
    job = blocker.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + 20
        while "R" not in subprocess.run(["squeue", "-h", "-j", job, "-o", "%t"], capture_output=True,
                                        text=True).stdout and time.monotonic() < deadline:
            time.sleep(0.2)
        queued: list[protocol.PhaseEvent] = []
        release = threading.Timer(HELLO_TIMEOUT_S + 1.5, subprocess.run, (["scancel", job],))

        def on_event(event):
            if isinstance(event, protocol.PhaseEvent) and event.phase == protocol.Phase.QUEUED:
                queued.append(event)
                if not release.is_alive():
                    release.start()  # the resources come free after longer than the hello timeout

        session = RunSession(_config(tiny_config, iterations=20), RunStore(tmp_path),
                             launcher=launcher_for(slurm), on_event=on_event, hello_timeout=HELLO_TIMEOUT_S)
        outcome = session.run()
        release.join()
    finally:
        subprocess.run(["scancel", job], timeout=20)
    assert queued and queued[0].detail.startswith("queued on partition debug, reason: ")
    assert "Resources" in queued[0].detail or "Priority" in queued[0].detail
    assert outcome.status == "complete", outcome.run.message


def test_a_dropped_connection_leaves_the_run_incomplete_with_its_samples(box, ssh_config, tiny_config, tmp_path):
    sshd_pid = int((Path(ssh_config).parent / "sshd.pid").read_text())
    launcher = launcher_for(box)
    marks: dict = {}

    def on_event(event):
        if isinstance(event, protocol.HelloEvent):
            marks["hello"] = event
        if isinstance(event, protocol.SamplesEvent) and "cut" not in marks:
            marks["cut"] = True  # the network goes: the server side of this connection dies
            children = subprocess.run(["pgrep", "-P", str(sshd_pid)], capture_output=True, text=True).stdout
            for pid in children.split():
                os.kill(int(pid), 9)

    outcome = RunSession(_long(tiny_config), RunStore(tmp_path), launcher=launcher, on_event=on_event).run()
    assert outcome.status == "incomplete"
    assert "connection to SSH target 'box'" in outcome.run.message
    assert outcome.run.variants["eager"].samples.wall_ms
    saved = json.loads((outcome.folder / "run.json").read_text())
    assert saved["status"] == "incomplete"
    deadline = time.monotonic() + 10
    left = "?"
    while left and time.monotonic() < deadline:
        left = _ssh(box, f"ps -o pid= -g {marks['hello'].pgid} || true").strip()
        time.sleep(0.3)
    assert left == "", f"still running remotely: {left}"


def test_a_sweep_of_four_points_through_slurm_two_at_a_time(slurm, tiny_config, tmp_path, capsys):
    """Four points, concurrency 2, each its own job step: four rows, and two points ran at once."""
    from datetime import datetime

    from compile_studio.results import load_run

    save_targets([slurm])
    config_file = tmp_path / "tiny.json"
    config_file.write_text(json.dumps(dict(tiny_config, variants=["eager"], iterations=300, warmup=0)))
    code = cli.main([
        "sweep", "--target", slurm.name, "--concurrency", "2", "--param", "batch_size",
        "--values", "1,2,3,4", "--config", str(config_file), "--out", str(tmp_path / "sweeps"), "--quiet",
    ])
    assert code == 0, capsys.readouterr().err
    (folder,) = (tmp_path / "sweeps").iterdir()
    rows = (folder / "sweep.csv").read_text().strip().splitlines()[1:]
    assert len(rows) == 4
    spans = []
    for run_json in folder.glob("*/run.json"):
        run = load_run(run_json.parent)
        assert run.status == "complete" and run.environment["target_kind"] == "slurm"
        start = datetime.fromisoformat(run.created).timestamp()
        spans.append((start, (run_json.parent / "samples.csv").stat().st_mtime, run.environment["slurm_job_id"]))
    assert len(spans) == 4 and len({job for *_, job in spans}) == 4  # four job steps
    spans.sort()
    assert any(b[0] < a[1] for a, b in zip(spans, spans[1:]))  # a point started before the one before ended


def test_a_custom_model_file_travels_with_the_run(box, tiny_config, tmp_path):
    """The factory file is copied (by sha256) into the remote cache; the worker imports that copy."""
    import hashlib

    factory = tmp_path / "mine.py"
    factory.write_text(
        "import torch\n\n"
        "def make_model():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()), torch.randn(2, 8)\n"
    )
    config = BenchmarkConfig.from_dict(dict(tiny_config, variants=["eager"], iterations=20, model="custom",
                                            factory=f"{factory}:make_model"))
    sent: list[dict] = []
    launcher = launcher_for(box)
    original = launcher.worker_config

    def spy(cfg):
        sent.append(original(cfg))
        return sent[-1]

    object.__setattr__(launcher, "worker_config", spy)
    outcome = RunSession(config, RunStore(tmp_path / "runs"), launcher=launcher).run()
    assert outcome.status == "complete", outcome.run.message
    sha = hashlib.sha256(factory.read_bytes()).hexdigest()
    shipped = Path(os.environ[REMOTE_CACHE_ENV]) / f"factory-{sha[:16]}-mine.py"
    assert shipped.read_bytes() == factory.read_bytes()
    assert sent[0]["factory"] == f"{shipped}:make_model"  # the worker was told to import the copy
    assert outcome.run.measurement["factory_sha256"] == sha
