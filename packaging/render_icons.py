"""Render the PNG icon sizes from resources/icons/compile-studio.svg with Qt's QSvgRenderer.

Usage: python packaging/render_icons.py [OUT_DIR]   (default: resources/icons)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SIZES = (16, 32, 48, 64, 128, 256)
ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "resources" / "icons" / "compile-studio.svg"


def render_icons(svg: Path, out_dir: Path, sizes: tuple[int, ...] = SIZES) -> list[Path]:
    """Write ``compile-studio-<size>.png`` for each size into ``out_dir``."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"Qt cannot read {svg}")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        renderer.render(painter, QRectF(0, 0, size, size))
        painter.end()
        path = out_dir / f"compile-studio-{size}.png"
        if not image.save(str(path), "PNG"):
            raise OSError(f"could not write {path}")
        written.append(path)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else SVG.parent
    for p in render_icons(SVG, target):
        print(p)
