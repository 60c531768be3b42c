"""What the plots show under the mouse: rate-limited mouse tracking, hover labels, leave events."""

from __future__ import annotations

from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject

from .style import FOREGROUND

#: Rate limit of the crosshair and the GPU hover line (mouse move events per second).
CROSSHAIR_RATE_HZ = 30


class LeaveFilter(QObject):
    """Calls ``on_leave`` when the watched widget loses the mouse."""

    def __init__(self, on_leave: Callable[[], None], parent: QObject) -> None:
        super().__init__(parent)
        self._on_leave = on_leave

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.Leave:
            self._on_leave()
        return False


def track_mouse(
    view: pg.GraphicsView,
    on_move: Callable[[tuple], None],
    on_leave: Callable[[], None],
    owner: QObject,
) -> pg.SignalProxy:
    """Call ``on_move`` (rate-limited) as the mouse moves over ``view``, ``on_leave`` when it leaves.

    Returns the signal proxy, which must be kept alive by the caller.
    """
    proxy = pg.SignalProxy(view.scene().sigMouseMoved, rateLimit=CROSSHAIR_RATE_HZ, slot=on_move)
    view.viewport().installEventFilter(LeaveFilter(on_leave, owner))
    return proxy


def hover_label(anchor: tuple[float, float], alpha: int = 225) -> pg.TextItem:
    """A hidden label on a white box, left out of exports (see gui.image_export)."""
    label = pg.TextItem(
        "", color=FOREGROUND, anchor=anchor, fill=pg.mkBrush(255, 255, 255, alpha),
        border=pg.mkPen(180, 180, 180),
    )
    label.setVisible(False)
    label.exclude_from_export = True
    return label
