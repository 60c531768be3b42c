"""Image export with real widgets and real files: PNG sizes and backgrounds, SVG, clipboard,
failures that leave nothing behind, default file names."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.image_export import (
    ExportError,
    copy_widget_to_clipboard,
    default_file_name,
    save_plot_png,
    save_plot_svg,
    save_widget_png,
)
from compile_studio.gui.plots import PlotPanel, SummaryBar
from support.gui_helpers import hover_text

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def panel(qtbot) -> PlotPanel:
    p = PlotPanel()
    qtbot.addWidget(p)
    p.resize(640, 400)
    rng = np.random.default_rng(0)
    for k, base in (("eager", 2.0), ("default", 1.2)):
        p.add_series(k, k)
        p.append(k, np.arange(5), np.full(5, base * 2), "warmup")
        p.append(k, np.arange(5, 200), rng.gamma(2, 0.05, 195) + base, "measure")
    p.set_summary([SummaryBar("eager", "eager", 2.1, 2.0, 2.3, 1.0), SummaryBar("default", "default", 1.3, 1.2, 1.4, 1.62)])
    p.show()
    qtbot.waitExposed(p)
    p.refresh()
    p.latency.crosshair_at(100, 1.3)  # hover items must not end up in exports
    return p


def _pixels(image: QImage) -> np.ndarray:
    """(h, w, 4) RGBA uint8 array of an image."""
    img = image.convertToFormat(QImage.Format.Format_RGBA8888)
    w, h = img.width(), img.height()
    raw = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes())
    return raw.reshape(h, img.bytesPerLine())[:, : w * 4].reshape(h, w, 4).copy()


def _corners(px: np.ndarray) -> list[np.ndarray]:
    return [px[0, 0], px[0, -1], px[-1, 0], px[-1, -1]]


@pytest.mark.parametrize("scale", [1, 2, 4])
def test_plot_png_has_exact_size_and_is_not_blank(panel, tmp_path, scale):
    plot = panel.latency_plot
    out = save_plot_png(plot, tmp_path / f"latency@{scale}x.png", scale=scale)
    assert out == tmp_path / f"latency@{scale}x.png"
    image = QImage(str(out))
    assert not image.isNull()
    assert (image.width(), image.height()) == (plot.width() * scale, plot.height() * scale)
    px = _pixels(image)[..., :3].astype(float)
    assert px.std() > 10.0  # axes, text and curves, not one flat colour
    # the series colours are in the picture (Okabe–Ito blue of the first series)
    blue = np.all(np.abs(px - np.array([0, 114, 178])) < 40, axis=-1)
    assert blue.sum() > 50 * scale
    assert sorted(os.listdir(tmp_path)) == [out.name]  # no temp file left


def test_white_and_transparent_backgrounds(panel, tmp_path):
    plot = panel.summary_plot
    white = _pixels(QImage(str(save_plot_png(plot, tmp_path / "w.png"))))
    for c in _corners(white):
        assert c.tolist() == [255, 255, 255, 255]
    clear = _pixels(QImage(str(save_plot_png(plot, tmp_path / "t.png", scale=2, transparent=True))))
    for c in _corners(clear):
        assert c[3] < 255
    assert clear[..., 3].max() == 255  # but the plot itself is drawn
    # the plot keeps its white background on screen afterwards
    assert plot.backgroundBrush().color().name() == "#ffffff"


def test_hover_crosshair_is_left_out_and_restored(panel, tmp_path):
    assert hover_text(panel)
    save_plot_png(panel.latency_plot, tmp_path / "a.png")
    assert hover_text(panel)  # still shown on screen
    panel.latency.hide_crosshair()
    save_plot_png(panel.latency_plot, tmp_path / "b.png")
    a = _pixels(QImage(str(tmp_path / "a.png")))
    b = _pixels(QImage(str(tmp_path / "b.png")))
    assert np.array_equal(a, b)


@pytest.mark.parametrize("scale", [1, 2])
def test_whole_widget_png(panel, tmp_path, scale):
    out = save_widget_png(panel, tmp_path / "window.png", scale=scale)
    image = QImage(str(out))
    assert (image.width(), image.height()) == (panel.width() * scale, panel.height() * scale)
    assert _pixels(image)[..., :3].astype(float).std() > 10.0


def test_svg_is_valid_xml_with_vector_paths(panel, tmp_path):
    for plot in (panel.latency_plot, panel.summary_plot):
        out = save_plot_svg(plot, tmp_path / "plot.svg", title="Latency — eager vs default")
        root = ET.parse(out).getroot()
        assert root.tag == f"{SVG}svg"
        shapes = list(root.iter(f"{SVG}path")) + list(root.iter(f"{SVG}polyline"))
        assert len(shapes) > 5
        assert root.find(f"{SVG}title").text == "Latency — eager vs default"
        assert root.find(f"{SVG}desc") is not None
        texts = "".join(t.text or "" for t in root.iter(f"{SVG}text"))
        assert "latency" in texts or "1.62×" in texts
    assert sorted(os.listdir(tmp_path)) == ["plot.svg"]


def test_clipboard_gets_an_image(panel):
    clipboard = QApplication.clipboard()
    clipboard.clear()
    copy_widget_to_clipboard(panel.latency_plot)
    image = clipboard.image()
    assert not image.isNull()
    assert (image.width(), image.height()) == (panel.latency_plot.width(), panel.latency_plot.height())
    copy_widget_to_clipboard(panel)
    assert clipboard.image().width() == panel.width()


def test_overwrite_replaces_existing_file(panel, tmp_path):
    target = tmp_path / "plot.png"
    target.write_bytes(b"old")
    save_plot_png(panel.latency_plot, target)
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _unwritable_dir(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        d = tmp_path / "readonly"
        d.mkdir()
        d.chmod(0o500)
        return d
    # root ignores file modes; sysfs refuses new files even to root
    return Path("/sys")


def test_unwritable_folder_raises_and_leaves_nothing(panel, tmp_path):
    folder = _unwritable_dir(tmp_path)
    before = set(os.listdir(folder))
    try:
        for save in (
            lambda p: save_plot_png(panel.latency_plot, p),
            lambda p: save_widget_png(panel, p, scale=2),
            lambda p: save_plot_svg(panel.latency_plot, p),
        ):
            target = folder / "compile-studio-export.png"
            with pytest.raises(ExportError, match=r"^cannot write .*: Permission denied$"):
                save(target)
            assert not target.exists()
            assert set(os.listdir(folder)) == before
    finally:
        if folder.is_relative_to(tmp_path):
            folder.chmod(0o700)


def test_missing_folder_and_file_as_folder_raise(panel, tmp_path):
    missing = tmp_path / "no" / "such" / "folder" / "plot.png"
    with pytest.raises(ExportError, match="cannot write .*No such file or directory"):
        save_plot_png(panel.latency_plot, missing)
    assert not (tmp_path / "no").exists()

    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("x")
    with pytest.raises(ExportError, match="cannot write .*Not a directory"):
        save_plot_svg(panel.latency_plot, not_a_dir / "plot.svg")
    assert sorted(os.listdir(tmp_path)) == ["file.txt"]
    assert not_a_dir.read_text() == "x"


def test_zero_sized_widget_is_an_export_error(qtbot, tmp_path):
    p = PlotPanel()
    qtbot.addWidget(p)
    p.latency_plot.resize(0, 0)
    with pytest.raises(ExportError, match="empty"):
        save_plot_png(p.latency_plot, tmp_path / "x.png")
    assert not list(tmp_path.iterdir())


def test_default_file_name():
    when = datetime(2025, 1, 2, 3, 4, 5)
    cfg = BenchmarkConfig(layers="32,32,8", batch_size=4, device="cpu", variants=["eager", "aot_eager"])
    name = default_file_name(cfg, ".png", when)
    assert name.startswith("20250102-030405_")
    assert name.endswith(".png")
    assert "mlp32-32-8" in name and "b4" in name
    assert "/" not in name and " " not in name
    assert default_file_name(cfg.to_dict(), "_latency.svg", when) == name[: -len(".png")] + "_latency.svg"
    assert default_file_name(None, ".png", when) == "20250102-030405_compile-studio.png"
    assert default_file_name({"layers": 5}, ".png", when) == "20250102-030405_compile-studio.png"
    labelled = BenchmarkConfig(layers="32,8", label="my model / v2")
    assert default_file_name(labelled, ".csv", when).startswith("20250102-030405_my-model-v2_mlp32-8")
    long = BenchmarkConfig(layers=",".join(["4096"] * 30))
    assert len(default_file_name(long, ".png", when)) < 120
    # without a time it uses now
    assert default_file_name(None, ".png")[:4] == str(datetime.now().year)


def test_plot_and_export_modules_do_not_import_torch():
    code = (
        "import sys; import compile_studio.gui.plots, compile_studio.gui.image_export;"
        "bad = [m for m in sys.modules if m == 'torch' or m.startswith('torch.')];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
