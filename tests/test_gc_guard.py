"""Cyclic garbage is collected on the GUI thread only, never on a supervising thread; the
process's start-up objects are frozen once, at the first window."""

from __future__ import annotations

import gc
import threading
import weakref

from PySide6.QtCore import QObject

from support.gui_helpers import open_window


class _Holder:
    """A reference cycle holding a Qt object; records the thread that frees it."""

    freed_on: list[int] = []

    def __init__(self) -> None:
        self.qt = QObject()
        self.me = self

    def __del__(self) -> None:
        _Holder.freed_on.append(threading.get_ident())


class _Node:
    """A reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_garbage_made_on_another_thread_is_freed_on_the_gui_thread(qtbot):
    open_window(qtbot)
    assert not gc.isenabled(), "the window turns automatic collection off"
    _Holder.freed_on.clear()

    def make_garbage() -> None:
        _Holder()
        keep = []
        for _ in range(5000):  # well past generation 0's threshold: Python would collect here
            cycle: list = []
            cycle.append(cycle)
            keep.append(cycle)
        del keep

    worker = threading.Thread(target=make_garbage)
    worker.start()
    worker.join()
    assert _Holder.freed_on == [], "nothing was collected on the other thread"
    qtbot.waitUntil(lambda: bool(_Holder.freed_on), timeout=5000)
    assert _Holder.freed_on == [threading.get_ident()]


def test_the_first_window_freezes_what_the_process_holds_once_and_later_cycles_are_collected(qtbot):
    open_window(qtbot)
    frozen = gc.get_freeze_count()
    assert frozen > 10_000  # Qt's, pyqtgraph's, numpy's and the app's modules and classes
    open_window(qtbot)
    assert gc.get_freeze_count() == frozen  # a second window freezes nothing: its objects stay collectable

    cycle = _Node()
    gone = weakref.ref(cycle)
    del cycle
    assert gone() is not None  # automatic collection is off
    gc.collect()
    assert gone() is None
