"""The Sweep dock beside the window's panes (a real window on an offscreen screen of 1280×760,
in its own process: a screen's size is fixed when the application starts): the form has no
horizontal scroll bar, the plots keep their least width, every sweep plot lies inside the window
with its titles apart and its last value's label shown; the empty sweep's note lies clear of the
line at 1×; a shape sweep's few-call speedups are written as the range their calls give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


def _check(tmp_path: Path, width: int, height: int) -> dict:
    screen = tmp_path / "screen.json"
    screen.write_text(json.dumps({
        "windowFrameMargins": False,
        "screens": [{"name": "s", "x": 0, "y": 0, "width": width, "height": height,
                     "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}],
    }))
    env = dict(os.environ, QT_QPA_PLATFORM=f"offscreen:configfile={screen}")
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS.parent / "app"), str(TESTS), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(TESTS / "support" / "gui_sweep_fit_check.py"), str(width), str(height), str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_sweep_dock_leaves_the_form_and_plots_whole_at_1280x760(tmp_path):
    seen = _check(tmp_path, 1280, 760)
    assert seen["window"] == [1280, 760]
    assert not seen["form_hbar"], seen["panes"]
    form, centre, history = seen["panes"]
    assert centre >= seen["plots_least"] and history >= 160, seen["panes"]
    assert seen["dock"] <= 0.45 * 1280, seen["dock"]
    assert seen["sweep_widget_inside"] and seen["sweep_inside"], seen["sweep_plots"]
    for name, ticks in seen["ticks"].items():
        assert ticks == ["8", "64", "512"], (name, ticks)
    # titles side by side do not run into each other
    rects = seen["title_rects"]
    for left, right in (("speedup", "latency"), ("compile", "break_even")):
        assert rects[left][2] < rects[right][0], (rects[left], rects[right])
    # the empty sweep's note: inside its plot, clear of the line at 1×
    note, one = seen["note"], seen["one_line_y"]
    room = seen["note_room"]
    assert note[3] < one or note[1] > one, (note, one)
    assert room[0] <= note[0] and note[2] <= room[2] and room[1] <= note[1] and note[3] <= room[3], (note, room)
    # a shape sweep's labels: ranges, never a bare ≈ figure
    assert seen["shape_inside"]
    assert all("≈" not in label for label in seen["shape_labels"]), seen["shape_labels"]
