"""Watch a rectangle of the X screen and record when its pixels change (``ui_responsiveness.py``).

Run as its own process, with its own ``QGuiApplication`` on the same X display as
the window it watches: ``python bench/screen_watch.py RECT OUT STOP [PERIOD_MS]``.
Every ``PERIOD_MS`` (100) it reads the global rectangle ``x y w h`` from the
file RECT (nothing is grabbed until it exists; it is re-read each time, so the
window may write it late), grabs it with ``QScreen.grabWindow(0, x, y, w, h)``
— the X server's pixels, not a widget's own rendering — and hashes them. When
the file STOP exists it writes OUT (JSON): the CLOCK_MONOTONIC times (ns, the
clock ``time.monotonic`` reads system-wide) of the grabs whose pixels differ
from the grab before, the number of grabs, the mean grab time and the
watcher's own CPU seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path


def changes_between(changes_ns: list[int], start_ns: int, end_ns: int) -> int:
    """How many recorded changes fall within [start_ns, end_ns]."""
    return sum(1 for t in changes_ns if start_ns <= t <= end_ns)


def main(argv: list[str]) -> int:
    rect_path, out_path, stop_path = (Path(a) for a in argv[:3])
    period_s = (float(argv[3]) if len(argv) > 3 else 100.0) / 1000.0
    os.environ.pop("QT_QPA_PLATFORM", None)  # the real display, never offscreen
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication(sys.argv[:1])
    screen = app.primaryScreen()
    last: bytes | None = None
    changes: list[int] = []
    grabs = 0
    grab_s = 0.0
    rect: tuple[int, int, int, int] | None = None
    next_t = time.monotonic()
    while not stop_path.exists():
        try:
            x, y, w, h = (int(v) for v in rect_path.read_text().split())
            if (x, y, w, h) != rect:
                rect, last = (x, y, w, h), None  # a new rectangle: a new baseline
        except (OSError, ValueError):
            rect = None
        if rect is not None:
            t0 = time.monotonic()
            image = screen.grabWindow(0, *rect).toImage()
            digest = hashlib.blake2b(bytes(image.constBits()), digest_size=16).digest()
            t1 = time.monotonic_ns()
            grab_s += t1 / 1e9 - t0
            grabs += 1
            if last is not None and digest != last:
                changes.append(t1)
            last = digest
        next_t += period_s
        time.sleep(max(0.0, next_t - time.monotonic()))
        if next_t < time.monotonic() - period_s:
            next_t = time.monotonic()  # fell behind (a busy machine): do not catch up in a burst
    times = os.times()
    Path(out_path).write_text(json.dumps({
        "changes_ns": changes, "grabs": grabs, "grab_ms": grab_s * 1000.0 / max(grabs, 1),
        "rect": rect, "cpu_s": times.user + times.system, "screen": screen.name(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
