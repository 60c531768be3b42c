"""Colour-blind-safe series colours (Okabe & Ito), ordered for a white background."""

from __future__ import annotations

from PySide6.QtGui import QColor

#: Okabe–Ito palette, most distinguishable on white first (yellow last: low contrast).
OKABE_ITO: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow
)

#: Axis, text and grid colours used on the plots' white background.
FOREGROUND = "#333333"
MUTED = "#888888"
WARMUP_SHADE = QColor(0, 0, 0, 18)


def series_color(index: int) -> QColor:
    """The colour of the ``index``-th series (cycles after eight)."""
    return QColor(OKABE_ITO[index % len(OKABE_ITO)])


def with_alpha(color: QColor, alpha: int) -> QColor:
    """A copy of ``color`` with the given alpha (0–255)."""
    c = QColor(color)
    c.setAlpha(alpha)
    return c
