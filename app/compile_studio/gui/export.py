"""Images of the window and its plots: PNG (any scale, white or transparent), SVG, clipboard.

Every file goes through a temp file in the target folder and a rename, so a
failed export leaves neither a partial file nor a temp file behind; every
failure is an :class:`ExportError` whose message can be shown to the user.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPoint, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QImage, QPainter, QRegion
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QApplication, QWidget

from ..config import BenchmarkConfig, ConfigError
from ..results.store import atomic_write_bytes

#: Items carrying this attribute set to True (crosshairs, hover labels) are hidden in exports.
EXCLUDE_ATTR = "exclude_from_export"


class ExportError(Exception):
    """An image could not be made or written; the message says why, for the user."""


# -- writing -------------------------------------------------------------------
def _write(path: str | os.PathLike[str], data: bytes) -> Path:
    target = Path(path)
    try:
        atomic_write_bytes(target, data)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ExportError(f"cannot write {target}: {reason}") from exc
    return target


def encode_png(image: QImage) -> bytes:
    """PNG bytes of ``image`` (raises ExportError when Qt cannot encode it)."""
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    # PySide6's stub asks for bytes, but only str is accepted at run time
    ok = image.save(buf, "PNG")  # type: ignore[call-overload]
    buf.close()
    if not ok:
        raise ExportError("cannot encode the image as PNG")
    return bytes(data.data())


# -- rendering -----------------------------------------------------------------
def _target_size(widget: QWidget, scale: float) -> QSize:
    if scale <= 0:
        raise ExportError(f"scale must be positive, got {scale}")
    w, h = widget.width(), widget.height()
    if w <= 0 or h <= 0:
        raise ExportError("cannot export an empty widget (zero size)")
    return QSize(round(w * scale), round(h * scale))


def _new_image(size: QSize, fill: QColor) -> QImage:
    image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
    if image.isNull():
        raise ExportError(f"cannot allocate a {size.width()}×{size.height()} image")
    image.fill(fill)
    return image


@contextmanager
def _prepared_for_export(widget: QWidget, plot_background: QColor | None) -> Iterator[None]:
    """Hide hover-only items and, if given, paint plot backgrounds in ``plot_background``."""
    views = list(widget.findChildren(pg.GraphicsView))
    if isinstance(widget, pg.GraphicsView):
        views.append(widget)
    hidden = []
    brushes = []
    for view in views:
        for item in view.scene().items():
            if getattr(item, EXCLUDE_ATTR, False) and item.isVisible():
                item.setVisible(False)
                hidden.append(item)
        if plot_background is not None:
            brushes.append((view, view.backgroundBrush()))
            view.setBackgroundBrush(QBrush(plot_background))
    try:
        yield
    finally:
        for item in hidden:
            item.setVisible(True)
        for view, brush in brushes:
            view.setBackgroundBrush(brush)


def _paint_widget(
    widget: QWidget, painter: QPainter, size: QSize, plot_background: QColor | None = None
) -> None:
    """Paint ``widget`` and its children scaled onto ``size`` (vector output stays vector)."""
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
    painter.scale(size.width() / widget.width(), size.height() / widget.height())
    flags = QWidget.RenderFlag.DrawChildren | QWidget.RenderFlag.DrawWindowBackground
    with _prepared_for_export(widget, plot_background):
        # QWidget.render, not QGraphicsView.render: that one renders the bare scene,
        # where legends and labels do not follow the scale.
        QWidget.render(widget, painter, QPoint(0, 0), QRegion(), flags)


def _render(widget: QWidget, size: QSize, plot_background: QColor | None) -> QImage:
    image = _new_image(size, QColor(Qt.GlobalColor.white))
    painter = QPainter(image)
    try:
        _paint_widget(widget, painter, size, plot_background)
    finally:
        painter.end()
    return image


def _rgb(image: QImage) -> np.ndarray:
    img = image.convertToFormat(QImage.Format.Format_RGBA8888)
    w, h = img.width(), img.height()
    raw = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes())
    return raw.reshape(h, img.bytesPerLine())[:, : w * 4].reshape(h, w, 4)[..., :3].astype(np.int16)


def _transparent_render(widget: QWidget, size: QSize) -> QImage:
    """Render over white and over black plot backgrounds and recover the alpha from the two.

    A pixel drawn with opacity a over a background b shows a·c + (1 − a)·b, so the
    difference between the white and the black rendering is (1 − a)·255.
    """
    on_white = _rgb(_render(widget, size, QColor(255, 255, 255)))
    on_black = _rgb(_render(widget, size, QColor(0, 0, 0)))
    alpha = 255 - (on_white - on_black).max(axis=-1)
    alpha = np.clip(np.maximum(alpha, on_black.max(axis=-1)), 0, 255)
    out = np.empty(on_black.shape[:2] + (4,), dtype=np.uint8)
    out[..., :3] = np.minimum(on_black, alpha[..., None])  # premultiplied colour = over black
    out[..., 3] = alpha
    h, w = on_black.shape[0], on_black.shape[1]
    image = QImage(out.data, w, h, 4 * w, QImage.Format.Format_RGBA8888_Premultiplied)
    return image.copy()  # detach from the numpy buffer


def render_widget_image(widget: QWidget, scale: float = 1, transparent: bool = False) -> QImage:
    """Any widget (a plot, the whole window) as an image of exactly its size × ``scale``.

    ``transparent`` makes plot backgrounds transparent; other widgets keep theirs.
    """
    size = _target_size(widget, scale)
    if transparent:
        return _transparent_render(widget, size)
    return _render(widget, size, QColor(255, 255, 255))


# -- public API ------------------------------------------------------------------
def save_widget_png(
    widget: QWidget, path: str | os.PathLike[str], scale: float = 1, transparent: bool = False
) -> Path:
    """Save ``widget`` (the whole window or any part) as a PNG of its size × ``scale``."""
    return _write(path, encode_png(render_widget_image(widget, scale, transparent)))


def save_plot_png(
    plot_widget: pg.GraphicsView,
    path: str | os.PathLike[str],
    scale: float = 1,
    transparent: bool = False,
) -> Path:
    """Save a plot as a PNG of exactly its size × ``scale``, white or transparent behind."""
    return _write(path, encode_png(render_widget_image(plot_widget, scale, transparent)))


def save_plot_svg(
    plot_widget: pg.GraphicsView,
    path: str | os.PathLike[str],
    title: str = "Compile Studio plot",
    description: str = "",
) -> Path:
    """Save a plot as an SVG (vector paths, white background) with a title and description."""
    size = _target_size(plot_widget, 1)
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    gen = QSvgGenerator()
    gen.setOutputDevice(buf)
    gen.setSize(size)
    gen.setViewBox(QRect(0, 0, size.width(), size.height()))
    gen.setTitle(title)
    gen.setDescription(description or title)
    painter = QPainter()
    if not painter.begin(gen):
        raise ExportError("cannot start the SVG renderer")
    try:
        painter.fillRect(QRectF(0, 0, size.width(), size.height()), QColor(Qt.GlobalColor.white))
        _paint_widget(plot_widget, painter, size, QColor(255, 255, 255))
    finally:
        painter.end()
        buf.close()
    return _write(path, bytes(data.data()))


def copy_widget_to_clipboard(widget: QWidget) -> None:
    """Put an image of ``widget`` (a plot or any widget) on the clipboard."""
    image = render_widget_image(widget, 1, False)
    clipboard = QApplication.clipboard()
    if clipboard is None:
        raise ExportError("no clipboard is available")
    clipboard.setImage(image)


def _clean(text: str, limit: int) -> str:
    text = re.sub(r"[^A-Za-z0-9_.+-]+", "-", text).strip("-_.")
    return text[:limit].rstrip("-_.+")


def default_file_name(
    config: BenchmarkConfig | dict[str, Any] | None, suffix: str, when: datetime | None = None
) -> str:
    """A file name like ``20250101-120000_mlp1024-512_b64_fp32_cuda_eager+default.png``."""
    stamp = (when or datetime.now()).strftime("%Y%m%d-%H%M%S")
    slug = ""
    if isinstance(config, dict):
        try:
            config = BenchmarkConfig.from_dict(config)
        except (ConfigError, ValueError, TypeError):
            config = None
    if isinstance(config, BenchmarkConfig):
        label = _clean(config.label or "", 30)
        slug = _clean(config.slug(), 60)
        if label:
            slug = f"{label}_{slug}"[:80].rstrip("-_.+")
    name = f"{stamp}_{slug}" if slug else f"{stamp}_compile-studio"
    return name + suffix
