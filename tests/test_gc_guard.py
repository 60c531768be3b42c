"""The window's process collects garbage on the GUI thread, with its start-up objects frozen once."""

from __future__ import annotations

import gc
import weakref

from gui_helpers import open_window


class _Node:
    """A reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_the_first_window_freezes_what_the_process_holds_once_and_later_cycles_are_collected(qtbot):
    open_window(qtbot)
    frozen = gc.get_freeze_count()
    assert frozen > 10_000  # Qt's, pyqtgraph's, numpy's and the app's modules and classes
    assert not gc.isenabled()  # collection runs on the GUI thread's timer (gc_guard)
    open_window(qtbot)
    assert gc.get_freeze_count() == frozen  # a second window freezes nothing: its objects stay collectable

    cycle = _Node()
    gone = weakref.ref(cycle)
    del cycle
    assert gone() is not None  # automatic collection is off
    gc.collect()
    assert gone() is None
