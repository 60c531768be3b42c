"""Run a batch-size sweep in the window and save the sweep screenshot the README shows.

    xvfb-run -a -s "-screen 0 1600x1000x24" python docs/make_sweep_screenshot.py \
        [--layers 256,512,512,10] [--values 1:1024:x4] [--iterations 200] [--size 1600x1000]

Starts the sweep from the window's Sweep view (Sweep → New sweep… does the
same) with the form's configuration as its base, waits for every point, shows
the numbers of one point as the mouse would, and writes into docs/:

- ``sweep.png``: the Sweep panel undocked to its own window of ``--size``, saved
  by the app's widget export (the hover label, which exports leave out, kept in).

The sweep folder stays in a temporary data folder (its path is printed).
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
    ap.add_argument("--layers", default="256,512,512,10")
    ap.add_argument("--values", default="1:1024:x4", help="batch sizes: a list or a range")
    ap.add_argument("--variants", default="eager,default")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--size", default="1300x860", help="the Sweep panel's size")
    ap.add_argument("--out", type=Path, default=HERE, help="folder the images are written to")
    args = ap.parse_args()
    width, _, height = args.size.partition("x")
    scratch = tempfile.mkdtemp(prefix="cs-sweep-shot-")
    os.environ["COMPILE_STUDIO_SETTINGS_DIR"] = os.path.join(scratch, "settings")
    os.environ["COMPILE_STUDIO_DATA_DIR"] = os.path.join(scratch, "data")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.gui.export import save_widget_png
    from compile_studio.gui.main_window import MainWindow
    from compile_studio.gui.sweep_dock import show_dock
    from compile_studio.jobs.sweep_spec import SweepSpec

    app = QApplication.instance() or QApplication(sys.argv)
    window = MainWindow()
    window.resize(1500, 950)
    window.show()
    base = BenchmarkConfig(
        layers=args.layers, device="cpu", iterations=args.iterations, variants=args.variants.split(","),
    )
    window.config_panel.set_config(base)
    view = window.sweep_view
    is_range = ":" in args.values
    spec = SweepSpec.parse("batch_size", None if is_range else args.values, args.values if is_range else None)
    result = {"ok": False}

    def save() -> None:
        record = view.record
        print("sweep:", view.folder.path if view.folder else None, record.status if record else None)
        # hover a point that pays off (the break-even plot has room beside it), else a speedup
        markers = [m for m in view.plot.markers if m.plot == "break_even"][-1:]
        markers = markers or [m for m in view.plot.markers if m.plot == "speedup"][:1]
        if markers:
            print(view.plot.hover_at(view.plot.marker_scene_pos(markers[0])))
        QTimer.singleShot(600, finish)

    def finish() -> None:
        view.plot.hover.exclude_from_export = False  # the screenshot shows what hovering shows
        print("saved sweep.png", save_widget_png(view.dock, args.out / "sweep.png"))
        result["ok"] = view.record is not None and view.record.status == "complete"
        QTimer.singleShot(200, app.quit)

    def ended(running: bool) -> None:
        if not running:
            view.dock.setFloating(True)
            view.dock.resize(int(width), int(height))
            QTimer.singleShot(1200, save)


    view.running_changed.connect(ended)
    started = {"done": False}

    def start(*_: object) -> None:
        if not started["done"]:
            started["done"] = True
            show_dock(window, view.dock)
            if not view.start(spec, window.config_panel.config()):
                print("the sweep did not start:", window.error_text)
                app.quit()

    window.environment_changed.connect(start)
    QTimer.singleShot(60000, start)
    app.exec()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
