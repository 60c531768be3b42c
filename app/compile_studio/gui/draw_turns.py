"""The window's side of the turns: it draws while the worker pauses, and only then.

A worker on this machine times its calls in blocks of about half a second and
pauses before each (``turn`` events, see ``engine/turns.py``). In a pause the
window brings its plots and status up to date, paints them, and answers; from
its answer to the next pause it paints nothing at all (its repaints are held
back, the refresh timer skips, samples wait for the pause), and a pause paints
only what changed (the plots, the status), not the whole window.

The update and the paint take separate turns of the event loop, and so does
each further repaint a paint asks for (a legend or an axis laid out anew, at
most :data:`PAINTS_PER_PAUSE` in all): no single turn holds the loop for the
sum, so the window answers input between them. The answer goes after the last.
A pause the window reaches after the worker's cap has passed is not drawn, nor
is one whose update took past the cap or whose paint would end past it (as
long as the last pause's first paint took): the worker is timing again, and
what changed is painted in the next pause.

:class:`PaintTimes` times every repaint of the window (each backing-store
sync, from the update request that starts it to its end) on the monotonic
clock the worker stamps its calls with; the intervals go back with each
answer, and the session counts the timed calls that met one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QGraphicsView, QWidget

from ..core import protocol

#: Most repaint rounds a pause paints (the first, and those it asked for), one event-loop turn each.
PAINTS_PER_PAUSE = 3


class PaintTimes(QObject):
    """The intervals (monotonic ns) in which ``window`` repainted, kept until taken; and the
    window's repaints held back while :meth:`hold` is on.

    Every repaint of a window asked for, or made at once (``repaint()``), comes as an update
    request to it; while held, those requests are kept back, and what they would have
    painted stays marked until the hold ends: then only that is painted, once. An expose of
    the window (another window moved off it) is painted when it comes, held or not: while
    held, its interval is kept with the others, so the timed calls it met are counted.
    """

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self._window = window
        self._inside = False
        self._intervals: list[tuple[int, int]] = []
        #: repaints seen since the window opened
        self.count = 0
        self.held = False
        #: an update request came while held (Qt asks for no other until one is handled)
        self._waiting = False
        #: the window's platform window, once watched for exposes
        self._handle: QObject | None = None
        #: the graphics views found when the run started (None: look them up at each paint)
        self._views: list[QGraphicsView] | None = None
        window.installEventFilter(self)

    def hold(self, on: bool) -> None:
        """Hold the window's repaints back (``on``), or let them go: what waited is painted in
        the event loop's next turn, or at once by :meth:`paint_now`."""
        self.held = on
        handle = self._window.windowHandle()
        if on and handle is not None and handle is not self._handle:
            self._handle = handle
            handle.installEventFilter(self)
        if not on and self._waiting:
            self._waiting = False
            QCoreApplication.postEvent(
                self._window, QEvent(QEvent.Type.UpdateRequest), Qt.EventPriority.LowEventPriority.value
            )

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if self._inside:
            return False
        if watched is self._handle and event.type() == QEvent.Type.Expose and self.held:
            return self._timed(watched, event)  # painted now (what is exposed must be), and kept
        if watched is not self._window or event.type() != QEvent.Type.UpdateRequest:
            return False
        if self.held:
            self._waiting = True  # nothing painted now; all of it once the hold ends
            return True
        return self._timed(self._window, event)

    def _timed(self, target: QObject, event: QEvent) -> bool:
        """``event`` handled by ``target`` now (a repaint), its interval kept."""
        self._inside = True
        t0 = time.monotonic_ns()
        try:
            target.event(event)  # the repaint itself, timed
        finally:
            self._inside = False
            self._intervals.append((t0, time.monotonic_ns()))
            self.count += 1
        return True

    def take(self) -> list[tuple[int, int]]:
        """The intervals since the last take."""
        out, self._intervals = self._intervals, []
        return out

    def find_views(self) -> None:
        """Look up the graphics views shown in the window once (at a run's start), for
        :meth:`paint_now` to bring to their range in each pause without searching the widget tree."""
        self._views = self._window.findChildren(QGraphicsView)

    def forget_views(self) -> None:
        """The run ended: the views are looked up again at the next."""
        self._views = None

    def paint_now(self) -> None:
        """Paint, now, what is waiting to be painted: one round (pyqtgraph's scene posts its
        updates, a label that changed width asks for a new layout; what those ask for is painted
        in the next round: see :meth:`settle`).

        A pyqtgraph view moves its items to a new range only as it starts painting, which marks
        them all changed again: a second repaint of the whole plot, the same picture. The views
        shown are brought to their range first (:func:`prepare_views`), so one repaint does."""
        views = prepare_views(self._window, self._views)
        if self._views is not None:
            self._views = views  # looked up again if one had gone
        self._send_posted()

    def settle(self) -> bool:
        """Held: take in what the last paint asked for (posted updates, a new layout), painting
        nothing; returns whether a repaint waits for the next round."""
        self._send_posted()
        return self._waiting

    def _send_posted(self) -> None:
        """pyqtgraph's posted updates, then the layouts they asked for, then the window's update
        request: painted, or kept back while held."""
        QCoreApplication.sendPostedEvents(None, int(QEvent.Type.MetaCall))
        QCoreApplication.sendPostedEvents(None, int(QEvent.Type.LayoutRequest))
        QCoreApplication.sendPostedEvents(self._window, int(QEvent.Type.UpdateRequest))

    def paint_all(self, rounds: int = PAINTS_PER_PAUSE) -> None:
        """Outside a pause: paint what waits, and what that asks for, in up to ``rounds`` rounds at once."""
        for _ in range(rounds):
            self.paint_now()


def prepare_views(window: QWidget, views: list[QGraphicsView] | None = None) -> list[QGraphicsView]:
    """Bring each graphics view shown in ``window`` to what it will paint: a pyqtgraph scene's
    ``prepareForPaint`` (which its view calls at the start of each paint) moves its view boxes
    to their new range now, so the changes it makes are painted in the same repaint.

    ``views``: those found before (looked up anew if None or one has gone); returns those used."""
    if views is not None:
        try:
            for view in views:
                _prepare(view)
            return views
        except RuntimeError:  # a view found before was deleted: look again
            pass
    views = window.findChildren(QGraphicsView)
    for view in views:
        _prepare(view)
    return views


def _prepare(view: QGraphicsView) -> None:
    scene = view.scene()
    prepare = getattr(scene, "prepareForPaint", None)
    if prepare is not None and view.isVisible():
        prepare()


class DrawTurns(QObject):
    """Takes the worker's pauses for the window: ``draw`` brings it up to date, a later turn of
    the event loop paints it, then it answers.

    ``follow`` a run's thread when it starts, ``release`` when it ends; ``in_block``
    says whether the worker is timing a block now (the window then paints nothing).
    """

    def __init__(self, window: QWidget, draw: Callable[[], None]) -> None:
        super().__init__(window)
        self.paints = PaintTimes(window)
        self._window = window
        self._draw = draw
        self._thread: Any = None
        self._in_block = False
        #: pauses drawn; pauses reached too late to draw, and draws that outlasted the cap
        #: (the worker had gone on: nothing was painted, the next pause paints it)
        self.drawn = 0
        self.late = 0
        self.overran = 0
        #: how long the last pause's first paint took (ns): a pause paints only if that much
        #: fits in its cap
        self._paint_ns = 0
        #: the pause brought up to date whose paint waits for its turn of the event loop; its
        #: deadline (monotonic ns) and the paint rounds done
        self._pending: protocol.TurnEvent | None = None
        self._deadline = 0
        self._rounds = 0
        self._paint_timer = QTimer(self)
        self._paint_timer.setSingleShot(True)
        self._paint_timer.setInterval(0)
        self._paint_timer.timeout.connect(self._paint_pending)

    @property
    def in_block(self) -> bool:
        return self._thread is not None and self._in_block

    def follow(self, thread: Any) -> None:
        """Take the pauses of ``thread`` (a run's JobThread, with a ``turn`` signal)."""
        self.release()
        self._thread = thread
        self.paints.take()
        self.paints.find_views()
        thread.turn.connect(self._on_turn)
        thread.take_turns(True)

    def _block(self, on: bool) -> None:
        """In a block the window paints nothing at all (its repaints held back; what changed is
        painted when they are let go, in the next pause: only what changed)."""
        self._in_block = on
        self.paints.hold(on)

    def _drop_pending(self) -> None:
        self._pending = None
        self._paint_timer.stop()

    def release(self) -> None:
        """The followed run ended: the window draws freely again."""
        thread, self._thread = self._thread, None
        self._drop_pending()
        self._block(False)
        self.paints.forget_views()
        if thread is not None:
            thread.take_turns(False)
            try:
                thread.turn.disconnect(self._on_turn)
            except (RuntimeError, TypeError):
                pass

    def _on_turn(self, event: protocol.TurnEvent) -> None:
        thread = self._thread
        if thread is None:
            return
        self._drop_pending()  # a pause not yet painted is over: the worker has gone on
        if event.state != "pause":
            self._block(False)
            self._draw()
            return
        cap_ns = int(max(0.0, float(event.cap_ms)) * 1e6)
        deadline = int(event.sent_ns) + cap_ns
        if time.monotonic_ns() >= deadline:
            self.late += 1  # the worker stopped waiting: it times calls now, paint nothing
            self._block(True)
            return
        # brought up to date with repaints still held (a widget that repaints at once, as a
        # progress bar given a new value does, would paint before the plots are up to date,
        # and the plots be painted again), then painted in a later turn of the event loop
        self._block(True)
        self._draw()
        if time.monotonic_ns() >= deadline:
            # bringing the plots up to date took past the cap: the worker times calls again
            self.overran += 1
            return
        self._pending, self._deadline, self._rounds = event, deadline, 0
        self._paint_timer.start()

    def _paint_pending(self) -> None:
        """One paint round of the pending pause; another turn for what it asked for, or the answer."""
        event, thread = self._pending, self._thread
        if event is None or thread is None:
            return
        now = time.monotonic_ns()
        if self._rounds == 0 and now + self._paint_ns >= self._deadline:
            # the paint would not end before the worker times again (the last one took this
            # long); the estimate halves, so one slow paint cannot keep the plot still
            self.overran += 1
            self._paint_ns //= 2
            self._pending = None
            return
        self._block(False)
        start = time.monotonic_ns()
        self.paints.paint_now()
        spent = time.monotonic_ns() - start
        self._block(True)
        if self._rounds == 0:
            self._paint_ns = spent
        self._rounds += 1
        more = self.paints.settle()
        if more and self._rounds < PAINTS_PER_PAUSE and time.monotonic_ns() + spent < self._deadline:
            self._paint_timer.start()  # what this paint asked for, in a turn of its own
            return
        # done, or a further round would not fit: what waits is painted in the next pause
        self._pending = None
        self.drawn += 1
        thread.answer_turn(event.block, self.paints.take())
