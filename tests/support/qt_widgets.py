"""Qt widgets made by a test are deleted by Qt before Python collects them."""

from __future__ import annotations

import gc
import sys
from typing import Any


def keep_widgets_alive_until_deleted() -> None:
    """qtbot holds its widgets by weak reference: a test that drops its own reference leaves
    a shown window whose Python side is cyclic garbage, and a collection that runs before
    qtbot closes it frees it half-way (Qt then calls into cleared wrappers: crashes in
    ``paintEvent``, ``sizeHint``). Each test's widgets are kept until Qt has deleted them
    (:func:`delete_closed_widgets_then_collect`)."""
    from pytestqt import qtbot as qtbot_module

    add = qtbot_module._add_widget

    def add_and_keep(item, widget, *args, **kwargs):
        add(item, widget, *args, **kwargs)
        item.__dict__.setdefault("kept_qt_widgets", []).append(widget)

    qtbot_module._add_widget = add_and_keep


def delete_closed_widgets_then_collect(item: Any) -> None:
    """After a test: the widgets qtbot closed (``deleteLater``) are deleted now, while their
    Python wrappers are whole, and only then is garbage collected (a window whose wrappers a
    collection cleared before Qt deleted it can crash Qt while it goes). A window turns
    automatic collection off (gui/gc_guard.py): what is due is collected here, on the main
    thread, also in tests that never spin the event loop."""
    qtcore = sys.modules.get("PySide6.QtCore")
    if qtcore is not None and qtcore.QCoreApplication.instance() is not None:
        qtcore.QCoreApplication.sendPostedEvents(None, qtcore.QEvent.Type.DeferredDelete.value)
    item.__dict__.pop("kept_qt_widgets", None)
    guard = sys.modules.get("compile_studio.gui.gc_guard")
    if guard is not None and not gc.isenabled():
        guard.collect_due()
