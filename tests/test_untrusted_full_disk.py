"""A real full filesystem (a small tmpfs, mounted where the tests run as root) under a CLI run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from compile_studio.results import RunStore

ITERATIONS = 8_000


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 128 KiB tmpfs at ``tmp_path/disk``; skipped where mounting is not allowed."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(mount)],
        capture_output=True, text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_tmpfs_stops_the_run_prints_every_sample_from_memory_and_exits_3(small_tmpfs):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "app")}
    done = subprocess.run(
        [
            sys.executable, "-m", "compile_studio.cli", "run", "--quiet",
            "--out", str(small_tmpfs / "runs"),
            "--layers", "16,16,4", "--batch-size", "2", "--variants", "eager,aot_eager",
            "--iterations", str(ITERATIONS), "--warmup", "5", "--warmup-min-ms", "0",
            "--rounds", "1",
        ],
        capture_output=True, text=True, env=env, timeout=180,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "not saved in full: the disk is full at" in done.stdout
    assert "(the table above is from memory)" in done.stdout
    assert "error (write_failed): the disk is full at" in done.stderr
    # the table from memory summarises what was measured; the variant not started is listed
    eager = next(line for line in done.stdout.splitlines() if line.startswith("eager "))
    assert eager.split()[1] == "failed" and re.search(r"\s0\.\d+\s", eager)  # a median in ms
    assert any(line.split()[:3] == ["aot_eager", "not", "run"] for line in done.stdout.splitlines())
    # the partial folder on the full disk still lists and loads as a run (never a crash)
    listings = RunStore(small_tmpfs / "runs").list_runs()
    assert len(listings) == 1
