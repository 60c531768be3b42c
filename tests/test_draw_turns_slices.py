"""A pause's work is cut into turns of the event loop (gui/draw_turns.py, real widgets
offscreen): the update in one, the paint in the next, and each repaint the paint asked for in a
turn of its own, the answer after the last; no turn holds the window for the sum."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QEvent, QObject, QTimer
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from compile_studio.core import protocol
from compile_studio.gui import draw_turns
from support.turn_thread import PausingThread


def _pause(block: int) -> protocol.TurnEvent:
    return protocol.TurnEvent(block=block, state="pause", variant="eager",
                              sent_ns=draw_turns.time.monotonic_ns(), cap_ms=10_000.0)


def _in_next_turn(parent: QObject, order: list[str], text: str) -> None:
    """Note ``text`` in the event loop's next turn: a timer (only the loop fires it; posted
    events sent on purpose, as a paint's, do not), kept alive by ``parent``."""
    timer = QTimer(parent)
    timer.setSingleShot(True)
    timer.timeout.connect(lambda: order.append(text))
    timer.start(0)


class _PaintsSeen(QObject):
    def __init__(self, order: list[str], names: dict[QObject, str]) -> None:
        super().__init__()
        self._order, self._names = order, names

    def eventFilter(self, watched, event):  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.Paint and watched in self._names:
            self._order.append("paint " + self._names[watched])
        return False


def test_the_update_and_the_paint_of_a_pause_take_two_slices_of_the_event_loop(qtbot):
    order: list[str] = []
    label = QLabel("plots")
    qtbot.addWidget(label)

    def draw() -> None:
        label.setText(f"plots {len(order)}")
        order.append("update")
        # an event that comes while the window updates (input, a batch of samples): handled
        # before the paint, not after the whole pause
        _in_next_turn(label, order, "between")

    turns = draw_turns.DrawTurns(label, draw)
    seen = _PaintsSeen(order, {label: "label"})
    label.installEventFilter(seen)
    label.show()
    qtbot.waitUntil(lambda: turns.paints.count > 0, timeout=5000)
    thread = PausingThread(order)
    turns.follow(thread)
    order.clear()
    turns._on_turn(_pause(0))
    assert order == ["update"], "the paint waits for a later turn of the event loop"
    assert thread.answered == [] and turns.paints.held
    qtbot.waitUntil(lambda: thread.answered == [0], timeout=5000)
    assert order == ["update", "between", "paint label", "answer"], order
    assert turns.drawn == 1 and turns.paints.held
    turns.release()


def test_what_a_pause_s_paint_asks_for_is_painted_in_a_slice_of_its_own_before_the_answer(qtbot):
    """A paint that changes what is shown (a legend laid out anew, an axis that grows) asks for
    another repaint: painted in the pause, but in its own turn of the event loop."""
    order: list[str] = []
    window = QWidget()
    qtbot.addWidget(window)
    layout = QVBoxLayout(window)

    class Asking(QLabel):
        """Its paint changes the note below it (once asked to), as a legend's layout would."""

        ask = False

        def paintEvent(self, event):  # noqa: N802 - Qt API
            super().paintEvent(event)
            if self.ask:
                self.ask = False
                note.setText("laid out anew, wider than before")
                _in_next_turn(self, order, "between")

    plots, note = Asking("plots"), QLabel("note")
    layout.addWidget(plots)
    layout.addWidget(note)
    window.resize(400, 200)

    def draw() -> None:
        plots.setText("plots, updated")
        plots.ask = True

    turns = draw_turns.DrawTurns(window, draw)
    seen = _PaintsSeen(order, {plots: "plots", note: "note"})
    for w in (plots, note):
        w.installEventFilter(seen)
    window.show()
    qtbot.waitUntil(lambda: turns.paints.count > 0, timeout=5000)
    thread = PausingThread(order)
    turns.follow(thread)
    count = turns.paints.count
    order.clear()
    thread.turn.emit(_pause(0))
    qtbot.waitUntil(lambda: thread.answered == [0], timeout=5000)
    assert order.index("paint plots") < order.index("between") < order.index("paint note") < order.index("answer"), order
    assert turns.paints.count - count == 2, "the paint, and the one it asked for"
    assert turns.drawn == 1 and turns.paints.held, "nothing painted once it has answered"
    turns.release()


def test_the_views_found_when_a_run_starts_are_prepared_and_a_view_gone_is_looked_for_again(qtbot, monkeypatch):
    window = QWidget()
    qtbot.addWidget(window)
    layout = QVBoxLayout(window)
    first = pg.PlotWidget()
    layout.addWidget(first)
    turns = draw_turns.DrawTurns(window, lambda: None)
    window.show()
    qtbot.waitUntil(lambda: turns.paints.count > 0, timeout=5000)
    looked: list[int] = []
    find = window.findChildren

    def counting(kind):
        looked.append(1)
        return find(kind)

    window.findChildren = counting
    turns.follow(PausingThread())
    assert len(looked) == 1 and turns.paints._views == [first]
    prepared: list[object] = []
    prepare = draw_turns._prepare
    monkeypatch.setattr(draw_turns, "_prepare", lambda view: (prepared.append(view), prepare(view)))
    for _ in range(3):
        turns.paints.paint_now()
    assert prepared == [first] * 3 and len(looked) == 1, "the views found at the start are used"
    first.setParent(None)
    first.deleteLater()
    QCoreApplication.sendPostedEvents(None, int(QEvent.Type.DeferredDelete))
    second = pg.PlotWidget()
    layout.addWidget(second)
    second.show()
    prepared.clear()
    turns.paints.paint_now()  # the view found before is gone: looked for again, no error
    assert len(looked) == 2 and turns.paints._views == [second] and prepared[-1] is second
    turns.release()
    assert turns.paints._views is None
    turns.paints.paint_now()  # outside a run the views are looked up at each paint, not kept
    assert turns.paints._views is None
