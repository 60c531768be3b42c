"""Run in a child process on a screen of a chosen size: how wide the window gets with the Sweep dock.

``python gui_screen_check.py WIDTH HEIGHT FOLDER`` prints one JSON object: the screen's available
width, the window's frame width after each step (resized, dock shown, a shape sweep shown while
running, a point sweep shown) and whether the hover label of the middle point lies inside its plot.
The test starts it with ``QT_QPA_PLATFORM=offscreen:configfile=…`` naming the screen.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.sweep_dock import show_dock
from compile_studio.results.records.sweep_record import PointVariant, SweepPoint, SweepRecord


def point_sweep() -> SweepRecord:
    """Three points of a batch-size sweep, eager and a compiled variant at each."""
    config = BenchmarkConfig(device="cpu", variants=["eager", "aot_eager"])
    record = SweepRecord(sweep_id="s", created="", param="batch_size", config=config, status="complete")
    for k, batch in enumerate((8, 64, 512)):
        eager = PointVariant("eager", "done", median_ms=1.0 * (k + 1), p5_ms=0.9, p95_ms=1.2 * (k + 1))
        compiled = PointVariant(
            "aot_eager", "done", median_ms=0.8 * (k + 1), speedup=1.25, speedup_lo=1.2, speedup_hi=1.3,
            verdict="faster", compile_s=2.0, break_even_calls=9000.0, allclose=True, recompiles=1,
            graph_breaks=1,
        )
        record.points.append(SweepPoint(k, batch, "done", run=f"run{k}", variants=[eager, compiled]))
    return record


def main(width: int, height: int, folder: Path) -> dict[str, object]:
    app = QApplication.instance() or QApplication([])
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from test_sweep_view import shape_folder

    window = MainWindow(probe=False)
    window.resize(width, height)
    window.show()
    app.processEvents()
    out: dict[str, object] = {"screen": window.screen().availableGeometry().width()}
    out["resized"] = window.frameGeometry().width()
    view = window.sweep_view
    assert view.dock is not None
    show_dock(window, view.dock)
    app.processEvents()
    out["docked"] = window.frameGeometry().width()
    # a shape sweep shown as running, with a long status and warnings
    assert view.open_sweep(shape_folder(folder / "shape").path)
    view.shape_record.message = "a long message about the sweep " * 12  # type: ignore[union-attr]
    view.show_shape_record(view.shape_record)  # type: ignore[arg-type]
    view.running_changed.emit(True)
    app.processEvents()
    out["shape_sweep"] = window.frameGeometry().width()
    # a point sweep: the hover label of its middle point
    view.show_record(point_sweep())
    app.processEvents()
    plot = view.plot
    middle = [m for m in plot.markers if m.plot == "speedup" and m.index == 1][0]
    text = plot.hover_at(plot.marker_scene_pos(middle) + QPointF(1, 1))
    app.processEvents()
    label = plot.hover.mapRectToScene(plot.hover.boundingRect())
    room = plot.plots["speedup"].vb.sceneBoundingRect()
    out["hover_text"] = text
    out["hover_inside"] = room.contains(label)
    out["hover"] = [label.left(), label.top(), label.right(), label.bottom()]
    out["room"] = [room.left(), room.top(), room.right(), room.bottom()]
    out["point_sweep"] = window.frameGeometry().width()
    window.close()
    return out


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))))
