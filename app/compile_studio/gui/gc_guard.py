"""Python's cyclic garbage collector runs on the GUI thread only.

The window's process runs Python on other threads too (the thread that
supervises a worker, sweep points, probes). An automatic collection runs on
whichever thread happens to allocate, and if the garbage it finds holds a Qt
object (a menu, a plot item in a reference cycle), that object is destroyed
on the wrong thread: Qt may deadlock or crash (pyqtgraph's ``GarbageCollector``
exists for the same reason). So automatic collection is turned off and the
GUI thread collects on a timer, generation by generation, as Python would.

What the process holds when the first window starts (the modules of Qt,
pyqtgraph, numpy and this app: ~80,000 objects that live as long as the
process) is moved out of the collector's sight once (``gc.freeze``): a full
collection then looks only at what was made since: a few milliseconds where
it took 40-60 ms, each one a stall of the event loop.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QTimer

#: How often the GUI thread collects what is due.
INTERVAL_MS = 250

_guard: QTimer | None = None


def collect_due() -> int:
    """Collect the oldest generation whose threshold has been passed; objects freed."""
    t0, t1, t2 = gc.get_threshold()
    c0, c1, c2 = gc.get_count()
    if t0 <= 0 or c0 <= t0:
        return 0
    generation = 0
    if c1 > t1:
        generation = 2 if c2 > t2 else 1
    return gc.collect(generation)


def collect_on_gui_thread(app: QObject | None = None) -> None:
    """Turn automatic collection off; the calling (GUI) thread collects on a timer. Once."""
    global _guard
    app = app if app is not None else QCoreApplication.instance()
    if app is None:
        return
    if _guard is not None:
        try:
            _guard.isActive()
            gc.disable()
            return
        except RuntimeError:  # its application was destroyed: a new one needs a timer
            _guard = None
    timer = QTimer(app)
    timer.setInterval(INTERVAL_MS)
    timer.timeout.connect(collect_due)
    timer.start()
    _guard = timer
    gc.disable()
    _freeze_once()


_frozen = False


def _freeze_once() -> None:
    """Once per process: collect, then keep everything still alive out of later collections."""
    global _frozen
    if not _frozen:
        gc.collect()
        gc.freeze()
        _frozen = True


def delete_before_exit(window: QObject) -> None:
    """Delete ``window`` now, while Python is whole, and collect what is left on this thread.

    Otherwise what the window holds is freed during the interpreter's finalization,
    in no order Qt can rely on (a closed window's views may still get events).
    """
    window.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()
