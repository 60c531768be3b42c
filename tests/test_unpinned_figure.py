"""A pinned run records, and shows, what a user's own program gets: the calls with no thread pinned."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compile_studio.core import affinity
from compile_studio.results import load_run
from compile_studio.results.report.formatting import run_context

CLI = [sys.executable, "-m", "compile_studio.cli"]
FLAGS = [
    "--layers", "16,8", "--batch-size", "2", "--device", "cpu", "--variants", "eager,eager-aa",
    "--iterations", "30", "--warmup", "2", "--warmup-min-ms", "0", "--no-diagnostics", "--quiet",
]


def _run(tmp_path: Path, pin: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    env = dict(os.environ, **{affinity.PIN_ENV: pin})
    p = subprocess.run(
        [*CLI, "run", "--out", str(tmp_path), *FLAGS], capture_output=True, text=True, env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    folder = next(line[len("saved: "):].strip() for line in p.stdout.splitlines() if line.startswith("saved: "))
    return p, Path(folder)


def test_a_pinned_run_records_and_shows_its_unpinned_figure(tmp_path):
    if affinity.plan() is None:
        pytest.skip("one CPU available (or pinning turned off): nothing is pinned")
    p, folder = _run(tmp_path, "1")
    run = load_run(folder)
    assert run.measurement["cpu_pinning"].startswith("timing thread alone")
    for name in ("eager", "eager-aa"):
        ms = run.variants[name].unpinned_ms
        assert isinstance(ms, float) and 0 < ms < 1000, (name, ms)
    assert "unpinned: eager " in p.stdout
    assert "as in your own program" in p.stdout
    shown = subprocess.run([*CLI, "show", str(folder)], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "unpinned: eager " in shown.stdout and "eager-aa " in shown.stdout
    assert dict(run_context(run))["unpinned"].startswith("eager ")


def test_an_unpinned_run_has_no_second_figure(tmp_path):
    p, folder = _run(tmp_path, "0")
    run = load_run(folder)
    assert not run.measurement["cpu_pinning"].startswith("timing thread alone")
    assert all(v.unpinned_ms is None for v in run.variants.values())
    assert "unpinned:" not in p.stdout
    assert "unpinned" not in dict(run_context(run))
