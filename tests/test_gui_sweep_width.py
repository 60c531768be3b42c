"""The Sweep dock never widens the window past its screen, and a sweep point's hover label is
never cut off (real windows on offscreen screens of 1280×760 and 1500×950, each in its own process:
a screen's size is fixed when the application starts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent


@pytest.mark.parametrize("size", [(1280, 760), (1500, 950)])
def test_the_sweep_dock_keeps_the_window_on_its_screen(tmp_path, size):
    width, height = size
    screen = tmp_path / "screen.json"
    screen.write_text(json.dumps({
        "windowFrameMargins": False,
        "screens": [{"name": "s", "x": 0, "y": 0, "width": width, "height": height,
                     "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}],
    }))
    env = dict(os.environ, QT_QPA_PLATFORM=f"offscreen:configfile={screen}")
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS.parent / "app"), str(TESTS), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(TESTS / "support" / "gui_screen_check.py"), str(width), str(height), str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["screen"] == width
    for step in ("resized", "docked", "shape_sweep", "point_sweep"):
        assert seen[step] <= seen["screen"], (step, seen)
    assert "batch_size = 64" in seen["hover_text"]
    assert seen["hover_inside"], (seen["hover"], seen["room"])
