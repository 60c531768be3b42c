"""Run in a child process on a screen of a chosen size: does the window with the Sweep dock open fit?

``python gui_sweep_fit_check.py WIDTH HEIGHT FOLDER [SHOT.png]`` prints one JSON object: whether
the form shows a horizontal scroll bar, the panes' and the dock's widths, each sweep plot's rect
(in window coordinates) against the window's, where the empty sweep's note lies against the line
at 1×, and the speedup labels of a shape sweep. The test starts it with
``QT_QPA_PLATFORM=offscreen:configfile=…`` naming the screen.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QApplication

from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.sweep_dock import show_dock


def _in_window(window, widget, scene_rect) -> list[int]:
    top_left = widget.mapTo(window, QPoint(0, 0))
    r = scene_rect.toRect().translated(top_left)
    return [r.left(), r.top(), r.right(), r.bottom()]


def main(width: int, height: int, folder: Path, shot: str | None) -> dict[str, object]:
    app = QApplication.instance() or QApplication([])
    sys.path.insert(0, str(Path(__file__).parent))
    from gui_screen_check import point_sweep

    from test_sweep_view import shape_folder

    window = MainWindow(probe=False)
    window.resize(width, height)
    window.show()
    app.processEvents()
    view = window.sweep_view
    assert view.dock is not None
    show_dock(window, view.dock)
    for _ in range(5):
        app.processEvents()
    out: dict[str, object] = {"window": [window.width(), window.height()]}
    plot = view.plot
    note = plot.empty_text.mapRectToScene(plot.empty_text.boundingRect())
    speedup = plot.plots["speedup"]
    one = speedup.vb.mapViewToScene(QPoint(0, 0)).y()
    out["note"] = [note.left(), note.top(), note.right(), note.bottom()]
    out["one_line_y"] = one
    out["note_room"] = list(speedup.vb.sceneBoundingRect().getCoords())
    view.show_record(point_sweep())
    for _ in range(5):
        app.processEvents()
    out["form_hbar"] = window.form.scroll_area.horizontalScrollBar().isVisible()
    out["panes"] = window.main_splitter.sizes()
    out["plots_least"] = window.plots.minimumWidth()
    out["dock"] = view.dock.width()
    win = QRect(0, 0, window.width(), window.height())
    out["sweep_plots"] = {
        name: _in_window(window, plot, item.sceneBoundingRect()) for name, item in plot.plots.items()
    }
    out["sweep_inside"] = all(
        win.contains(QRect(QPoint(r[0], r[1]), QPoint(r[2], r[3]))) for r in out["sweep_plots"].values()
    )
    out["sweep_widget_inside"] = win.contains(QRect(plot.mapTo(window, QPoint(0, 0)), plot.size()))
    out["ticks"] = {}
    for name, item in plot.plots.items():
        from PySide6.QtGui import QImage, QPainter

        image = QImage(4, 4, QImage.Format.Format_ARGB32)
        painter = QPainter(image)
        specs = item.getAxis("bottom").generateDrawSpecs(painter)
        painter.end()
        out["ticks"][name] = [t[2] for t in specs[2]]
    out["titles"] = {name: item.titleLabel.text for name, item in plot.plots.items()}
    out["title_rects"] = {
        name: _in_window(window, plot, item.titleLabel.mapRectToScene(item.titleLabel.itemRect()))
        for name, item in plot.plots.items()
    }
    if shot:
        window.grab().save(shot)
    assert view.open_sweep(shape_folder(folder / "shape").path)
    for _ in range(5):
        app.processEvents()
    shape = view.shape_plot
    out["shape_labels"] = [label.toPlainText() for label in shape.speedup_labels]
    out["shape_inside"] = win.contains(QRect(shape.mapTo(window, QPoint(0, 0)), shape.size()))
    window.close()
    return out


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)))
