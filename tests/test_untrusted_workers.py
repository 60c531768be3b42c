"""Starting workers safely: no code from the current folder, clear failures, bounded input, SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.session import RunSession
from compile_studio.launchers.supervisor import WORKER_PREFIX_ENV, WorkerLauncher, WorkerProcess
from compile_studio.results import load_run

CLI = [sys.executable, "-m", "compile_studio.cli"]
HUGE = "16," + "9" * 5000


def cli(*args, timeout=300, **kw):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, **kw)


def tiny_flags(c):
    return [
        "--layers", c["layers"], "--batch-size", str(c["batch_size"]), "--device", "cpu",
        "--iterations", str(c["iterations"]), "--warmup", str(c["warmup"]),
        "--variants", "eager",
    ]


def test_torch_py_in_the_current_folder_is_never_imported(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "torch.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nraise SystemExit(9)\n")
    p = cli("env", cwd=tmp_path, timeout=180)
    assert not marker.exists()
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr


def test_the_isolated_compile_process_never_imports_the_users_folder(tmp_path):
    """The worker's own child (a variant's compile in a fresh process) starts safely too."""
    marker = tmp_path / "ran"
    (tmp_path / "torch.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nraise SystemExit(9)\n")
    p = cli(
        "run", "--quiet", "--out", str(tmp_path / "runs"), "--layers", "8,8", "--batch-size", "2",
        "--device", "cpu", "--iterations", "3", "--warmup", "0", "--rounds", "1",
        "--variants", "eager,aot_eager", "--compile-timing", "isolated",
        cwd=tmp_path, timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert not marker.exists()


def test_worker_returns_to_the_users_folder(tmp_path):
    """Relative paths in a config still mean the folder the user started in."""
    launcher = WorkerLauncher(command=(sys.executable, "-c", textwrap.dedent("""
        import os, sys
        from compile_studio.worker import _return_to_user_folder
        _return_to_user_folder()
        print(os.getcwd(), "" in sys.path)
    """)), env={**__import__("os").environ, protocol.WORKER_CWD_ENV: str(tmp_path)})
    lines = []
    worker = WorkerProcess(on_log=lines.append, launcher=launcher)
    list(worker.events())
    worker.wait(30)
    assert lines == [f"{tmp_path} False"]


def test_prefix_is_split_like_a_shell():
    launcher = WorkerLauncher.local({WORKER_PREFIX_ENV: "env 'A=b c' nice"})
    assert launcher.prefix == ("env", "A=b c", "nice")
    bad = WorkerLauncher.local({WORKER_PREFIX_ENV: "ssh 'unclosed"})
    try:
        bad.argv()
    except OSError as exc:
        assert "cannot be read" in str(exc)
    else:
        raise AssertionError("an unreadable prefix must fail the launch")


def test_missing_worker_command_is_a_clear_message_and_no_folder(tmp_path, tiny_config):
    import os

    env = {**os.environ, WORKER_PREFIX_ENV: "/nonexistent/compile-studio-launcher"}
    p = cli("run", *tiny_flags(tiny_config), "--out", str(tmp_path / "runs"), env=env)
    assert p.returncode == 3
    assert "Traceback" not in p.stderr + p.stdout
    assert "was not found" in p.stderr
    assert not any((tmp_path / "runs").iterdir()) if (tmp_path / "runs").exists() else True


def test_silent_worker_times_out(tiny_config):
    launcher = WorkerLauncher(command=(sys.executable, "-c", "import time; time.sleep(120)"))
    events = []
    session = RunSession(BenchmarkConfig(**tiny_config), None, launcher=launcher,
                         on_event=events.append, hello_timeout=2)
    start = time.monotonic()
    outcome = session.run()
    assert time.monotonic() - start < 30
    assert outcome.status == "failed"
    assert "did not say hello within 2 s" in outcome.run.message


def test_malformed_event_is_an_internal_error_shown_in_the_log(tiny_config):
    hello = protocol.encode(protocol.HelloEvent(protocol=protocol.PROTOCOL_VERSION))
    script = (
        "import sys\n"
        f"print({hello.strip()!r}, flush=True)\n"
        "sys.stdin.readline()\n"
        "print('{\"type\":\"samples\"}', flush=True)\n"
        "print('{\"type\":\"done\",\"status\":\"completed\"}', flush=True)\n"
    )
    launcher = WorkerLauncher(command=(sys.executable, "-c", script))
    events, log = [], []
    session = RunSession(BenchmarkConfig(**tiny_config), None, launcher=launcher,
                         on_event=events.append, on_log=log.append)
    outcome = session.run()
    errors = [e for e in events if isinstance(e, protocol.ErrorEvent)]
    assert errors and errors[0].kind == protocol.ErrorKind.INTERNAL
    assert '{"type":"samples"}' in errors[0].message
    assert any('{"type":"samples"}' in line for line in log)
    assert outcome.status == "failed"


def test_huge_layer_number_everywhere(tmp_path, capsys):
    """The flag in a process of its own; the config files through main() in this one."""
    from compile_studio.cli import commands as cli_commands

    p = cli("run", "--layers", HUGE, "--out", str(tmp_path))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "layers" in p.stderr
    cfg = tmp_path / "c.json"
    cfg.write_text('{"layers": "' + HUGE + '"}')
    assert cli_commands.main(["run", "--config", str(cfg), "--out", str(tmp_path)]) == 2
    assert "Traceback" not in capsys.readouterr().err
    cfg.write_text('{"batch_size": ' + "9" * 5000 + "}")
    assert cli_commands.main(["run", "--config", str(cfg), "--out", str(tmp_path)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_worker_stdin_with_a_huge_number_says_done(tiny_config):
    for line in (json.dumps({**tiny_config, "layers": HUGE}),
                 '{"batch_size": ' + "9" * 5000 + "}"):
        worker = WorkerProcess()
        worker.send_config(line)
        events = list(worker.events())
        worker.wait(60)
        assert isinstance(events[-1], protocol.DoneEvent), events[-1]
        assert any(isinstance(e, protocol.ErrorEvent) for e in events)


def test_sigterm_is_handled_like_ctrl_c(tmp_path, tiny_config):
    tiny_config["iterations"] = 500_000
    proc = subprocess.Popen(
        [*CLI, "run", *tiny_flags(tiny_config), "--out", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    folders = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        folders = list(tmp_path.iterdir())
        if folders and (folders[0] / "samples.csv").exists() and (
            folders[0] / "samples.csv"
        ).read_text().count("measure") > 10:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    run = load_run(folders[0])
    assert run.status == "stopped"
    assert run.variants["eager"].samples.count("measure") > 10
    assert "eager" in out and "saved:" in out
