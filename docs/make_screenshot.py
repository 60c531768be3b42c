"""Run the seed MLP in the window and save the screenshots the README shows.

    xvfb-run -a -s "-screen 0 1600x1000x24" python docs/make_screenshot.py \
        [--iterations 300] [--sizes 1500x950,1280x760] [--no-overlay]

Runs the configuration twice (batch 32, then the form's batch) and ticks the
first run in the history, so the window shows the second run with the first
overlaid. Then, with the app's own exports, writes into docs/:

- ``screenshot.png``: the whole window at the first size (File → Save screenshot),
- ``screenshot-WxH.png``: the whole window at each further size,
- ``latency.png``: the latency plot at 2× (File → Save plot as PNG, with its caption),
- ``distribution.png``: the Distribution tab's plots at 1×.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent


def parse_size(text: str) -> tuple[int, int]:
    """``"1500x950"`` as (1500, 950)."""
    w, _, h = text.lower().partition("x")
    if not (w.isdigit() and h.isdigit()) or int(w) < 400 or int(h) < 300:
        raise argparse.ArgumentTypeError(f"a size is WIDTHxHEIGHT, at least 400x300: {text!r}")
    return int(w), int(h)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--variants", default="eager,default")
    ap.add_argument(
        "--sizes", default="1500x950,1280x760",
        help="window sizes, comma-separated; the first is saved as screenshot.png",
    )
    ap.add_argument("--no-overlay", action="store_true", help="one run, nothing overlaid")
    ap.add_argument("--out", type=Path, default=HERE, help="folder the images are written to")
    args = ap.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    # a clean window: no saved settings, an empty run store
    scratch = tempfile.mkdtemp(prefix="cs-shot-")
    os.environ["COMPILE_STUDIO_SETTINGS_DIR"] = os.path.join(scratch, "settings")
    os.environ["COMPILE_STUDIO_DATA_DIR"] = os.path.join(scratch, "data")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv)
    window = MainWindow()
    window.resize(*sizes[0])
    window.show()
    config = BenchmarkConfig(
        device="cpu", iterations=args.iterations, warmup=30, variants=args.variants.split(","),
    )
    first = BenchmarkConfig.from_dict({**config.to_dict(), "batch_size": 32, "label": "batch 32"})
    second = BenchmarkConfig.from_dict({**config.to_dict(), "label": f"batch {config.batch_size}"})
    window.config_panel.set_config(second)
    runs: list = []
    steps: list[tuple[int, Callable[[], None]]] = []

    def then(delay_ms: int, step: Callable[[], None]) -> None:
        steps.append((delay_ms, step))

    def next_step() -> None:
        if steps:
            delay, step = steps.pop(0)
            QTimer.singleShot(delay, lambda: (step(), next_step()))

    def finished(run) -> None:
        runs.append(run)
        if not args.no_overlay and len(runs) == 1:
            QTimer.singleShot(500, lambda: window.start_run(second))
            return
        if not args.no_overlay:
            window.history.set_checked(runs[0].run_id, True)
        out = args.out
        for i, (w, h) in enumerate(sizes):
            name = "screenshot.png" if i == 0 else f"screenshot-{w}x{h}.png"
            then(0, lambda w=w, h=h: window.resize(w, h))
            then(1200, lambda name=name: print("saved", name, window.save_screenshot(out / name)))
            if i == 0:
                then(0, lambda: print("saved latency.png", window.save_plot(out / "latency.png", scale=2.0)))
                then(0, lambda: window.plots.setCurrentIndex(1))
                then(800, lambda: print("saved distribution.png", window.save_plot(out / "distribution.png", 1.0)))
                then(0, lambda: window.plots.setCurrentIndex(0))
        then(200, app.quit)
        next_step()

    window.run_finished.connect(finished)
    started = {"done": False}

    def start(*_: object) -> None:
        if not started["done"]:
            started["done"] = True
            window.start_run(second if args.no_overlay else first)

    # start once the worker's hello has filled in devices and modes
    window.environment_changed.connect(start)
    QTimer.singleShot(60000, start)
    app.exec()
    for run in runs:
        print("run:", run.run_id, run.status)
    return 0 if runs and all(r.status == "complete" for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
