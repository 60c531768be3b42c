"""A pause whose paint would end past the worker's cap is left for the next one
(gui/draw_turns.py, a real widget offscreen, the clock of the turns replaced by one the test
moves): the paint that met timed calls under load is not started, and one slow paint does not
keep the plot still."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QObject
from PySide6.QtWidgets import QLabel

from compile_studio.core import protocol
from compile_studio.gui import draw_turns
from support.turn_thread import PausingThread


class FakeClock:
    def __init__(self) -> None:
        self.ns = 1_000_000_000

    def monotonic_ns(self) -> int:
        return self.ns

    def advance(self, s: float) -> None:
        self.ns += int(s * 1e9)


def test_a_paint_that_would_outlast_the_cap_waits_for_the_next_pause(qtbot, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(draw_turns, "time", clock)
    label = QLabel("plots")
    qtbot.addWidget(label)
    label.show()
    turns = draw_turns.DrawTurns(label, lambda: clock.advance(0.1))  # bringing the plots up to date
    monkeypatch.setattr(turns.paints, "paint_now", lambda: clock.advance(0.25))  # a slow paint
    thread = PausingThread()
    turns.follow(thread)

    def pause(block: int) -> None:
        clock.advance(0.5)
        taken = turns.drawn + turns.overran
        thread.turn.emit(protocol.TurnEvent(block=block, state="pause", variant="eager", sent_ns=clock.ns, cap_ms=300.0))
        qtbot.waitUntil(lambda: turns.drawn + turns.overran > taken, timeout=5000)  # painted in a later turn

    pause(0)  # nothing known of the paint yet: 0.1 + 0.25 s, past the cap, but it could not know
    assert (turns.drawn, turns.overran) == (1, 0)
    pause(1)  # 0.1 s of update + the last paint's 0.25 s would end past 0.3 s: not painted
    assert (turns.drawn, turns.overran) == (1, 1)
    assert thread.answered == [0]  # the worker goes on at its cap
    pause(2)  # the estimate halved (0.125 s): 0.1 + 0.125 fits, it paints again
    assert (turns.drawn, turns.overran) == (2, 1)
    assert thread.answered == [0, 2]
    turns.release()




def test_a_pause_paints_what_changed_once_though_a_progress_bar_repaints_at_once(qtbot):
    """QProgressBar repaints at once when given a new value: were repaints let go while the
    window is brought up to date, that would paint before the plots are, and the pause's paint
    them again. Held until the paint: one repaint per pause, of what changed only."""
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QProgressBar, QVBoxLayout, QWidget

    window = QWidget()
    qtbot.addWidget(window)
    bar, label, still = QProgressBar(window), QLabel("plots", window), QLabel("the form", window)
    layout = QVBoxLayout(window)
    for w in (bar, label, still):
        layout.addWidget(w)
    bar.setRange(0, 1000)
    bar.setValue(0)
    window.resize(400, 200)
    painted: list[str] = []

    class Seen(QObject):
        def eventFilter(self, watched, event):  # noqa: N802 - Qt API
            if event.type() == QEvent.Type.Paint and watched in (bar, label, still):
                painted.append("bar" if watched is bar else watched.text())
            return False

    seen = Seen()
    for w in (bar, label, still):
        w.installEventFilter(seen)

    def draw() -> None:
        bar.setValue(bar.value() + 100)
        label.setText(f"plots {bar.value()}")

    turns = draw_turns.DrawTurns(window, draw)
    window.show()
    qtbot.waitUntil(lambda: turns.paints.count > 0, timeout=5000)  # shown and painted once
    thread = PausingThread()
    turns.follow(thread)
    for block in range(4):
        count = turns.paints.count
        painted.clear()
        thread.turn.emit(protocol.TurnEvent(block=block, state="pause", variant="eager",
                                            sent_ns=draw_turns.time.monotonic_ns(), cap_ms=10_000.0))
        qtbot.waitUntil(lambda b=block: thread.answered[-1:] == [b], timeout=5000)
        assert turns.paints.count - count == 1, "one repaint per pause"
        assert "the form" not in painted, "what did not change is not painted again"
        assert painted.count("bar") == 1 and f"plots {bar.value()}" in painted, painted
        assert turns.paints.held, "nothing painted once it has answered"
        bar.repaint()  # a repaint asked for at once while the worker times: held back
        assert turns.paints.count - count == 1
    turns.release()
    qtbot.waitUntil(lambda: not turns.paints.held and turns.paints.count > count + 1, timeout=5000)
    assert bar.value() == 400


def test_an_expose_while_the_worker_times_is_painted_and_its_interval_kept(qtbot):
    """What is exposed must be painted when it is (another window moved off this one); while
    the worker times a block that paint is kept with the others, so the calls it met count."""
    from PySide6.QtGui import QExposeEvent, QRegion

    label = QLabel("plots")
    qtbot.addWidget(label)
    turns = draw_turns.DrawTurns(label, lambda: label.setText("drawn"))
    label.show()
    qtbot.waitUntil(lambda: turns.paints.count > 0, timeout=5000)
    thread = PausingThread()
    turns.follow(thread)
    thread.turn.emit(protocol.TurnEvent(block=0, state="pause", variant="eager",
                                        sent_ns=draw_turns.time.monotonic_ns(), cap_ms=10_000.0))
    qtbot.waitUntil(lambda: thread.answered == [0], timeout=5000)
    assert turns.paints.held
    turns.paints.take()
    label.setText("changed in the block")  # held back
    QCoreApplication.sendPostedEvents(None, 0)
    assert turns.paints.take() == []
    before = draw_turns.time.monotonic_ns()
    QCoreApplication.sendEvent(label.windowHandle(), QExposeEvent(QRegion(0, 0, 40, 10)))
    [(start, end)] = turns.paints.take()
    assert before <= start <= end
    turns.release()
