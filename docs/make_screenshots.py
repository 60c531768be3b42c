"""Make every picture the README and docs show, from the current code, with the app's own exports.

    make screenshots                      # or: python docs/make_screenshots.py [--out docs]
    python docs/make_screenshots.py --quick --out /tmp/pictures --manifest /tmp/pictures/texts.json

Runs real benchmarks in a fresh window (no saved settings, an empty run store in a
scratch folder) and writes into ``--out`` (default: this folder):

- ``screenshot.png``: the window at 1500×950 after a run with an earlier one (another
  batch) ticked in the history and overlaid (File → Save screenshot),
- ``screenshot-1280x760.png``: the same window at 1280×760,
- ``latency.png``: the latency plot at 2× (File → Save plot as PNG, with its caption),
- ``distribution.png``: the Distribution tab at 1×,
- ``why.png``: the window on its Why tab, the compiled variant chosen,
- ``sweep.png``: the Sweep panel after a batch-size sweep, undocked, one point hovered.

Before each picture the status bar's passing message is cleared, and the window shows
no path of this machine (run folders by name, full paths in tooltips): ``--manifest``
writes, per picture, the texts it shows, for a check of exactly that. ``--quick``
measures a tiny model with few calls and ``aot_eager`` (seconds, not minutes: the
test's size); the docs' pictures are made without it. Without a display the app runs
offscreen on a screen of 1920×1200 (``xvfb-run -a make screenshots`` draws with X fonts).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: Every picture this script makes, as the README and docs name them (relative to docs/).
PICTURES = (
    "screenshot.png", "screenshot-1280x760.png", "latency.png", "distribution.png", "why.png", "sweep.png",
)
SIZES = ((1500, 950), (1280, 760))
SWEEP_SIZE = (1300, 860)


def _offscreen_screen(scratch: str) -> None:
    """Without a display: Qt's offscreen platform on a screen large enough for every picture."""
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform.startswith("offscreen:") or (platform and platform != "offscreen"):
        return
    if not platform and (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return
    screen = Path(scratch) / "screen.json"
    screen.write_text(json.dumps({
        "windowFrameMargins": False,
        "screens": [{"name": "docs", "x": 0, "y": 0, "width": 1920, "height": 1200,
                     "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}],
    }))
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={screen}"


def shown_texts(root: Any) -> list[str]:
    """The texts ``root`` (a window or panel) shows now: labels, buttons, fields, boxes, the
    status bar's message, table and tree cells in view, the first lines of text views."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import (
        QAbstractButton,
        QComboBox,
        QLabel,
        QLineEdit,
        QMainWindow,
        QPlainTextEdit,
        QTableView,
        QTreeWidget,
    )

    out: list[str] = []
    if isinstance(root, QMainWindow):
        out.append(root.statusBar().currentMessage())
        out.append(root.windowTitle())
    for w in root.findChildren(QLabel):
        if w.isVisible() and not w.visibleRegion().isEmpty():
            out.append(w.text())
    for w in root.findChildren(QAbstractButton):
        if w.isVisible():
            out.append(w.text())
    for w in root.findChildren(QLineEdit):
        if w.isVisible():
            out.append(w.text())
    for w in root.findChildren(QComboBox):
        if w.isVisible():
            out.append(w.currentText())
    for w in root.findChildren(QPlainTextEdit):
        if w.isVisible() and not w.visibleRegion().isEmpty():
            # the lines in view
            first = w.cursorForPosition(QPoint(0, 0)).blockNumber()
            last = w.cursorForPosition(QPoint(0, max(0, w.viewport().height() - 1))).blockNumber()
            out.extend(w.toPlainText().splitlines()[first : last + 1])
    for w in root.findChildren(QTableView):
        model = w.model()
        if w.isVisible() and model is not None:
            for r in range(min(model.rowCount(), 40)):
                for c in range(model.columnCount()):
                    out.append(str(model.index(r, c).data() or ""))
    for w in root.findChildren(QTreeWidget):
        if w.isVisible():
            for i in range(w.topLevelItemCount()):
                item = w.topLevelItem(i)
                out.extend(item.text(c) for c in range(w.columnCount()))
    return [t for t in out if t]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE, help="folder the pictures are written to")
    ap.add_argument("--quick", action="store_true", help="a tiny model and few calls (for the test)")
    ap.add_argument("--manifest", type=Path, default=None, help="write each picture's shown texts here (JSON)")
    args = ap.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="cs-docs-")
    os.environ["COMPILE_STUDIO_SETTINGS_DIR"] = os.path.join(scratch, "settings")
    os.environ["COMPILE_STUDIO_DATA_DIR"] = os.path.join(scratch, "data")
    _offscreen_screen(scratch)

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.gui.image_export import save_widget_png
    from compile_studio.gui.main_window import MainWindow
    from compile_studio.gui.sweep_dock import show_dock
    from compile_studio.jobs.sweep_spec import SweepSpec

    if args.quick:
        config = BenchmarkConfig(
            layers="32,64,8", batch_size=16, device="cpu", iterations=60, warmup=10, rounds=3,
            warmup_min_ms=0, variants=["eager", "aot_eager"], compile_timing="in_run",
        )
        # two points draw the sweep's lines, markers and hover as three do: each point is a
        # whole run (a worker, a compile), the most of this mode's time
        first_batch, sweep_values = 4, "1,64"
    else:
        config = BenchmarkConfig(
            device="cpu", iterations=300, warmup=30, variants=["eager", "default"],
            compile_cache="cold", compile_timing="in_run",
        )
        first_batch, sweep_values = 32, "1:1024:x4"
    first = BenchmarkConfig.from_dict({**config.to_dict(), "batch_size": first_batch, "label": f"batch {first_batch}"})
    second = BenchmarkConfig.from_dict({**config.to_dict(), "label": f"batch {config.batch_size}"})
    sweep_base = BenchmarkConfig.from_dict({**config.to_dict(), "label": "", "diagnostics": False,
                                            "iterations": min(config.iterations, 200)})

    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = MainWindow()
    window.resize(*SIZES[0])
    window.show()
    window.config_panel.set_config(second)
    made: dict[str, bool] = {}
    texts: dict[str, list[str]] = {}
    runs: list[Any] = []
    steps: list[tuple[int, Callable[[], object]]] = []

    def then(delay_ms: int, step: Callable[[], object]) -> None:
        steps.append((delay_ms, step))

    def next_step() -> None:
        if steps:
            delay, step = steps.pop(0)
            QTimer.singleShot(delay, lambda: (step(), next_step()))

    def window_picture(name: str) -> None:
        window.statusBar().clearMessage()  # an export's "Saved … in <folder>" is no part of a picture
        app.processEvents()
        texts[name] = shown_texts(window)
        made[name] = window.exports.save_screenshot(out / name)

    def plot_picture(name: str, scale: float) -> None:
        made[name] = window.exports.save_plot(out / name, scale=scale)
        texts[name] = shown_texts(window.plots.currentWidget())
        window.statusBar().clearMessage()

    def why_picture() -> None:
        window.history.uncheck_all()
        window.show_run(runs[-1], alone=True)
        window.resize(*SIZES[0])
        window.bottom_tabs.setCurrentWidget(window.why_view)
        compiled = [n for n in runs[-1].variants if n != "eager"]
        if compiled:
            window.why_view.variant_box.setCurrentText(compiled[0])

    def sweep_picture() -> None:
        view = window.sweep_view
        window.bottom_tabs.setCurrentIndex(0)
        show_dock(window, view.dock)

        def ended(running: bool) -> None:
            if running:
                return
            view.dock.setFloating(True)
            view.dock.resize(*SWEEP_SIZE)
            QTimer.singleShot(1200, hover_and_save)

        def hover_and_save() -> None:
            markers = [m for m in view.plot.markers if m.plot == "break_even"][-1:]
            markers = markers or [m for m in view.plot.markers if m.plot == "speedup"][:1]
            if markers:
                view.plot.hover_at(view.plot.marker_scene_pos(markers[0]))
            QTimer.singleShot(600, save_sweep)

        def save_sweep() -> None:
            view.plot.hover.exclude_from_export = False  # the picture shows what hovering shows
            texts["sweep.png"] = shown_texts(view.dock)
            try:
                save_widget_png(view.dock, out / "sweep.png")
                made["sweep.png"] = True
            except Exception as exc:  # noqa: BLE001 - said, and the exit code tells
                print(f"sweep.png: {exc}", file=sys.stderr)
                made["sweep.png"] = False
            QTimer.singleShot(200, app.quit)

        view.running_changed.connect(ended)
        is_range = ":" in sweep_values
        spec = SweepSpec.parse("batch_size", None if is_range else sweep_values, sweep_values if is_range else None)
        if not view.start(spec, sweep_base):
            print("the sweep did not start:", window.error_text, file=sys.stderr)
            app.quit()

    def finished(run: Any) -> None:
        runs.append(run)
        print("run:", run.run_id, run.status, file=sys.stderr)
        if run.status != "complete":
            app.quit()
            return
        if len(runs) == 1:
            QTimer.singleShot(300, lambda: window.start_run(second))
            return
        window.history.set_checked(runs[0].run_id, True)
        for i, size in enumerate(SIZES):
            name = "screenshot.png" if i == 0 else f"screenshot-{size[0]}x{size[1]}.png"
            then(0, lambda size=size: window.resize(*size))
            then(1200, lambda name=name: window_picture(name))
            if i == 0:
                then(0, lambda: plot_picture("latency.png", 2.0))
                then(0, lambda: window.plots.setCurrentIndex(1))
                then(800, lambda: plot_picture("distribution.png", 1.0))
                then(0, lambda: window.plots.setCurrentIndex(0))
        then(0, why_picture)
        then(1200, lambda: window_picture("why.png"))
        then(0, sweep_picture)
        next_step()

    window.run_finished.connect(finished)
    started = {"done": False}

    def start(*_: object) -> None:
        if not started["done"]:
            started["done"] = True
            window.start_run(first)

    # once the worker's hello has named the devices and modes (the status bar shows them)
    window.environment_changed.connect(start)
    QTimer.singleShot(60_000, start)
    app.exec()
    if args.manifest is not None:
        args.manifest.write_text(json.dumps({"scratch": scratch, "texts": texts}, indent=1))
    missing = [p for p in PICTURES if not made.get(p)]
    for name in PICTURES:
        print(f"{'saved' if made.get(name) else 'NOT made'}: {out / name}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
