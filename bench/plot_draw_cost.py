"""What one pause's draw costs the window as a run grows: CPU time of bringing the plots up
to date and of painting them, with 4 series of up to 100,000 calls each (1 % of them spikes
400× the median), in the real window (offscreen unless a display is set).

Per 5,000 calls added to each series it does what the window does in a worker's pause
(the plots brought up to date, then painted), and prints the main thread's CPU milliseconds of each
(``time.thread_time``: what the machine's load does to wall time is left out).

    python bench/plot_draw_cost.py [--calls 100000] [--step 5000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000, help="calls per series at the end")
    parser.add_argument("--step", type=int, default=5_000, help="calls added to each series between two pauses")
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from compile_studio.gui.main_window import MainWindow

    app = QApplication([])
    window = MainWindow()
    window.resize(1400, 900)
    window.show()
    for _ in range(20):
        app.processEvents()
    views = getattr(window, "views", window)  # a window of an older version held its plots itself
    plots = views.plots
    keys = ["eager", "aot_eager", "default", "eager-aa"]
    for k in keys:
        plots.add_series(k, k)
    rng = np.random.default_rng(0)
    with open("/proc/loadavg") as fh:
        print(f"load {fh.read().strip()}; {len(keys)} series, {args.step:,} calls added to each per pause")
    rows = []
    for start in range(0, args.calls, args.step):
        for k in keys:
            ys = 0.03 + rng.exponential(0.005, args.step)
            ys[rng.random(args.step) < 0.01] *= 400
            plots.append(k, np.arange(start, start + args.step, dtype=float), ys, "measure", 0)
        t0 = time.thread_time()
        plots.refresh()  # what the pause's draw does with plots that changed
        t1 = time.thread_time()
        views.turns.paints.paint_all()
        t2 = time.thread_time()
        rows.append((start + args.step, (t1 - t0) * 1e3, (t2 - t1) * 1e3))
    for n, update, paint in rows[:: max(1, len(rows) // 4)] + rows[-1:]:
        print(f"  calls per series {n:>7,}: update {update:6.1f} ms CPU, paint {paint:6.1f} ms CPU")
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
