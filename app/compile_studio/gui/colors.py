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

#: Colours after the eight of Okabe–Ito (Paul Tol's muted and dark sets, told apart from those
#: on white), so up to sixteen variants never share a colour.
EXTRA_COLORS: tuple[str, ...] = (
    "#882255",  # wine
    "#117733",  # green
    "#332288",  # indigo
    "#999933",  # olive
    "#AA4499",  # purple
    "#44AA99",  # teal
    "#661100",  # brown
    "#6699CC",  # steel blue
)

#: Every series colour, in the order they are handed out (yellow, hard to see on white, last).
SERIES_COLORS: tuple[str, ...] = OKABE_ITO[:7] + EXTRA_COLORS + OKABE_ITO[7:]

#: Axis, text and grid colours used on the plots' white background.
FOREGROUND = "#333333"
MUTED = "#888888"
WARMUP_SHADE = QColor(0, 0, 0, 18)


def series_color(index: int) -> QColor:
    """The colour of the ``index``-th series (distinct for sixteen, then cycling)."""
    return QColor(SERIES_COLORS[index % len(SERIES_COLORS)])


def with_alpha(color: QColor, alpha: int) -> QColor:
    """A copy of ``color`` with the given alpha (0–255)."""
    c = QColor(color)
    c.setAlpha(alpha)
    return c
