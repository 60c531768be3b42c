"""Turns between the timed calls and whoever draws them.

Timed calls come in blocks bounded in time (:data:`BLOCK_S`, whatever the
iteration count, the rounds or the model). Before each block the worker sends
its samples so far and a ``turn`` event that pauses, then waits — at most
:data:`ANSWER_CAP_S` — for the supervisor's ``drawn <block>`` line: a window
draws in the pause, a CLI or a remote run answers at once. While a block is
timed nothing is written to the supervisor (the samples wait for the pause),
so the supervisor has nothing to draw. After the timed calls the worker says
``end``: the supervisor may draw freely until the next pause.

The first call after a pause is not timed. Measured on this project's CPU
machine (eager MLPs, a 20 ms wait before each 0.5 s block, 12 blocks, two
runs): the first call after the wait took 7.5–10.3× the steady median for a
64-64-10 MLP at batch 8 (0.022–0.033 ms steady) and 1.11–1.16× for the
1024-1024-512-10 MLP at batch 256; the second call 1.3–1.75× and 1.0–1.08×.
So each block started with one untimed call of the variant it times. That was not enough
for calls of tens of µs: a CLI run of the 64-64-10 MLP at batch 1 (one thread, 5 rounds of
60 calls per variant) still had, by position after the untimed call, medians of 88.5, 32.0,
28.3, 27.0 µs over a steady 25.9 µs (eager) and 183.8, 83.4, 68.5, 63.0 over 55.1 µs
(aot_eager), so the median of such a run sat 7–17 % above ``torch.utils.benchmark``'s in a
process of its own (``bench/fidelity.py --models tiny --threads 1``). Each block now starts
with untimed calls of its variant for at least :data:`SETTLE_S` (one call at least): about
80 calls of a 25 µs model, one call of a model slower than that. So does each stretch of a
variant's timed calls that follows another variant's in the same block (rounds alternate the
variants; the first calls after a switch were as slow as after a pause).

Pure Python and torch-free: the runner owns one :class:`Turns`; the worker's
stdin reader answers through :class:`TurnGate`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..core import protocol

#: Seconds of timed calls between two pauses.
BLOCK_S = 0.5
#: The longest a worker waits for a pause's answer (a busy window must not stall a run).
ANSWER_CAP_S = 0.3
#: Untimed calls of the block's variant after a pause last at least this long (see above).
SETTLE_S = 0.002


class TurnGate:
    """Where the worker waits for ``drawn <block>``; answered from the stdin reader's thread."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._answered = -1
        self._interrupted = False

    def answer(self, block: int) -> None:
        """The supervisor has drawn up to the pause before ``block``."""
        with self._cond:
            self._answered = max(self._answered, block)
            self._cond.notify_all()

    def interrupt(self) -> None:
        """Stop waiting now and from now on (a stop, or the supervisor is gone)."""
        with self._cond:
            self._interrupted = True
            self._cond.notify_all()

    def wait(self, block: int, cap_s: float) -> bool:
        """Wait until ``block`` is answered, at most ``cap_s``; whether it was answered."""
        deadline = time.monotonic() + cap_s
        with self._cond:
            while self._answered < block and not self._interrupted:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return self._answered >= block


class _Sink(Protocol):
    def event(self, event: protocol.Event) -> None: ...

    def hold(self, on: bool) -> None: ...


@dataclass
class TurnStats:
    """One variant's pauses: how many, how long it waited, how many went unanswered."""

    blocks: int = 0
    waited_ms: float = 0.0
    wait_max_ms: float = 0.0
    unanswered: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "blocks": self.blocks,
            "waited_ms": round(self.waited_ms, 3),
            "wait_max_ms": round(self.wait_max_ms, 3),
            "unanswered": self.unanswered,
            "block_s": BLOCK_S,
            "cap_ms": ANSWER_CAP_S * 1000.0,
        }


class Turns:
    """The runner's side: opens blocks of timed calls, pauses between them, closes them.

    ``gate`` None (in-process runs: benchmarks, tests): pauses are sent and
    counted but nothing is waited for.
    """

    def __init__(
        self,
        sink: _Sink,
        gate: TurnGate | None = None,
        block_s: float = BLOCK_S,
        cap_s: float = ANSWER_CAP_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.sink = sink
        self.gate = gate
        self.block_s = block_s
        self.cap_s = cap_s
        self._clock = clock
        self._block = -1
        self._deadline: float | None = None
        self.stats: dict[str, TurnStats] = {}

    @property
    def open(self) -> bool:
        """Whether a block of timed calls is going on."""
        return self._deadline is not None

    def enter(self, variant: str) -> bool:
        """Before timed calls of ``variant``: a pause unless a block is open; whether one was made."""
        if self._deadline is not None:
            return False
        self.pause(variant)
        return True

    def due(self) -> bool:
        """Whether the open block has lasted its time (checked after each timed call)."""
        return self._deadline is not None and self._clock() >= self._deadline

    def remaining_s(self) -> float | None:
        """Seconds left in the open block (None: no block is open), for a loop that reads its
        own clock rather than asking :meth:`due` after each call."""
        return None if self._deadline is None else self._deadline - self._clock()

    def pause(self, variant: str) -> None:
        """Send the samples so far, pause for the supervisor, and open the next block."""
        self._block += 1
        stats = self.stats.setdefault(variant, TurnStats())
        stats.blocks += 1
        self.sink.hold(False)
        self.sink.event(
            protocol.TurnEvent(
                block=self._block, state="pause", variant=variant,
                sent_ns=time.monotonic_ns(), cap_ms=self.cap_s * 1000.0,
            )
        )
        if self.gate is not None:
            t0 = self._clock()
            answered = self.gate.wait(self._block, self.cap_s)
            waited = (self._clock() - t0) * 1000.0
            stats.waited_ms += waited
            stats.wait_max_ms = max(stats.wait_max_ms, waited)
            if not answered:
                stats.unanswered += 1
        self.sink.hold(True)
        self._deadline = self._clock() + self.block_s

    def end(self, variant: str = "") -> None:
        """Close the open block: samples sent, and the supervisor may draw until the next pause."""
        if self._deadline is None:
            return
        self._deadline = None
        self.sink.hold(False)
        self.sink.event(protocol.TurnEvent(block=self._block, state="end", variant=variant,
                                           sent_ns=time.monotonic_ns()))

    def of(self, variant: str) -> dict[str, Any]:
        """``variant``'s pauses as the ``variant_done`` event carries them ({} without any)."""
        stats = self.stats.get(variant)
        return stats.to_dict() if stats is not None else {}
