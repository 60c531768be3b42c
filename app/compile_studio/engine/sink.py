"""Event sinks: where the timed loop's events go, with samples batched."""

from __future__ import annotations

import threading
import time
from typing import Any

from ..core import protocol

#: Samples are sent at most this often (seconds).
BATCH_INTERVAL_S = protocol.SAMPLE_BATCH_S


class BatchingSink:
    """Thread-safe event sink that gathers samples into ``samples`` events.

    A batch holds consecutive iterations of one variant and phase and is sent
    when another event comes, when it stops being consecutive, or at most
    every :data:`BATCH_INTERVAL_S`. Subclasses say where events go (``_write``).
    """

    def __init__(self, interval_s: float = BATCH_INTERVAL_S):
        self._interval = interval_s
        self._lock = threading.RLock()
        self._batch: protocol.SamplesEvent | None = None
        self._last_flush = time.monotonic()
        self.closed = False
        #: (variant, iteration) of the latest sample, for tagging GPU state readings
        self.last_sample: tuple[str, int] | None = None

    def _write(self, event: protocol.Event) -> None:
        raise NotImplementedError

    def start_heartbeat(self, interval_s: float = protocol.HEARTBEAT_S) -> threading.Thread:
        """Send a ``heartbeat`` event every ``interval_s`` from a thread of its own until closed.

        It never waits on the timing thread (the sink's lock is held only to write),
        so a supervisor can tell a busy worker from a stopped or hung one.
        """
        started = time.monotonic()

        def beat() -> None:
            while True:
                with self._lock:  # written beside a pending batch, not flushing it
                    if self.closed:
                        return
                    self._write(protocol.HeartbeatEvent(t_s=round(time.monotonic() - started, 3)))
                time.sleep(interval_s)

        thread = threading.Thread(target=beat, name="compile-studio-heartbeat", daemon=True)
        thread.start()
        return thread

    def event(self, event: protocol.Event) -> None:
        with self._lock:
            self._flush_batch()
            self._write(event)

    def sample(
        self,
        variant: str,
        phase: str,
        iteration: int,
        wall_ms: float,
        device_ms: float | None,
        round_index: int | None = None,
    ) -> None:
        with self._lock:
            self.last_sample = (variant, iteration)
            b = self._batch
            if (
                b is None
                or b.variant != variant
                or b.phase != phase
                or b.round != round_index
                or b.first_iteration + len(b.wall_ms) != iteration
            ):
                self._flush_batch()
                b = self._batch = protocol.SamplesEvent(
                    variant=variant,
                    phase=protocol.Phase(phase),
                    first_iteration=iteration,
                    wall_ms=[],
                    device_ms=[],
                    round=round_index,
                )
            b.wall_ms.append(wall_ms)
            assert b.device_ms is not None
            b.device_ms.append(device_ms)
            if time.monotonic() - self._last_flush >= self._interval:
                self._flush_batch()

    def _flush_batch(self) -> None:
        b = self._batch
        self._batch = None
        self._last_flush = time.monotonic()
        if b and b.wall_ms:
            if b.device_ms is not None and all(d is None for d in b.device_ms):
                b.device_ms = None
            self._write(b)

    def flush(self) -> None:
        with self._lock:
            self._flush_batch()

    def finish(self, status: protocol.RunStatus, **extra: Any) -> None:
        """Flush, send ``done`` once, and refuse anything after it."""
        with self._lock:
            if self.closed:
                return
            self._flush_batch()
            self._write(protocol.DoneEvent(status=status, **extra))
            self.closed = True


class ListSink(BatchingSink):
    """Keeps every event in ``events`` (for in-process use: benchmarks, tests)."""

    def __init__(self, interval_s: float = BATCH_INTERVAL_S):
        super().__init__(interval_s)
        self.events: list[protocol.Event] = []

    def _write(self, event: protocol.Event) -> None:
        self.events.append(event)
