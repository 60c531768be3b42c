"""Run the seed MLP in the window and save the screenshots the README shows.

    xvfb-run -a python docs/make_screenshot.py [--iterations 300]

Writes docs/screenshot.png (the whole window, saved by the app's own
"Save screenshot") and docs/latency.png (the latency plot at 2×, "Save plot").
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--variants", default="eager,default")
    args = ap.parse_args()
    # a clean window: no saved settings, an empty run store
    scratch = tempfile.mkdtemp(prefix="cs-shot-")
    os.environ["COMPILE_STUDIO_SETTINGS_DIR"] = os.path.join(scratch, "settings")
    os.environ["COMPILE_STUDIO_DATA_DIR"] = os.path.join(scratch, "data")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from compile_studio.config import BenchmarkConfig
    from compile_studio.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv)
    window = MainWindow()
    window.resize(1500, 950)
    window.show()
    config = BenchmarkConfig(
        device="cpu", iterations=args.iterations, warmup=30, variants=args.variants.split(",")
    )
    window.config_panel.set_config(config)
    result: dict = {}

    def finished(run) -> None:
        result["run"] = run
        QTimer.singleShot(1500, save)

    def save() -> None:
        window.save_screenshot(HERE / "screenshot.png")
        window.save_plot(HERE / "latency.png", scale=2.0)
        app.quit()

    window.run_finished.connect(finished)
    # start once the worker's hello has filled in devices and modes
    QTimer.singleShot(6000, lambda: window.start_run(config))
    app.exec()
    run = result.get("run")
    print("status:", run.status if run else "no run")
    return 0 if run and run.status == "complete" else 1


if __name__ == "__main__":
    sys.exit(main())
