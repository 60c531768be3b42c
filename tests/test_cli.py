"""compile-studio-cli: run, exit codes, show and compare."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from compile_studio.results import load_run

CLI = [sys.executable, "-m", "compile_studio.cli"]


def cli(*args, timeout=300, **kw):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, **kw)


def tiny_flags(tiny_config):
    c = tiny_config
    return [
        "--layers", c["layers"], "--batch-size", str(c["batch_size"]), "--device", "cpu",
        "--iterations", str(c["iterations"]), "--warmup", str(c["warmup"]),
        "--variants", ",".join(c["variants"]),
    ]


@pytest.mark.inductor
def test_run_with_defaults_prints_table(tmp_path):
    """The default seed MLP (eager + Inductor default) on this CPU-only machine."""
    p = cli("run", "--out", str(tmp_path), timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "MLP 1024,1024,512,10 · batch 256" in p.stdout
    assert "speedup [95% CI]" in p.stdout and "break-even calls" in p.stdout
    assert "= default:" in p.stdout
    (folder,) = tmp_path.iterdir()
    run = load_run(folder)
    assert run.status == "complete"
    assert run.variants["default"].samples.count("measure") == 200


def test_run_show_compare(tmp_path, tiny_config):
    out = tmp_path / "runs"
    p1 = cli("run", *tiny_flags(tiny_config), "--out", str(out), "--label", "first")
    assert p1.returncode == 0, p1.stderr
    p2 = cli("run", *tiny_flags(tiny_config), "--batch-size", "8", "--out", str(out))
    assert p2.returncode == 0, p2.stderr
    folders = sorted(out.iterdir())
    assert len(folders) == 2
    assert "aot_eager" in p1.stdout and "saved:" in p1.stdout
    show = cli("show", str(folders[0]))
    assert show.returncode == 0
    run = load_run(folders[0])
    median = next(v for v in run.variants.values() if v.name == "aot_eager").stats().median
    from compile_studio.results.formatting import fmt_ms

    assert fmt_ms(median) in show.stdout
    comp = cli("compare", *map(str, folders))
    assert comp.returncode == 0
    assert "first" in comp.stdout and "batch 8" in comp.stdout
    assert comp.stdout.count("aot_eager") >= 2
    listing = cli("list", "--out", str(out))
    assert listing.returncode == 0 and folders[0].name in listing.stdout


def test_bad_config_exit_2_lists_every_problem(tmp_path):
    p = cli("run", "--layers", "10,abc", "--batch-size", "0", "--iterations", "0", "--out", str(tmp_path))
    assert p.returncode == 2
    assert "layers" in p.stderr and "batch_size" in p.stderr and "iterations" in p.stderr
    assert not any(tmp_path.iterdir())


def test_device_not_there_exit_2(tmp_path, tiny_config):
    p = cli("run", *tiny_flags(tiny_config), "--device", "cuda:7", "--out", str(tmp_path))
    assert p.returncode == 2
    assert "cuda:7 is not available" in p.stderr


def test_malformed_config_file_exit_2(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text('{"layers": "8,8",')
    p = cli("run", "--config", str(cfg), "--out", str(tmp_path / "o"))
    assert p.returncode == 2
    assert "not valid JSON" in p.stderr


def test_config_file_with_flag_override(tmp_path, tiny_config):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(tiny_config))
    p = cli("run", "--config", str(cfg), "--iterations", "7", "--out", str(tmp_path / "o"), "--quiet")
    assert p.returncode == 0, p.stderr
    (folder,) = (tmp_path / "o").iterdir()
    run = load_run(folder)
    assert run.variants["eager"].samples.count("measure") == 7


def test_interrupt_saves_partial_run_exit_130(tmp_path, tiny_config):
    tiny_config["iterations"] = 500_000
    proc = subprocess.Popen(
        [*CLI, "run", *tiny_flags(tiny_config), "--out", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        folders = list(tmp_path.iterdir())
        if folders and (folders[0] / "samples.csv").exists() and (
            folders[0] / "samples.csv"
        ).read_text().count("measure") > 10:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    run = load_run(folders[0])
    assert run.status == "stopped"
    assert run.variants["eager"].samples.count("measure") > 10
    assert "interrupted" in err


def test_show_damaged_run(tmp_path):
    (tmp_path / "run.json").write_text("{")
    p = cli("show", str(tmp_path))
    assert p.returncode == 3 and "damaged" in p.stderr
