"""Exports (real widgets, offscreen): an SVG's curves are cut at the plot's edges (a spike
beyond the range shown never runs through the title in any viewer), and the Markdown report
is exported under a file name the user gives, like every other export."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QFileDialog

from compile_studio.gui import export_menu
from compile_studio.gui.image_export import caption_html, clip_polyline, save_plot_svg
from compile_studio.gui.plots import PlotPanel
from support.gui_helpers import open_window, series_color
from test_daily_visual import _run


def _svg_image(path, size) -> np.ndarray:
    renderer = QSvgRenderer(str(path))
    image = QImage(size, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    renderer.render(painter, QRectF(0, 0, size.width(), size.height()))
    painter.end()
    img = image.convertToFormat(QImage.Format.Format_RGBA8888)
    raw = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes())
    return raw.reshape(img.height(), img.bytesPerLine())[:, : img.width() * 4].reshape(
        img.height(), img.width(), 4
    )[..., :3].astype(int)


def test_an_svg_cuts_its_curves_at_the_plot_edges(qtbot, tmp_path, monkeypatch):
    # Qt's own viewer draws a shape of any size, as a browser does
    monkeypatch.setenv("QT_SVG_DEFAULT_OPTIONS", "2")
    panel = PlotPanel()
    qtbot.addWidget(panel)
    panel.resize(720, 420)
    wall_ms = np.full(300, 1.0) + np.random.default_rng(1).normal(0, 0.01, 300)
    wall_ms[[100, 200]] = 400.0  # two spikes far beyond the range shown
    panel.add_series("a", "a")
    panel.append("a", np.arange(300), wall_ms, "measure")
    panel.show()
    qtbot.waitExposed(panel)
    panel.refresh()
    plot = panel.latency_plot
    box = plot.getPlotItem().getViewBox()
    assert box.viewRange()[1][1] < 100  # the spikes lie beyond the range shown
    curve = panel.latency.curves["a"].measure_curve.curve
    before = (curve.xData.copy(), curve.yData.copy())

    out = save_plot_svg(plot, tmp_path / "plot.svg", caption=caption_html(["Latency per call — a", "config", "marks"]))
    px = _svg_image(out, plot.size())
    color = series_color(panel, "a")
    near = np.all(np.abs(px - np.array([color.red(), color.green(), color.blue()])) < 40, axis=-1)
    top = int(box.mapRectToScene(box.boundingRect()).top())
    assert near[top + 3 :].sum() > 200  # the curve is drawn
    assert near[: max(0, top - 2)].sum() == 0, "the curve runs above the plot, through the title"
    # on screen, the curve is as it was
    np.testing.assert_array_equal(curve.xData, before[0])
    np.testing.assert_array_equal(curve.yData, before[1])


def test_clip_polyline_cuts_at_the_edges_and_breaks_between_pieces():
    x, y = clip_polyline(np.array([0.0, 1, 2, 3, 4]), np.array([0.0, 0, 10, 0, 0]), -1, -1, 5, 1)
    finite = np.isfinite(x)
    assert np.all(y[finite] <= 1 + 1e-9) and np.all(y[finite] >= -1 - 1e-9)
    assert np.isnan(x).sum() == 1  # two pieces: up to the edge, and back from it
    assert pytest.approx(y[finite].max()) == 1.0


def test_the_report_export_asks_for_a_file_name(qtbot, tmp_path, monkeypatch):
    window = open_window(qtbot)
    window.show_run(_run("20250101-000001_a", "A"))
    asked: list[str] = []

    def save_name(_parent, title, start, _filter):
        asked.append(start)
        return str(tmp_path / "my report.md"), "Markdown (*.md)"

    def no_folder(*_args, **_kwargs):
        raise AssertionError("asked for a folder")

    monkeypatch.setattr(export_menu.QFileDialog, "getSaveFileName", staticmethod(save_name))
    monkeypatch.setattr(export_menu.QFileDialog, "getExistingDirectory", staticmethod(no_folder))
    window.exports.export_report_action.trigger()
    assert len(asked) == 1 and asked[0].endswith("20250101-000001_a_report.md")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my report.md", "my report.png"]
    assert "(my%20report.png)" in (tmp_path / "my report.md").read_text()
    assert QFileDialog is export_menu.QFileDialog
