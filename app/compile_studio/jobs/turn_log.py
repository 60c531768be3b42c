"""Which timed calls met a repaint of the window: the record behind "drawing and timing take turns".

The worker stamps each timed call's start on the monotonic clock (``samples``
events' ``clock_ns`` and ``starts_us``); a window on the same machine hands
the session the intervals it spent painting, on the same clock. A call
*overlapped a repaint* when its interval [start, start + wall time] meets a
paint interval. The log keeps the calls of each variant in arrays (16 bytes a
call), so the count can be made again when late paints arrive.

No Qt, no torch.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..core import protocol

#: At most this many paint intervals are kept (a long run at a few paints a second stays far below).
MAX_PAINTS = 200_000


class TurnLog:
    """Timed calls per variant and the window's paint intervals; counts the calls that met one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._starts: dict[str, list[np.ndarray]] = {}
        self._ends: dict[str, list[np.ndarray]] = {}
        self._paints: list[tuple[int, int]] = []
        #: whether a front end reported paints (a window on this machine)
        self.watched = False

    def add_samples(self, event: protocol.SamplesEvent) -> None:
        """The timed calls of a ``samples`` event (those without start stamps are not counted)."""
        starts, clock = event.starts_us, event.clock_ns
        if (
            event.phase != protocol.Phase.MEASURE
            or starts is None
            or not isinstance(clock, int)
            or len(starts) != len(event.wall_ms)
        ):
            return
        try:
            begin = clock + np.asarray(starts, dtype=np.int64) * 1000
            wall = np.asarray(event.wall_ms, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            return
        wall = np.where(np.isfinite(wall) & (wall >= 0), wall, 0.0)
        end = begin + (wall * 1e6).astype(np.int64)
        with self._lock:
            self._starts.setdefault(event.variant, []).append(begin)
            self._ends.setdefault(event.variant, []).append(end)

    def add_paints(self, paints: list[tuple[int, int]]) -> None:
        """Paint intervals (monotonic ns) of the window; any thread."""
        good = [(int(a), int(b)) for a, b in paints if b >= a]
        with self._lock:
            self.watched = True
            room = MAX_PAINTS - len(self._paints)
            self._paints.extend(good[: max(0, room)])

    def overlapped(self, variant: str) -> tuple[int, int]:
        """(timed calls of ``variant`` that met a paint, timed calls with start stamps)."""
        with self._lock:
            starts = list(self._starts.get(variant, []))
            ends = list(self._ends.get(variant, []))
            paints = list(self._paints)
        if not starts:
            return 0, 0
        begin = np.concatenate(starts)
        end = np.concatenate(ends)
        return count_overlaps(begin, end, paints), int(begin.size)

    def record(self, variant: str, worker_turns: dict[str, Any]) -> dict[str, Any]:
        """``variant``'s turns as run.json keeps them: the worker's pauses and the overlaps."""
        out = dict(worker_turns)
        met, calls = self.overlapped(variant)
        out["timed_calls_stamped"] = calls
        out["overlapped_repaint"] = met if self.watched else None
        out["paints"] = len(self._paints) if self.watched else None
        return out


def count_overlaps(begin: np.ndarray, end: np.ndarray, paints: list[tuple[int, int]]) -> int:
    """How many intervals [begin_i, end_i] meet any of ``paints`` (each (start, end))."""
    if not paints or begin.size == 0:
        return 0
    p = np.asarray(sorted(paints), dtype=np.int64)
    p_start, p_end = p[:, 0], np.maximum.accumulate(p[:, 1])
    # the last paint starting at or before the call's end: it meets the call when it ends
    # at or after the call's start (p_end is the running max, so earlier paints count too)
    idx = np.searchsorted(p_start, end, side="right") - 1
    ok = idx >= 0
    met = np.zeros(begin.shape, dtype=bool)
    met[ok] = p_end[idx[ok]] >= begin[ok]
    return int(met.sum())
