"""compile-studio-cli: run, exit codes, show and compare."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compile_studio.results import load_run

pytestmark = pytest.mark.long

CLI = [sys.executable, "-m", "compile_studio.cli"]


def cli(*args, timeout=300, **kw):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, **kw)


def tiny_flags(tiny_config):
    """The tiny configuration as flags: the first call timed in the run (the fresh compile
    process of the default ``isolated`` timing is what the default run above starts), no
    warm-up time floor, no diagnostics pass."""
    c = tiny_config
    return [
        "--layers", c["layers"], "--batch-size", str(c["batch_size"]), "--device", "cpu",
        "--iterations", str(c["iterations"]), "--warmup", str(c["warmup"]),
        "--variants", ",".join(c["variants"]), "--compile-timing", c["compile_timing"],
        "--warmup-min-ms", str(c["warmup_min_ms"]), "--no-diagnostics",
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
    from compile_studio.results.report.formatting import fmt_ms

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


# -- the report's CLI items: one error line, the app's own hello timeout, --no-dynamic, compare across
# -- batch sizes, layer lists in config files ---------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def test_a_target_whose_worker_cannot_start_is_one_error_line(tmp_path, capsys):
    """``run --target NAME`` whose worker command does not exist: one ``error:`` line, no
    "(internal)", exit 3 (a registered kind stands in for an unreachable SSH host)."""
    from compile_studio.cli import commands as cli_commands
    from compile_studio.launchers.supervisor import WorkerLauncher
    from compile_studio.launchers.target_kinds import TargetKind, register_kind, unregister_kind
    from compile_studio.launchers.targets import targets_file

    missing = str(tmp_path / "no-such-login")
    register_kind(TargetKind(
        name="nowhere", words="Nowhere", fields=frozenset({"host"}),
        launcher=lambda target, plan: WorkerLauncher(prefix=(missing,)),
        describe=lambda t: f"nowhere {t.host}", check=lambda values: [], order=90,
    ))
    try:
        path = targets_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"version": 1, "targets": [{"name": "bogus", "kind": "nowhere", "host": "x"}]}))
        code = cli_commands.main(["run", "--target", "bogus", "--out", str(tmp_path / "runs"),
                                  "--layers", "8,8", "--device", "cpu", "--iterations", "2", "--rounds", "1"])
    finally:
        unregister_kind("nowhere")
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line]
    assert code == 3
    assert len(errors) == 1, err
    assert errors[0].startswith("error: cannot start the worker process:") and missing in errors[0]
    assert "(internal)" not in err


def test_a_worker_stopped_by_the_hello_timeout_is_said_to_be_stopped_by_the_app(tmp_path):
    """A real worker command that never says hello: the app stops it, and says so (not "out of
    memory killer?")."""
    env = {
        **os.environ,
        "COMPILE_STUDIO_WORKER_PREFIX": f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(60)'",
        "COMPILE_STUDIO_HELLO_TIMEOUT_S": "1",
    }
    started = time.monotonic()
    p = cli("run", "--layers", "8,8", "--device", "cpu", "--iterations", "2", "--rounds", "1", "--variants", "eager",
            "--quiet", "--out", str(tmp_path), env=env, timeout=60)
    assert time.monotonic() - started < 40
    assert p.returncode == 3, p.stderr
    text = p.stdout + p.stderr
    assert "did not say hello within 1 s" in text
    assert "did not say hello within 1 s, so Compile Studio stopped it" in text
    assert "and was stopped (" not in text  # said once, not twice in one sentence
    assert "out of memory" not in text


def test_exit_descriptions_tell_the_apps_own_kill_from_another():
    from compile_studio.launchers.supervisor import WorkerLauncher, WorkerProcess

    sleeper = WorkerLauncher(command=(sys.executable, "-c", "import time; time.sleep(60)"))
    ours = WorkerProcess(launcher=sleeper)
    time.sleep(0.3)
    ours.kill()
    ours.wait(10)
    assert ours.exit_description().startswith("Compile Studio stopped it after 0 s without a hello")
    theirs = WorkerProcess(launcher=sleeper)
    os.killpg(theirs.pid, signal.SIGKILL)  # as the OOM killer would
    theirs.wait(10)
    assert theirs.exit_description() == "killed by SIGKILL (out of memory killer?)"
    stubborn = WorkerProcess(launcher=WorkerLauncher(command=(
        sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)",
    )))
    time.sleep(0.3)
    stubborn.stop(grace_s=0.2, term_s=0.2)
    assert stubborn.exit_description() == "Compile Studio stopped it with SIGKILL when it did not stop on request"


def test_no_dynamic_is_the_old_spelling_of_dynamic_auto_and_says_so(capsys):
    from compile_studio.cli.commands import build_parser
    from compile_studio.cli.config_flags import config_from_args

    parser = build_parser()
    config = config_from_args(parser.parse_args(["run", "--no-dynamic"]))
    assert config.dynamic == "auto"
    err = capsys.readouterr().err
    assert "--no-dynamic means --dynamic auto, not --dynamic false" in err
    assert config_from_args(parser.parse_args(["run", "--dynamic", "false"])).dynamic == "false"
    assert config_from_args(parser.parse_args(["run", "--dynamic"])).dynamic == "true"
    help_text = parser._subparsers._group_actions[0].choices["run"].format_help()  # type: ignore[union-attr]
    flat = " ".join(help_text.split())
    assert "--no-dynamic old spelling of --dynamic auto, kept for scripts: it does not turn dynamic off" in flat
    assert "(that is --dynamic false)" in flat


def _recorded(store, when, **config):
    from compile_studio.core import protocol
    from compile_studio.results.storage.recorder import RunRecorder

    rec = RunRecorder({"layers": "8,8", "batch_size": 2, "variants": ["eager", "aot_eager"], **config},
                      store.new_run_folder("r", when))
    batch = config.get("batch_size", 2)
    for e in [
        {"type": "hello", "environment": {"torch": "x", "devices": ["cpu"]}},
        *[
            event
            for k, name in enumerate(("eager", "aot_eager"))
            for event in (
                {"type": "samples", "variant": name, "phase": "measure", "first_iteration": 0,
                 "wall_ms": [batch * (1.0 - 0.2 * k) + 0.001 * (i % 5) for i in range(30)], "device_ms": None},
                {"type": "variant_done", "variant": name, "status": "done", "allclose": True},
            )
        ],
        {"type": "done", "status": "completed"},
    ]:
        rec.handle(protocol.from_dict(e))
    return rec.folder


def test_compare_across_batch_sizes_is_per_sample_and_across_models_has_no_ratio(tmp_path, capsys):
    from datetime import datetime

    from compile_studio.cli import commands as cli_commands
    from compile_studio.results import RunStore

    store = RunStore(tmp_path)
    small = _recorded(store, datetime(2026, 12, 1), batch_size=2)
    large = _recorded(store, datetime(2026, 12, 2), batch_size=8)  # 4× the time per call, same per sample
    wider = _recorded(store, datetime(2026, 12, 3), layers="8,16,8")
    assert cli_commands.main(["compare", str(small), str(large)]) == 0
    out = capsys.readouterr().out
    assert "vs #1 per sample" in out
    assert "the runs differ in batch size (#1: 2, #2: 8)" in out
    rows = [line.split() for line in out.splitlines() if re.match(r"#2\s+\S+\s+(eager|aot_eager)\s", line)]
    assert len(rows) == 2 and all(row[1] == "1.00×" for row in rows)  # not 0.25×: the same time per sample
    assert cli_commands.main(["compare", str(small), str(small)]) == 0
    same = capsys.readouterr().out
    assert "vs #1 per sample" not in same and "vs #1 = run #1's median" in same
    assert cli_commands.main(["compare", str(small), str(wider)]) == 0
    out = capsys.readouterr().out
    assert "no vs #1 column: the runs differ in layers" in out
    rows = [line.split() for line in out.splitlines() if re.match(r"#2\s+(eager|aot_eager)\s", line)]
    assert len(rows) == 2 and all("×" not in row[2] for row in rows)


def test_a_config_file_takes_layers_as_a_list(tmp_path, capsys):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"layers": [8, 16, 4], "batch_size": 2, "variants": ["eager"],
                               "iterations": 3, "warmup": 0, "warmup_min_ms": 0, "device": "cpu",
                               "rounds": 1, "diagnostics": False}))
    p = cli("run", "--config", str(cfg), "--out", str(tmp_path / "o"), "--quiet")
    assert p.returncode == 0, p.stderr
    assert "MLP 8,16,4 · batch 2" in p.stdout
    cfg.write_text(json.dumps({"layers": [8, "wide"]}))
    from compile_studio.cli import commands as cli_commands

    assert cli_commands.main(["run", "--config", str(cfg), "--out", str(tmp_path / "o")]) == 2
    assert "layers" in capsys.readouterr().err


def test_the_example_config_runs_through_the_cli(tmp_path):
    """examples/config.json (the README's) with small sizes laid over it by flags."""
    example = json.loads((ROOT / "examples" / "config.json").read_text())
    assert isinstance(example["layers"], list)
    p = cli("run", "--config", str(ROOT / "examples" / "config.json"), "--device", "cpu",
            "--iterations", "4", "--warmup", "1", "--warmup-min-ms", "0", "--rounds", "2",
            "--variants", "eager,aot_eager", "--compile-timing", "in_run", "--no-diagnostics",
            "--quiet", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    layers = ",".join(str(n) for n in example["layers"])
    assert f"MLP {layers} · batch {example['batch_size']}" in p.stdout
    (folder,) = tmp_path.iterdir()
    run = load_run(folder)
    assert run.config.label == example["label"] and run.config.layers == layers
