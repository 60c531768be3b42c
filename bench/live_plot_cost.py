"""What one live refresh of the plots costs the GUI thread while a run is measured.

During a run the window redraws its plots once a second from the samples that
arrived (``PlotPanel.refresh``), and that work shares a core with the model's
helper threads. This drives the real plot panel the way a run does — two
variants, each a few warm-up calls then measured calls arriving in one-second
batches, the latency tab shown and its range marked live as the window marks
it — and after each refresh paints the latency plot, timing the GUI thread's
CPU (``time.thread_time``) for refresh + paint. It prints every refresh's
figure, their median, p90 and max, and the total.

    QT_QPA_PLATFORM=offscreen python bench/live_plot_cost.py [--calls-per-refresh 200] [--refreshes 12]

Run it under ``xvfb-run -a`` instead of offscreen to include an X server's
share of the paint (the GUI thread's own CPU is what is printed either way).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls-per-refresh", type=int, default=200,
                        help="calls arriving between two refreshes (200: a 5 ms model, 1 s refresh)")
    parser.add_argument("--refreshes", type=int, default=12, help="refreshes per variant")
    parser.add_argument("--warmup-refreshes", type=int, default=2, help="of them, warm-up calls only")
    parser.add_argument("--width", type=int, default=1100)
    parser.add_argument("--height", type=int, default=600)
    args = parser.parse_args(argv)

    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    from compile_studio.gui.plots.panel import PlotPanel

    panel = PlotPanel()
    panel.resize(args.width, args.height)
    panel.show()
    panel.latency.set_steady_range(True)  # as the window does while a run is live
    app.processEvents()
    rng = np.random.default_rng(0)
    per_refresh: list[float] = []
    for variant in ("eager", "default"):
        panel.add_series(variant, variant)
        first = 0
        for r in range(args.refreshes):
            n = args.calls_per_refresh
            iterations = np.arange(first, first + n, dtype=np.float64)
            first += n
            wall_ms = 5.0 + rng.exponential(0.3, n) + (rng.random(n) < 0.01) * 10.0  # a few spikes
            phase = "warmup" if r < args.warmup_refreshes else "measure"
            panel.append(variant, iterations, wall_ms, phase, -1)
            c0 = time.thread_time()
            panel.refresh()
            panel.latency_plot.viewport().repaint()
            per_refresh.append((time.thread_time() - c0) * 1000.0)
            app.processEvents()
    panel.latency.set_steady_range(False)
    costs = np.asarray(per_refresh)
    print("GUI thread CPU per refresh + paint (ms): " + " ".join(f"{c:.1f}" for c in costs))
    print(f"median {np.median(costs):.1f} ms, p90 {np.percentile(costs, 90):.1f} ms, max {costs.max():.1f} ms, "
          f"total {costs.sum():.0f} ms over {len(costs)} refreshes "
          f"({args.calls_per_refresh} calls each, {args.width}×{args.height})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
