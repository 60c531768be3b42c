"""Targets: the file (untrusted input), the command lines they produce, the CLI (no services needed)."""

from __future__ import annotations

import json
import shlex

import pytest

from compile_studio.cli import commands as cli
from compile_studio.jobs.target_sessions import session_factory
from compile_studio.launchers.remote import (
    GpuPool,
    LocalGpuLauncher,
    RemoteLauncher,
    launcher_for,
    srun_argv,
)
from compile_studio.launchers.supervisor import WorkerLauncher
from compile_studio.launchers.targets import (
    Target,
    Targets,
    TargetsFileError,
    load_targets,
    parse_targets,
    save_targets,
    targets_file,
)


def test_no_file_means_this_machine_only():
    targets = load_targets()
    assert targets.names() == ["local"]
    assert targets_file().name == "targets.json"


def test_targets_round_trip_through_the_file():
    items = [
        Target(name="box", kind="ssh", host="gpu-box", port=2222, user="me",
               ssh_options=("-o", "ConnectTimeout=10", "-C"), python="~/venv/bin/python", gpu_ids=(0, 1)),
        Target(name="cluster", kind="slurm", via="box", partition="gpu", gpus=2, gpu_type="a100",
               time_limit="01:00:00", account="ml", srun_flags=("--qos=short",)),
    ]
    path = save_targets(Targets(items))
    again = load_targets()
    assert again.names() == ["local", "box", "cluster"]
    assert again.get("box") == items[0] and again.get("cluster") == items[1]
    stored = json.loads(path.read_text())
    assert [t["name"] for t in stored["targets"]] == ["box", "cluster"]


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"name": "x", "kind": "ssh", "host": "-oProxyCommand=evil"}, "not an ssh host name"),
        ({"name": "x", "kind": "ssh"}, "needs a host"),
        ({"name": "x", "kind": "cloud"}, "kind must be one of"),
        ({"name": "bad name!", "kind": "ssh", "host": "h"}, "is not a name"),
        ({"name": "x", "kind": "slurm", "gpus": -1}, "gpus: must be a whole number"),
        ({"name": "x", "kind": "slurm", "time_limit": "soon"}, "not a Slurm time limit"),
        ({"name": "x", "kind": "slurm", "partition": "a b"}, "not a Slurm partition"),
        ({"name": "x", "kind": "ssh", "host": "h", "port": "22"}, "port: must be a whole number"),
        ({"name": "x", "kind": "ssh", "host": "h", "colour": 1}, "unknown field 'colour'"),
        ({"name": "x", "kind": "slurm", "via": "nowhere"}, "is not an SSH target"),
        ({"name": "local", "kind": "ssh", "host": "h"}, "kept for this machine"),
        ({"name": "x", "kind": "ssh", "host": "h", "srun_flags": "--x"}, "must be a list"),
    ],
)
def test_a_bad_target_is_set_aside_saying_why_and_the_others_load(entry, words):
    good = {"name": "fine", "kind": "ssh", "host": "gpu-box"}
    targets = parse_targets(json.dumps({"version": 1, "targets": [good, entry]}))
    assert targets.names() == ["local", "fine"]
    (bad,) = targets.invalid
    assert words in bad.reason() and bad.entry == entry
    if entry.get("name") == "x":
        with pytest.raises(KeyError, match="cannot be used"):
            targets.get("x")


@pytest.mark.parametrize(
    ("text", "words"),
    [("{", "not valid JSON"), ("[]", 'list "targets"'),
     ('{"version": 9, "targets": []}', "reads version 1"), ("[" * 100000, "not valid JSON")],
)
def test_a_damaged_file_is_refused_saying_why(text, words):
    path = targets_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    with pytest.raises(TargetsFileError) as err:
        load_targets()
    assert words in str(err.value)


def test_srun_command_line_carries_the_gpu_options():
    target = Target(name="c", kind="slurm", partition="gpu", gpus=2, gpu_type="a100",
                    time_limit="0:30:00", account="ml", srun_flags=("--qos=short",))
    argv = srun_argv(target, "compile-studio-abc")
    assert argv[:5] == ["srun", "--job-name=compile-studio-abc", "--ntasks=1", "--input=all", "--unbuffered"]
    assert "--partition=gpu" in argv and "--gres=gpu:a100:2" in argv
    assert "--time=0:30:00" in argv and "--account=ml" in argv and argv[-1] == "--qos=short"
    plain = srun_argv(Target(name="c", kind="slurm", gpus=1), "j")
    assert "--gres=gpu:1" in plain and not any(a.startswith("--partition") for a in plain)
    assert not any(a.startswith("--gres") for a in srun_argv(Target(name="c", kind="slurm"), "j"))


def test_slurm_through_a_login_node_runs_srun_over_ssh():
    targets = Targets([
        Target(name="login", kind="ssh", host="login.example", port=2200, ssh_options=("-F", "/c")),
        Target(name="c", kind="slurm", via="login", partition="gpu", gpus=1, python="~/env/bin/python",
               preamble="module load cuda"),
    ])
    launcher = launcher_for("c", targets)
    assert isinstance(launcher, RemoteLauncher)
    argv = launcher.argv()
    assert argv[:2] == ["ssh", "-T"] and "BatchMode=yes" in argv
    assert argv[argv.index("-p") + 1] == "2200" and argv[argv.index("--") + 1] == "login.example"
    remote = shlex.split(argv[-1])
    assert remote[:2] == ["sh", "-c"]
    step = shlex.split(remote[2])
    assert step[0] == "srun" and "--gres=gpu:1" in step and f"--job-name={launcher.job_name}" in step
    inner = step[-1]
    assert inner.startswith("module load cuda\n") and "~/env/bin/python -c " in inner
    assert "from compile_studio.worker import run_as_main" in inner
    assert f"--run-tag={launcher.run_tag}" in inner and launcher.active_bundle().file_name in inner
    with pytest.raises(ValueError, match="not an SSH target"):
        launcher_for(Target(name="d", kind="slurm", via="c"), targets)


def test_one_worker_per_gpu_on_a_multi_gpu_machine():
    local = Target(name="local", kind="local", gpu_ids=(0, 1, 2, 3))
    launchers = [launcher_for(local, index=k) for k in range(5)]
    assert all(isinstance(x, LocalGpuLauncher) for x in launchers)
    assert [x.environment()["CUDA_VISIBLE_DEVICES"] for x in launchers] == ["0", "1", "2", "3", "0"]
    box = Target(name="box", kind="ssh", host="box", gpu_ids=(2, 3))
    scripts = [launcher_for(box, index=k).worker_script() for k in range(2)]
    assert "CUDA_VISIBLE_DEVICES=2 " in scripts[0] and "CUDA_VISIBLE_DEVICES=3 " in scripts[1]
    assert "CUDA_VISIBLE_DEVICES" not in launcher_for(box).worker_script()
    assert type(launcher_for(Target(name="local"))) is WorkerLauncher
    assert box.concurrency() == 2 and Target(name="x", kind="slurm", workers=4).concurrency() == 4


def test_the_sweep_factory_hands_each_running_point_its_own_gpu(tiny_config, tmp_path):
    from compile_studio.core.config import BenchmarkConfig

    target = Target(name="local", kind="local", gpu_ids=(0, 1))
    factory = session_factory(target)
    config = BenchmarkConfig.from_dict(tiny_config)
    sessions = [factory(config, None, None, None) for _ in range(3)]
    launchers = [s.launcher for s in sessions]
    assert all(isinstance(x, LocalGpuLauncher) for x in launchers)
    launchers[0].prepare()
    launchers[1].prepare()
    seen = {launchers[0].environment()["CUDA_VISIBLE_DEVICES"], launchers[1].environment()["CUDA_VISIBLE_DEVICES"]}
    assert seen == {"0", "1"}
    launchers[1].cleanup(None)  # point 1 ends: its GPU goes to the next point
    launchers[2].prepare()
    assert launchers[2].environment()["CUDA_VISIBLE_DEVICES"] == "1"
    pool = GpuPool((5,))
    assert pool.acquire() == 5
    pool.release(5)
    assert pool.acquire() == 5


def test_cli_adds_lists_and_removes_targets(capsys):
    assert cli.main(["targets", "add", "box", "--kind", "ssh", "--host", "gpu-box",
                     "--python", "/opt/venv/bin/python"]) == 0
    assert cli.main(["targets", "add", "cluster", "--kind", "slurm", "--via", "box",
                     "--partition", "gpu", "--gpus", "2", "--time", "01:00:00"]) == 0
    capsys.readouterr()
    assert cli.main(["targets"]) == 0
    out = capsys.readouterr().out
    assert "box" in out and "SSH host gpu-box" in out
    assert "Slurm via box: partition gpu, 2 GPUs, time 01:00:00" in out
    assert cli.main(["targets", "add", "x", "--kind", "ssh", "--host=-bad"]) == 2
    assert "not an ssh host name" in capsys.readouterr().err
    assert cli.main(["targets", "remove", "cluster"]) == 0
    assert load_targets().names() == ["local", "box"]
    assert cli.main(["targets", "remove", "nothing"]) == 2


def test_run_with_an_unknown_target_is_a_usage_error(capsys, tmp_path):
    code = cli.main(["run", "--target", "nowhere", "--out", str(tmp_path), "--quiet"])
    assert code == 2
    assert "no target called 'nowhere'" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
