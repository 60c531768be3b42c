"""Run a benchmark in the window and save the screenshot of its Why tab that the README shows.

    xvfb-run -a -s "-screen 0 1600x1000x24" python docs/make_why_screenshot.py \
        [--layers 64,256,256,10] [--batch 8] [--variants eager,default,aot_eager] [--size 1600x1000]

Runs with a cold compile cache and the compile timed in the run, so the
compile phases are those of the compile time the table reports; then opens the
Why tab on the compiled variant and writes ``docs/why.png`` (File → Save
screenshot). The run folder stays in a temporary data folder (its path is printed).
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
    ap.add_argument("--layers", default="64,256,256,10")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--variants", default="eager,default,aot_eager")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--size", default="1600x1000")
    ap.add_argument("--out", type=Path, default=HERE / "why.png")
    args = ap.parse_args()
    width, _, height = args.size.partition("x")
    scratch = tempfile.mkdtemp(prefix="cs-why-shot-")
    os.environ["COMPILE_STUDIO_SETTINGS_DIR"] = os.path.join(scratch, "settings")
    os.environ["COMPILE_STUDIO_DATA_DIR"] = os.path.join(scratch, "data")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv)
    window = MainWindow()
    window.resize(int(width), int(height))
    window.show()
    config = BenchmarkConfig(
        layers=args.layers, batch_size=args.batch, device="cpu", iterations=args.iterations,
        variants=args.variants.split(","), compile_cache="cold", compile_timing="in_run",
    )
    result = {"ok": False}

    def finished(run) -> None:
        print("run:", window.store.root / run.run_id, run.status)
        window.bottom_tabs.setCurrentWidget(window.why_view)
        window.centre_splitter.setSizes([250, int(height) - 330])
        view = window.why_view
        compiled = [n for n in run.variants if n != "eager"]
        if compiled:
            view.variant_box.setCurrentText(compiled[0])
        print("why:", view.sentence.text())
        QTimer.singleShot(800, save)

    def save() -> None:
        result["ok"] = window.save_screenshot(args.out)
        print("saved", args.out, result["ok"])
        QTimer.singleShot(200, app.quit)

    window.run_finished.connect(finished)
    QTimer.singleShot(500, lambda: window.start_run(config))
    app.exec()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
