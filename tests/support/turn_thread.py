"""A stand-in for a run's thread, for the tests of the window's side of the turns (gui/draw_turns.py)."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class PausingThread(QObject):
    """What DrawTurns follows: a ``turn`` signal, ``take_turns``, and the answers it sends back
    (``answered``: the blocks, in order; "answer" noted in ``order`` too when one is given)."""

    turn = Signal(object)

    def __init__(self, order: list[str] | None = None) -> None:
        super().__init__()
        self.answered: list[int] = []
        self.taken = False
        self._order = order

    def take_turns(self, on: bool) -> None:
        self.taken = on

    def answer_turn(self, block: int, paints: list) -> None:
        self.answered.append(block)
        if self._order is not None:
            self._order.append("answer")
