"""Images of the window and its plots: PNG (any scale, white or transparent), SVG, clipboard.

Every file goes through a temp file in the target folder and a rename, so a
failed export leaves neither a partial file nor a temp file behind; every
failure is an :class:`ExportError` whose message can be shown to the user.

A plot export may carry a caption (title, configuration, what the marks
mean): it is written into the plot's title row for the export only, so the
image keeps the plot's size. SVGs hold vector paths and text only (the view's
cached background pixmap is turned off while one is drawn).
"""

from __future__ import annotations

import html
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
from PySide6.QtWidgets import QApplication, QGraphicsItem, QGraphicsView, QWidget

from ..core.config import BenchmarkConfig, ConfigError
from ..results.storage.file_io import atomic_write_bytes

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


# -- captions ------------------------------------------------------------------
def caption_html(lines: list[str]) -> str:
    """Caption lines as the HTML of a plot title: the first bold, all escaped."""
    escaped = [html.escape(line) for line in lines if line]
    if not escaped:
        return ""
    escaped[0] = f"<b>{escaped[0]}</b>"
    return "<br>".join(escaped)


def _caption_slot(widget: QWidget) -> tuple[Any, Any] | None:
    """(label item, grid layout whose row 0 holds it) of a plot's title row, or None."""
    slot = getattr(widget, "export_caption_slot", None)
    if callable(slot):
        return slot()
    if isinstance(widget, pg.PlotWidget):
        item = widget.getPlotItem()
        return item.titleLabel, item.layout
    return None


@contextmanager
def _captioned(widget: QWidget, caption: str | None) -> Iterator[None]:
    """Write ``caption`` (HTML) into the title row of the plot ``widget`` while exporting.

    A title already shown (the distribution's note on outliers) stays below it.
    """
    slot = _caption_slot(widget) if caption else None
    if slot is None:
        yield
        return
    label, layout = slot
    saved = (
        label.text, dict(label.opts), label.isVisible(), label.minimumHeight(), label.maximumHeight(),
        layout.rowMinimumHeight(0), layout.rowMaximumHeight(0),
    )
    old_text, old_opts, old_visible, old_min, old_max, row_min, row_max = saved
    text = caption if not (old_visible and old_text) else f"{caption}<br>{old_text}"
    try:
        # wrap within the label's own cell: a wider text would widen the plot's layout
        # past the view and push the plot's right side out of the image
        cell = label.width() if label.width() > 0 else widget.width() - 120.0
        label.item.setTextWidth(max(80.0, cell - 8.0))
        label.setText(text, color="#333333", size="9pt")
        height = label.item.boundingRect().height() + 6
        label.setMinimumHeight(height)
        label.setMaximumHeight(height)
        layout.setRowFixedHeight(0, height)
        label.setVisible(True)
        layout.activate()
        yield
    finally:
        label.item.setTextWidth(-1)
        label.opts = old_opts
        label.setText(old_text)
        label.setMinimumHeight(old_min)
        label.setMaximumHeight(old_max)
        layout.setRowMinimumHeight(0, row_min)
        layout.setRowMaximumHeight(0, row_max)
        label.setVisible(old_visible)
        layout.activate()


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
    caches = []
    item_caches = []
    for view in views:
        # a cached background is drawn as a pixmap: a full-size <image> in an SVG
        caches.append((view, view.cacheMode()))
        view.setCacheMode(QGraphicsView.CacheModeFlag.CacheNone)
        for item in view.scene().items():
            if getattr(item, EXCLUDE_ATTR, False) and item.isVisible():
                item.setVisible(False)
                hidden.append(item)
            # a cached item (the axes) would be drawn as a pixmap too, and blurred when scaled
            if item.cacheMode() != QGraphicsItem.CacheMode.NoCache:
                item_caches.append((item, item.cacheMode()))
                item.setCacheMode(QGraphicsItem.CacheMode.NoCache)
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
        for view, mode in caches:
            view.setCacheMode(mode)
        for item, item_mode in item_caches:
            item.setCacheMode(item_mode)


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


def render_widget_image(
    widget: QWidget, scale: float = 1, transparent: bool = False, caption: str | None = None
) -> QImage:
    """Any widget (a plot, the whole window) as an image of exactly its size × ``scale``.

    ``transparent`` makes plot backgrounds transparent; other widgets keep theirs.
    ``caption`` (HTML, see :func:`caption_html`) is written into a plot's title row.
    """
    size = _target_size(widget, scale)
    with _captioned(widget, caption):
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
    caption: str | None = None,
) -> Path:
    """Save a plot as a PNG of exactly its size × ``scale``, white or transparent behind.

    ``caption`` (HTML) is written into the plot's title row in the file only.
    """
    return _write(path, encode_png(render_widget_image(plot_widget, scale, transparent, caption)))


def save_plot_svg(
    plot_widget: pg.GraphicsView,
    path: str | os.PathLike[str],
    title: str = "Compile Studio plot",
    description: str = "",
    caption: str | None = None,
) -> Path:
    """Save a plot as an SVG (vector paths and text, a white rectangle behind; no embedded
    image) with a title and description; ``caption`` (HTML) is drawn in its title row."""
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
        with _captioned(plot_widget, caption), _curves_clipped_to_views(plot_widget):
            _paint_widget(plot_widget, painter, size, QColor(255, 255, 255))
    finally:
        painter.end()
        buf.close()
    return _write(path, bytes(data.data()))


def clip_polyline(
    x: np.ndarray, y: np.ndarray, left: float, top: float, right: float, bottom: float
) -> tuple[np.ndarray, np.ndarray]:
    """The parts of the polyline (``x``, ``y``) inside the rectangle, cut where they cross its
    edges, pieces apart separated by NaN (Liang–Barsky per segment)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) < 2:
        inside = (x >= left) & (x <= right) & (y >= top) & (y <= bottom)
        return x[inside], y[inside]
    x0, y0, x1, y1 = x[:-1], y[:-1], x[1:], y[1:]
    dx, dy = x1 - x0, y1 - y0
    t0 = np.zeros(len(dx))
    t1 = np.ones(len(dx))
    visible = np.isfinite(x0) & np.isfinite(y0) & np.isfinite(x1) & np.isfinite(y1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for p, q in ((-dx, x0 - left), (dx, right - x0), (-dy, y0 - top), (dy, bottom - y0)):
            r = q / p
            parallel = p == 0
            visible &= ~(parallel & (q < 0))
            t0 = np.where((p < 0) & ~parallel, np.maximum(t0, r), t0)
            t1 = np.where((p > 0) & ~parallel, np.minimum(t1, r), t1)
    visible &= t0 <= t1
    xs: list[float] = []
    ys: list[float] = []
    joined = False  # the last point written is where the next segment starts
    for i in np.flatnonzero(visible):
        if not (joined and t0[i] == 0.0 and xs and i > 0 and visible[i - 1] and t1[i - 1] == 1.0):
            if xs:
                xs.append(np.nan)
                ys.append(np.nan)
            xs.append(float(x0[i] + t0[i] * dx[i]))
            ys.append(float(y0[i] + t0[i] * dy[i]))
        xs.append(float(x0[i] + t1[i] * dx[i]))
        ys.append(float(y0[i] + t1[i] * dy[i]))
        joined = t1[i] == 1.0
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


@contextmanager
def _curves_clipped_to_views(widget: QWidget) -> Iterator[None]:
    """Curves cut to their plot's view while an SVG is drawn: an SVG has no clipping of its
    own from Qt, so a spike beyond the range shown would run through the title (or, in Qt's
    own viewer, the whole curve be left out as too large). Put back as they were after."""
    views = list(widget.findChildren(pg.GraphicsView))
    if isinstance(widget, pg.GraphicsView):
        views.append(widget)
    saved = []
    for view in views:
        for item in view.scene().items():
            if not isinstance(item, pg.PlotCurveItem) or not item.isVisible():
                continue
            if item.opts.get("stepMode") or item.opts.get("fillLevel") is not None:
                continue  # histograms: drawn from their own edges, inside the range
            box = item.getViewBox()
            x, y = item.xData, item.yData
            if box is None or x is None or y is None or len(x) != len(y):
                continue
            rect = box.viewRect()
            cx, cy = clip_polyline(x, y, rect.left(), rect.top(), rect.right(), rect.bottom())
            saved.append((item, x, y, item.opts.get("connect", "all"), item.opts.get("skipFiniteCheck", False)))
            item.setData(x=cx, y=cy, connect="finite", skipFiniteCheck=False)
    try:
        yield
    finally:
        for item, x, y, connect, skip in saved:
            item.setData(x=x, y=y, connect=connect, skipFiniteCheck=skip)


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
