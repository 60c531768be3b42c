"""A received targets file: ssh options that run a local command are refused in every spelling,
concurrent writers all keep their change, and a FIFO or a device never blocks a reader."""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from compile_studio.cli import commands as cli
from compile_studio.launchers.remote import ssh_argv
from compile_studio.launchers.targets import (
    Target,
    Targets,
    TargetsFileError,
    check_target,
    load_targets,
    save_targets,
    srun_flag_problems,
    ssh_option_problems,
    targets_file,
    update_targets,
)

pytestmark = pytest.mark.long

#: A subprocess that hangs on the targets file is stopped after this long (a pass takes ~1 s).
CLI_TIMEOUT_S = 60


def _ssh_config(folder: Path, text: str, mode: int = 0o600) -> str:
    path = folder / "ssh_config"
    path.write_text(text)
    path.chmod(mode)
    return str(path)


#: each a spelling ssh reads as an option that runs a command (or loads code) on this machine
DANGEROUS = [
    (["-oProxyCommand=touch /tmp/owned"], "ProxyCommand"),
    (["-o", "ProxyCommand=touch /tmp/owned"], "ProxyCommand"),
    (["-o", "ProxyCommand touch /tmp/owned"], "ProxyCommand"),
    (["-o", "ProxyCommand = touch /tmp/owned"], "ProxyCommand"),
    (["-o", "\tproxycommand\ttouch /tmp/owned"], "proxycommand"),
    (["-o PROXYCOMMAND=touch /tmp/owned"], "PROXYCOMMAND"),
    (["-o", '"ProxyCommand" touch /tmp/owned'], "ProxyCommand"),
    (["-Co", "ProxyCommand=touch /tmp/owned"], "ProxyCommand"),
    (["-4vCoProxyCommand=touch /tmp/owned"], "ProxyCommand"),
    (["-o", "LocalCommand=touch /tmp/owned", "-o", "PermitLocalCommand=yes"], "LocalCommand"),
    (["-oPermitLocalCommand=yes"], "PermitLocalCommand"),
    (["-o", "KnownHostsCommand=/bin/sh -c 'touch /tmp/owned'"], "KnownHostsCommand"),
    (["-o", "Match exec \"touch /tmp/owned\""], "Match"),
    (["-o", "Include /tmp/other_config"], "Include"),
    (["-o", "PKCS11Provider=/tmp/evil.so"], "PKCS11Provider"),
    (["-I", "/tmp/evil.so"], "-I"),
    (["-o", "ProxyJump=-oProxyCommand=touch"], "not a jump host"),
    (["-J", "jump;touch /tmp/owned"], "not a jump host"),
    (["-A"], "-A"),
    (["-o", "ForwardAgent=yes"], "ForwardAgent"),
    (["-L", "8080:localhost:80"], "-L"),
    (["-E", "/tmp/log"], "-E"),
    (["-o", "SendEnv=*"], "SendEnv"),
    (["-F", "relative_config"], "absolute path"),
    (["evil-host"], "is not an option"),
    (["--", "evil-host"], "is not an option"),
]

#: options a target may carry (ssh parses every one of them, see the ssh -G test)
ALLOWED = [
    ["-4"], ["-6", "-C", "-q"], ["-p", "2222"], ["-p2222"], ["-l", "me"], ["-i", "~/.ssh/id_ed25519"],
    ["-o", "ConnectTimeout=10"], ["-oServerAliveInterval=5"], ["-o", "ServerAliveCountMax 3"],
    ["-o", "StrictHostKeyChecking=accept-new"], ["-o", "UserKnownHostsFile=/dev/null"],
    ["-o", "IdentitiesOnly=yes"], ["-o", "Port=2200"], ["-o", "User=me"], ["-o", "Compression=yes"],
    ["-o", "BatchMode=yes"], ["-o", "IPQoS=throughput"], ["-o", "HostKeyAlias=gpu-box"],
    ["-o", "ControlMaster=auto", "-o", "ControlPath=~/.ssh/cm-%r@%h:%p", "-o", "ControlPersist=60"],
    ["-J", "me@jump.example:2222"], ["-o", "ProxyJump=jump1,jump2"], ["-F", "none"], ["-Cv"],
]


@pytest.mark.parametrize(("options", "named"), DANGEROUS, ids=[" ".join(o) for o, _ in DANGEROUS])
def test_an_ssh_option_that_runs_a_local_command_is_refused_in_every_spelling(options, named):
    problems = ssh_option_problems(options)
    assert problems, options
    assert named in problems[0]
    target, found = check_target({"name": "box", "kind": "ssh", "host": "gpu-box", "ssh_options": options})
    assert target is None and any(named in p for p in found)
    if "not a jump host" not in named and "not an option" not in named and "absolute" not in named:
        assert "~/.ssh/config" in problems[0]


@pytest.mark.parametrize("options", ALLOWED, ids=[" ".join(o) for o in ALLOWED])
def test_the_documented_ssh_options_are_accepted(options):
    assert ssh_option_problems(options) == []
    target, found = check_target({"name": "box", "kind": "ssh", "host": "gpu-box", "ssh_options": options})
    assert found == [] and target is not None and target.ssh_options == tuple(options)


@pytest.mark.skipif(shutil.which("ssh") is None, reason="no ssh client")
def test_ssh_reads_the_refused_spellings_as_commands_and_takes_the_accepted_options():
    """The refused spellings are real (ssh -G shows the command it would run); the accepted parse."""
    box = Target(name="box", kind="ssh", host="gpu-box")
    for options, _ in DANGEROUS[:9]:
        argv = ssh_argv(dataclasses.replace(box, ssh_options=tuple(options)))
        proc = subprocess.run([argv[0], "-G", *argv[1:]], capture_output=True, text=True, timeout=30)
        assert "proxycommand touch /tmp/owned" in proc.stdout.lower(), (options, proc.stderr)
    for options in ALLOWED:
        argv = ssh_argv(dataclasses.replace(box, ssh_options=tuple(options)))
        proc = subprocess.run([argv[0], "-G", *argv[1:]], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, (options, proc.stderr)


def test_an_ssh_config_file_is_accepted_only_when_it_cannot_run_a_command(tmp_path):
    folder = tmp_path / "cfg"
    folder.mkdir(mode=0o700)
    good = ("# the test host\nHost gpu-box other\n    HostName 127.0.0.1\n    Port 2222\n"
            "    User me\n    IdentityFile /home/me/.ssh/id\n    IdentitiesOnly yes\n"
            "    StrictHostKeyChecking yes\n    BatchMode=yes\n    ConnectTimeout 5\n")
    path = _ssh_config(folder, good)
    assert ssh_option_problems(["-F", path]) == []
    assert ssh_option_problems([f"-F{path}"]) == []
    for line, named in [("ProxyCommand nc %h %p", "ProxyCommand"), ("LocalCommand id", "LocalCommand"),
                        ("Match exec \"true\"", "Match"), ("Include /tmp/x", "Include"),
                        ("  KnownHostsCommand /bin/true", "KnownHostsCommand")]:
        _ssh_config(folder, good + line + "\n")
        (problem,) = ssh_option_problems(["-F", path])
        assert named in problem and "line 11" in problem and "~/.ssh/config" in problem
    _ssh_config(folder, good, mode=0o666)
    assert "others can write the file" in ssh_option_problems(["-F", path])[0]
    _ssh_config(folder, good)
    folder.chmod(0o777)
    assert "others can write its folder" in ssh_option_problems(["-F", path])[0]
    folder.chmod(0o700)
    fifo = folder / "fifo_config"
    os.mkfifo(fifo)
    assert "not a regular file" in ssh_option_problems(["-F", str(fifo)])[0]
    assert "no such file" in ssh_option_problems(["-F", str(folder / "missing")])[0]


def test_srun_flags_that_run_a_program_are_refused():
    for flag in ("--prolog=/tmp/x", "--epilog", "--prol=/tmp/x", "--ep=/tmp/x", "--PROLOG=/x"):
        assert srun_flag_problems([flag]), flag
    assert srun_flag_problems(["--qos=short", "--exclusive", "--profile=all", "--export=ALL"]) == []


def test_a_refused_target_in_the_file_is_listed_as_invalid_and_the_others_load(capsys, tmp_path):
    path = targets_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    bad = {"name": "evil", "kind": "ssh", "host": "gpu-box", "ssh_options": ["-oProxyCommand=touch /tmp/owned"]}
    good = {"name": "gpu-box", "kind": "ssh", "host": "gpu-box"}
    path.write_text(json.dumps({"version": 1, "targets": [bad, good]}))
    targets = load_targets()
    assert targets.names() == ["local", "gpu-box"]
    (invalid,) = targets.invalid
    assert invalid.name == "evil" and "ProxyCommand" in invalid.reason()
    with pytest.raises(KeyError, match="cannot be used.*ProxyCommand"):
        targets.get("evil")
    assert cli.main(["targets"]) == 0
    out, err = capsys.readouterr()
    assert "gpu-box" in out and "evil" in out and "invalid" in out
    assert "target 'evil' cannot be used" in err and "ProxyCommand" in err and "~/.ssh/config" in err
    assert cli.main(["run", "--target", "evil", "--out", str(tmp_path / "runs"), "--quiet"]) == 2
    assert "cannot be used" in capsys.readouterr().err
    # another change keeps the invalid entry as it was; replacing it by name drops it
    assert cli.main(["targets", "add", "more", "--kind", "ssh", "--host", "more"]) == 0
    stored = json.loads(path.read_text())["targets"]
    assert bad in stored and good in stored
    assert cli.main(["targets", "add", "evil", "--kind", "ssh", "--host", "gpu-box",
                     "--ssh-option=-oProxyCommand=touch /tmp/owned"]) == 2
    err = capsys.readouterr().err
    assert "ProxyCommand" in err and "~/.ssh/config" in err
    assert cli.main(["targets", "remove", "evil"]) == 0
    assert load_targets().invalid == []


def _cli(*args: str, env: dict[str, str], timeout: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """``compile-studio-cli ARGS`` in a process of its own, with at most 4 GiB of memory."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run([sys.executable, "-m", "compile_studio.cli", *args], env=env, text=True,
                          capture_output=True, timeout=timeout, preexec_fn=limit)


def _env(path: Path) -> dict[str, str]:
    return dict(os.environ, COMPILE_STUDIO_TARGETS=str(path))


def test_sixteen_concurrent_adds_all_keep_their_target(tmp_path):
    path = tmp_path / "conf" / "targets.json"
    env = _env(path)
    procs = [
        subprocess.Popen([sys.executable, "-m", "compile_studio.cli", "targets", "add", f"t{k}",
                          "--kind", "ssh", "--host", f"host{k}"], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for k in range(16)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=CLI_TIMEOUT_S)
        assert proc.returncode == 0, err
    targets = load_targets(path)
    assert sorted(targets.names()) == sorted(["local", *(f"t{k}" for k in range(16))])
    assert sorted(p.name for p in path.parent.iterdir()) == ["targets.json", "targets.json.lock"]


def test_concurrent_adds_and_removes_each_keep_their_change(tmp_path):
    path = tmp_path / "targets.json"
    save_targets([Target(name=f"old{k}", kind="ssh", host=f"old{k}") for k in range(6)], path)
    env = _env(path)
    commands = [["targets", "remove", f"old{k}"] for k in range(6)]
    commands += [["targets", "add", f"new{k}", "--kind", "ssh", "--host", f"new{k}"] for k in range(6)]
    procs = [subprocess.Popen([sys.executable, "-m", "compile_studio.cli", *c], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for c in commands]
    for proc in procs:
        _, err = proc.communicate(timeout=CLI_TIMEOUT_S)
        assert proc.returncode == 0, err
    assert sorted(load_targets(path).names()) == sorted(["local", *(f"new{k}" for k in range(6))])


def test_update_under_the_lock_sees_the_other_writer(tmp_path):
    path = tmp_path / "targets.json"
    started = threading.Event()

    def slow(targets: Targets) -> Targets:
        started.set()
        time.sleep(0.5)
        return targets.with_target(Target(name="first", kind="ssh", host="first"))

    thread = threading.Thread(target=update_targets, args=(slow, path))
    thread.start()
    started.wait(5)
    update_targets(lambda t: t.with_target(Target(name="second", kind="ssh", host="second")), path)
    thread.join(10)
    assert sorted(load_targets(path).names()) == ["first", "local", "second"]


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "targets.json"
    os.mkfifo(path)
    return path


@pytest.fixture
def zero_link(tmp_path) -> Path:
    path = tmp_path / "targets.json"
    path.symlink_to("/dev/zero")
    return path


@pytest.mark.parametrize("place", ["fifo", "zero_link"])
def test_a_fifo_or_a_device_as_the_targets_file_is_refused_promptly(place, request, tmp_path):
    path = request.getfixturevalue(place)
    env = _env(path)
    words = "FIFO" if place == "fifo" else "symbolic link"
    for args in (["targets"], ["targets", "list"],
                 ["targets", "add", "box", "--kind", "ssh", "--host", "box"],
                 ["run", "--target", "box", "--out", str(tmp_path / "runs"), "--quiet"]):
        start = time.monotonic()
        proc = _cli(*args, env=env)
        assert proc.returncode == 2, (args, proc.stderr)
        assert words in proc.stderr and str(path) in proc.stderr, proc.stderr
        assert time.monotonic() - start < CLI_TIMEOUT_S
    kind = os.lstat(path).st_mode
    assert stat.S_ISFIFO(kind) if place == "fifo" else stat.S_ISLNK(kind)  # left as it was
    direct = _env(Path("/dev/zero"))
    proc = _cli("targets", env=direct)
    assert proc.returncode == 2 and "character device" in proc.stderr


def _unblock_after(path: Path, seconds: float) -> threading.Thread:
    """Open ``path`` (a FIFO) for writing after ``seconds``, so that a reader blocked on it ends."""

    def run() -> None:
        time.sleep(seconds)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return  # no reader is waiting on it: nothing to unblock
        os.close(fd)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_the_target_chooser_starts_promptly_with_a_fifo_as_the_targets_file(qtbot, fifo, monkeypatch):
    from compile_studio.gui.targets_dialog import TargetChooser

    monkeypatch.setenv("COMPILE_STUDIO_TARGETS", str(fifo))
    _unblock_after(fifo, 8.0)
    start = time.monotonic()
    chooser = TargetChooser()
    qtbot.addWidget(chooser)
    assert time.monotonic() - start < 5.0
    assert chooser.targets.names() == ["local"] and chooser.is_local()
    assert "FIFO" in chooser.problem and "this machine" in chooser.problem


def test_the_window_starts_promptly_with_a_fifo_as_the_targets_file_and_says_why(qtbot, fifo, monkeypatch):
    from support.gui_helpers import open_window

    monkeypatch.setenv("COMPILE_STUDIO_TARGETS", str(fifo))
    _unblock_after(fifo, 20.0)
    start = time.monotonic()
    window = open_window(qtbot)
    assert time.monotonic() - start < 15.0
    assert window.target_chooser.current_name() == "local"
    assert "FIFO" in window.statusBar().currentMessage()


def test_the_chooser_shows_a_refused_target_as_invalid_and_cannot_choose_it(qtbot):
    from compile_studio.gui.targets_dialog import TargetChooser, TargetsDialog

    path = targets_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    bad = {"name": "evil", "kind": "ssh", "host": "h", "ssh_options": ["-o", "ProxyCommand <b>x</b>"]}
    path.write_text(json.dumps({"version": 1, "targets": [bad, {"name": "ok", "kind": "ssh", "host": "h"}]}))
    chooser = TargetChooser()
    qtbot.addWidget(chooser)
    texts = [chooser.combo.itemText(k) for k in range(chooser.combo.count())]
    assert texts == ["this machine", "ok", "evil (cannot be used)"]
    assert not chooser.combo.model().item(2).isEnabled()
    assert "ProxyCommand" in chooser.problem
    chooser.set_current("evil")
    assert chooser.current_name() == "local"
    dialog = TargetsDialog(chooser.targets)
    qtbot.addWidget(dialog)
    assert "evil" in dialog.invalid_label.text() and "ProxyCommand" in dialog.invalid_label.text()


def test_the_dialog_refuses_a_command_running_ssh_option(qtbot):
    from PySide6.QtWidgets import QDialog

    from compile_studio.gui.targets_dialog import TargetsDialog

    dialog = TargetsDialog(Targets([]))
    qtbot.addWidget(dialog)
    dialog._add()
    dialog.name.setText("box")
    dialog.kind.setCurrentIndex(1)  # SSH host
    dialog.edits["host"].setText("gpu-box")
    dialog.edits["ssh_options"].setText("-o 'ProxyCommand touch /tmp/owned'")
    dialog.save()
    assert dialog.result() != QDialog.DialogCode.Accepted
    assert "ProxyCommand" in dialog.problem_label.text() and "~/.ssh/config" in dialog.problem_label.text()
    assert not targets_file().exists()
    dialog.edits["ssh_options"].setText("-o ConnectTimeout=10 -C")
    dialog.save()
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert load_targets().get("box").ssh_options == ("-o", "ConnectTimeout=10", "-C")


def test_the_dialog_save_keeps_a_target_added_meanwhile(qtbot):
    from PySide6.QtWidgets import QDialog

    from compile_studio.gui.targets_dialog import TargetsDialog

    save_targets([Target(name="old", kind="ssh", host="old"), Target(name="gone", kind="ssh", host="gone")])
    dialog = TargetsDialog(load_targets())
    qtbot.addWidget(dialog)
    update_targets(lambda t: t.with_target(Target(name="other", kind="ssh", host="other")))
    dialog.list.setCurrentRow(dialog.targets.names().index("gone"))
    dialog._remove()
    dialog._add()
    dialog.name.setText("mine")
    dialog.edits["host"].setText("mine")
    dialog.save()
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert sorted(load_targets().names()) == ["local", "mine", "old", "other"]


def test_a_damaged_targets_file_is_not_overwritten_by_an_add(fifo, monkeypatch):
    monkeypatch.setenv("COMPILE_STUDIO_TARGETS", str(fifo))
    with pytest.raises(TargetsFileError, match="FIFO"):
        update_targets(lambda t: t.with_target(Target(name="x", kind="ssh", host="x")))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
