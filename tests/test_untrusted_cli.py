"""Received files and the CLI: named code is asked about, terminals get no raw escapes, sweeps
have one owner, received numbers are capped, ranges are counted, no flag is silently ignored."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compile_studio.cli import commands as cli
from compile_studio.core.config import BenchmarkConfig, ConfigError
from compile_studio.jobs.sweep import SweepRunner, local_worker_limit, new_sweep
from compile_studio.jobs.sweep_spec import SweepSpec, parse_range
from compile_studio.results.records.sweep_load import load_sweep
from compile_studio.results.records.sweep_record import RUNNING
from compile_studio.results.report.terminal import escape_controls
from compile_studio.results.storage.owner_lock import OWNER_LOCK
from compile_studio.results.storage.sweep_store import SweepFolder
from support.untrusted_helpers import edit_json, saved_run

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "compile_studio.cli"]
OSC52 = "\x1b]52;c;ZXZpbA==\x07"
CLEAR = "\x1b[2J\x9b0m\u202egnp.exe"


def _marker_code(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A Python file that leaves a marker file behind if it is ever imported."""
    marker = tmp_path / f"{name}.ran"
    code = tmp_path / f"{name}.py"
    code.write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "import torch\n\n"
        "def make_model():\n"
        "    return torch.nn.Linear(4, 2), (torch.randn(2, 4),)\n"
    )
    return code, marker


# -- 2: code named by a received file -------------------------------------------------------

def test_a_config_file_naming_code_is_refused_without_trust(tmp_path, capsys):
    code, marker = _marker_code(tmp_path, "their_model")
    backend, backend_marker = _marker_code(tmp_path, "their_backend")
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"config": {
        "model": "custom", "factory": f"{code}:make_model", "backend_modules": [str(backend)],
        "device": "cpu", "variants": ["eager"], "iterations": 5, "warmup": 1,
    }}))
    rc = cli.main(["run", "--config", str(config), "--out", str(tmp_path / "runs"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == cli.EXIT_BAD_CONFIG
    assert str(code) in err and str(backend) in err and "sha256" in err and "--trust-code" in err
    assert not marker.exists() and not backend_marker.exists()
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_flag_of_the_users_own_is_not_asked_about(tmp_path, capsys):
    """The factory given as a flag is the user's: the file only sets the sizes; it runs unasked."""
    code, marker = _marker_code(tmp_path, "my_model")
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps({"device": "cpu", "iterations": 5, "warmup": 1, "variants": ["eager"],
                                  "warmup_min_ms": 0, "rounds": 1}))
    rc = cli.main(["run", "--config", str(config), "--factory", f"{code}:make_model",
                   "--out", str(tmp_path / "runs"), "--quiet"])
    out = capsys.readouterr()
    assert rc == cli.EXIT_OK, out.err[-2000:]
    assert marker.exists()


def test_resuming_a_received_sweep_does_not_import_the_code_it_names(tmp_path, capsys):
    code, marker = _marker_code(tmp_path, "their_backend")
    base = BenchmarkConfig.from_dict({"layers": "8,8", "device": "cpu", "variants": ["eager"],
                                      "backend_modules": [str(code)]})
    folder = new_sweep(SweepSpec.parse("batch_size", "1,2"), base, tmp_path / "sweeps")
    rc = cli.main(["sweep", "--resume", str(folder.path), "--quiet"])
    err = capsys.readouterr().err
    assert rc == cli.EXIT_BAD_CONFIG
    assert str(code) in err and "sha256" in err
    assert not marker.exists()
    assert all(p.status == "pending" for p in load_sweep(folder.path).points)


def test_a_terminal_is_asked_and_no_means_no(tmp_path):
    from compile_studio.jobs.trust import agreed_in_terminal, named_code

    code, _ = _marker_code(tmp_path, "theirs")
    refs = named_code(BenchmarkConfig.from_dict({"model": "custom", "factory": f"{code}:make_model"}))

    class Tty:
        def __init__(self, answer):
            self.answer = answer

        def isatty(self):
            return True

        def readline(self, n=-1):
            return self.answer

    import io

    err = io.StringIO()
    assert agreed_in_terminal(refs, "run.json", False, stdin=Tty("\n"), stderr=err) is False
    assert "sha256" in err.getvalue() and "[y/N]" in err.getvalue()
    assert agreed_in_terminal(refs, "run.json", False, stdin=Tty("yes\n"), stderr=io.StringIO()) is True
    assert agreed_in_terminal(refs, "run.json", True, stdin=Tty("\n"), stderr=io.StringIO()) is True


# -- 6: escape bytes -------------------------------------------------------------------------

def _crafted_run(root: Path) -> Path:
    folder = saved_run(root, label="t" + OSC52)

    def craft(doc):
        doc["config"]["label"] = "label" + OSC52 + CLEAR
        doc["message"] = "note" + CLEAR
        doc["environment"]["torch"] = "2.x" + OSC52

    edit_json(folder, craft)
    return folder


def test_no_escape_byte_from_a_file_reaches_the_terminal(tmp_path, capsys):
    folder = _crafted_run(tmp_path / "runs")
    other = saved_run(tmp_path / "runs", label="plain")
    base = BenchmarkConfig.from_dict({"layers": "8,8", "device": "cpu", "variants": ["eager"],
                                      "label": "sweep" + OSC52})
    sweep = new_sweep(SweepSpec.parse("batch_size", "1,2"), base, tmp_path / "sweeps")
    for argv in (
        ["list", "--out", str(tmp_path / "runs")],
        ["show", str(folder)],
        ["compare", str(other), str(folder)],
        ["why", str(folder)],
        ["show", str(sweep.path)],
    ):
        cli.main(argv)
        out = capsys.readouterr()
        text = out.out + out.err
        for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert raw not in text, (argv, text[:400])
    cli.main(["show", str(folder)])
    assert "\\x1b]52" in capsys.readouterr().out


def test_escape_controls_keeps_text_and_newlines():
    assert escape_controls("a\tb\nc") == "a\tb\nc"
    assert escape_controls("x\x1b[2Jy\u202e") == "x\\x1b[2Jy\\u202e"
    assert escape_controls("über 1.2×") == "über 1.2×"


# -- 7: one owner per sweep ------------------------------------------------------------------

def _holder(folder: Path) -> subprocess.Popen:
    """Another process holding the sweep's owner lock until its stdin closes."""
    code = (
        "import fcntl, os, sys\n"
        f"fd = os.open({str(folder / OWNER_LOCK)!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\nsys.stdin.read()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_sweep_another_live_process_runs_is_not_resumed(tmp_path, capsys):
    base = BenchmarkConfig.from_dict({"layers": "8,8", "device": "cpu", "variants": ["eager"]})
    folder = new_sweep(SweepSpec.parse("batch_size", "1,2"), base, tmp_path / "sweeps")
    folder.update(lambda r: setattr(r, "status", RUNNING))
    holder = _holder(folder.path)
    try:
        assert load_sweep(folder.path).status == RUNNING  # not relabelled while its owner lives
        rc = cli.main(["sweep", "--resume", str(folder.path), "--quiet"])
        err = capsys.readouterr().err
        assert rc == cli.EXIT_BAD_CONFIG
        assert "being run by another process" in err
        assert all(p.status == "pending" for p in load_sweep(folder.path).points)
    finally:
        holder.stdin.close()
        holder.wait(10)
    # the owner ended: its lock went with it, and the sweep reads as interrupted
    assert load_sweep(folder.path).status != RUNNING


def test_a_free_lock_outweighs_a_reused_pid(tmp_path):
    base = BenchmarkConfig.from_dict({"layers": "8,8", "device": "cpu", "variants": ["eager"]})
    folder = new_sweep(SweepSpec.parse("batch_size", "1"), base, tmp_path / "sweeps")

    def left_running(record):
        record.status = RUNNING
        record.owner_pid = os.getppid()  # alive, but not the sweep's owner
        record.owner_host = ""

    folder.update(left_running)
    (folder.path / OWNER_LOCK).write_text("")
    assert load_sweep(folder.path).status != RUNNING


def test_a_symlinked_lock_file_is_refused(tmp_path):
    base = BenchmarkConfig.from_dict({"layers": "8,8", "device": "cpu", "variants": ["eager"]})
    folder = new_sweep(SweepSpec.parse("batch_size", "1"), base, tmp_path / "sweeps")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (folder.path / OWNER_LOCK).symlink_to(outside)
    outcome = SweepRunner(SweepFolder.open(folder.path)).run()
    assert outcome.refused and "not a regular file" in outcome.refused[0].message
    assert outside.read_text() == "keep"


# -- 9: a received concurrency is a suggestion --------------------------------------------------

def test_a_received_concurrency_is_capped_by_this_machine(tmp_path):
    base = BenchmarkConfig.from_dict({"layers": "8,8", "device": "cpu", "variants": ["eager"]})
    folder = new_sweep(SweepSpec.parse("batch_size", "1,2"), base, tmp_path / "sweeps")
    folder.update(lambda r: setattr(r, "concurrency", 64))
    received = SweepFolder.open(folder.path)
    assert received.record.concurrency == 64
    runner = SweepRunner(received, concurrency=received.record.concurrency)
    assert runner.concurrency == min(64, local_worker_limit()) <= (os.cpu_count() or 1)
    assert runner.asked_concurrency == 64


# -- 10: ranges counted before they are made ------------------------------------------------------

def test_a_huge_range_is_refused_at_once(tmp_path):
    started = time.perf_counter()
    for text in ("1:1000000000000:+1", "1:100000000:+1", "1:999999999999999999:+1"):
        with pytest.raises(ConfigError) as info:
            parse_range("batch_size", text)
        assert "points" in info.value.problems[0].message
    assert time.perf_counter() - started < 1.0
    proc = subprocess.run(
        [*CLI, "sweep", "--param", "batch_size", "--range", "1:1000000000000:+1", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "at most" in proc.stderr
    assert not any(tmp_path.iterdir())


# -- no flag silently ignored ---------------------------------------------------------------------

@pytest.mark.parametrize("argv, flag", [
    (["--factory", "{code}:make_model", "--model", "mlp"], "--factory"),
    (["--transformer", "64,2,128,16,1"], "--transformer"),
    (["--cnn", "16,3,8,8", "--model", "mlp"], "--cnn"),
    (["--model-path", "{tmp}"], "--model-path"),
    (["--factory", "{code}:make_model", "--model-path", "{tmp}"], "--model-path"),
    (["--factory", "{code}:make_model", "--batch-size", "8"], "--batch-size"),
    (["--factory", "{code}:make_model", "--layers", "8,8"], "--layers"),
    (["--model", "transformer", "--layers", "8,8"], "--layers"),
])
def test_a_flag_that_does_not_apply_is_refused(tmp_path, capsys, argv, flag):
    code, marker = _marker_code(tmp_path, "model")
    argv = [a.format(code=code, tmp=tmp_path) for a in argv]
    rc = cli.main(["run", *argv, "--device", "cpu", "--out", str(tmp_path / "runs"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == cli.EXIT_BAD_CONFIG
    assert flag in err
    assert not marker.exists()


def test_a_factory_that_takes_the_field_gets_it(tmp_path):
    from compile_studio.cli.config_flags import flags_that_do_not_apply

    code = tmp_path / "sized.py"
    code.write_text("def make_model(batch_size=1, layers='4,4'):\n    pass\n")
    config = BenchmarkConfig.from_dict({"model": "custom", "factory": f"{code}:make_model"})
    assert flags_that_do_not_apply(config, {"batch_size", "layers", "factory"}) == []
    assert flags_that_do_not_apply(dataclasses.replace(config, model="mlp"), {"layers"}) == []


# -- environment variables --------------------------------------------------------------------------

BAD_ENV = {
    "COMPILE_STUDIO_HELLO_TIMEOUT_S": "soon",
    "COMPILE_STUDIO_TIMING_CPU": "core-one",
    "COMPILE_STUDIO_WORKER_CPUS": "a,b",
    "COMPILE_STUDIO_PIN_CPUS": "maybe\x1b[2J",
    "COMPILE_STUDIO_STANDBY": "perhaps",
    "COMPILE_STUDIO_LIVE_REFRESH_MS": "fast",
    "COMPILE_STUDIO_WORKER_MEMORY_LIMIT": "lots",
    "COMPILE_STUDIO_WORKER_PREFIX": "'unclosed",
}


def test_bad_environment_values_give_defaults_and_one_line_not_a_traceback(tmp_path):
    env = {**os.environ, **BAD_ENV, "PYTHONPATH": str(REPO / "app")}
    env.pop("COMPILE_STUDIO_WORKER_PREFIX")  # a prefix that cannot be read fails the start (tested apart)
    proc = subprocess.run(
        [*CLI, "run", "--layers", "8,8", "--batch-size", "2", "--variants", "eager", "--iterations", "5",
         "--warmup", "1", "--warmup-min-ms", "0", "--rounds", "1", "--device", "cpu", "--quiet",
         "--out", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path,
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "COMPILE_STUDIO_HELLO_TIMEOUT_S" in proc.stderr and "ignored" in proc.stderr
    window = subprocess.run(
        [sys.executable, "-c", "import compile_studio.gui.main_window"],
        capture_output=True, text=True, timeout=120, env={**env, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert window.returncode == 0 and "Traceback" not in window.stderr, window.stderr[-2000:]
    prefix = subprocess.run(
        [*CLI, "run", "--layers", "8,8", "--variants", "eager", "--device", "cpu", "--quiet",
         "--out", str(tmp_path / "runs2")],
        capture_output=True, text=True, timeout=120,
        env={**env, "COMPILE_STUDIO_WORKER_PREFIX": "'unclosed"}, cwd=tmp_path,
    )
    assert "Traceback" not in prefix.stderr and prefix.returncode in (2, 3)
    assert "COMPILE_STUDIO_WORKER_PREFIX" in prefix.stderr
