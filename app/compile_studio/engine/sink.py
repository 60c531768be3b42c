"""Event sinks: where the timed loop's events go, with samples batched."""

from __future__ import annotations

import threading
import time
from typing import Any

from ..core import protocol

#: Samples are sent at most this often (seconds), outside the blocks of timed calls.
BATCH_INTERVAL_S = protocol.SAMPLE_BATCH_S
#: At most this many samples in one ``samples`` event (a protocol line stays well under 1 MiB).
MAX_SAMPLES_PER_EVENT = 4096


class BatchingSink:
    """Thread-safe event sink that gathers samples into ``samples`` events.

    A batch holds consecutive iterations of one variant and phase and is sent
    when another event comes, when it stops being consecutive, or at most
    every :data:`BATCH_INTERVAL_S`. While held (a block of timed calls, see
    :mod:`.turns`) nothing is sent: batches wait for the end of the hold.
    Subclasses say where events go (``_write``).
    """

    def __init__(self, interval_s: float = BATCH_INTERVAL_S):
        self._interval = interval_s
        self._lock = threading.RLock()
        self._batch: protocol.SamplesEvent | None = None
        #: batches finished (and events sent) while held, sent in order when the hold ends
        self._held: list[protocol.Event] = []
        self._holding = False
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
        """Send ``event`` after the samples so far; while held, it waits with them, in order."""
        with self._lock:
            if self._holding and not isinstance(event, protocol.TurnEvent):
                self._keep_batch()
                self._held.append(event)
                return
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
        start_ns: int | None = None,
    ) -> None:
        """One call's timing; ``start_ns``: the monotonic clock at its start (timed calls)."""
        with self._lock:
            self.last_sample = (variant, iteration)
            b = self._batch
            if (
                b is None
                or b.variant != variant
                or b.phase != phase
                or b.round != round_index
                or b.first_iteration + len(b.wall_ms) != iteration
                or (b.clock_ns is None) != (start_ns is None)
            ):
                if self._holding:
                    self._keep_batch()
                else:
                    self._flush_batch()
                b = self._batch = protocol.SamplesEvent(
                    variant=variant,
                    phase=protocol.Phase(phase),
                    first_iteration=iteration,
                    wall_ms=[],
                    device_ms=[],
                    round=round_index,
                    clock_ns=start_ns,
                    starts_us=None if start_ns is None else [],
                )
            b.wall_ms.append(wall_ms)
            assert b.device_ms is not None
            b.device_ms.append(device_ms)
            if start_ns is not None and b.starts_us is not None and b.clock_ns is not None:
                b.starts_us.append((start_ns - b.clock_ns) // 1000)
            if not self._holding and time.monotonic() - self._last_flush >= self._interval:
                self._flush_batch()

    def samples(
        self,
        variant: str,
        phase: str,
        first_iteration: int,
        walls_ns: list[int],
        round_index: int | None,
        starts_ns: list[int],
    ) -> None:
        """Consecutive host-timed calls at once (ns each, with their monotonic starts), as
        :meth:`sample` of each in turn: the timed loop keeps them in two lists and hands them
        over after the calls, doing nothing more between two timed calls."""
        with self._lock:
            if not walls_ns:
                return
            # the first opens or continues a batch; while held (a block's calls, handed over
            # before its pause) the rest join that batch at once, as sample() would add them
            self.sample(variant, phase, first_iteration, walls_ns[0] / 1e6, None, round_index, starts_ns[0])
            b = self._batch
            if not self._holding or b is None or b.starts_us is None or b.clock_ns is None:
                for k in range(1, len(walls_ns)):
                    self.sample(variant, phase, first_iteration + k, walls_ns[k] / 1e6, None, round_index,
                                starts_ns[k])
                return
            clock_ns = b.clock_ns
            b.wall_ms.extend([w / 1e6 for w in walls_ns[1:]])
            assert b.device_ms is not None
            b.device_ms.extend([None] * (len(walls_ns) - 1))
            b.starts_us.extend([(t - clock_ns) // 1000 for t in starts_ns[1:]])
            self.last_sample = (variant, first_iteration + len(walls_ns) - 1)

    def hold(self, on: bool) -> None:
        """Send nothing while ``on`` (batches wait); ending the hold sends what waited."""
        with self._lock:
            self._holding = on
            if not on:
                self._flush_batch()

    def _keep_batch(self) -> None:
        b = self._batch
        self._batch = None
        if b and b.wall_ms:
            self._held.append(b)

    def _flush_batch(self) -> None:
        self._keep_batch()
        held, self._held = self._held, []
        self._last_flush = time.monotonic()
        for b in held:
            if not isinstance(b, protocol.SamplesEvent):
                self._write(b)
                continue
            if b.device_ms is not None and all(d is None for d in b.device_ms):
                b.device_ms = None
            for part in split_samples(b, MAX_SAMPLES_PER_EVENT):
                self._write(part)

    def flush(self) -> None:
        """Send the samples so far (while held: at the end of the hold)."""
        with self._lock:
            if self._holding:
                self._keep_batch()
                return
            self._flush_batch()

    def finish(self, status: protocol.RunStatus, **extra: Any) -> None:
        """Flush, send ``done`` once, and refuse anything after it."""
        with self._lock:
            if self.closed:
                return
            self._flush_batch()
            self._write(protocol.DoneEvent(status=status, **extra))
            self.closed = True


def split_samples(event: protocol.SamplesEvent, size: int) -> list[protocol.SamplesEvent]:
    """``event`` as events of at most ``size`` consecutive samples each."""
    n = len(event.wall_ms)
    if n <= size:
        return [event]
    out = []
    for lo in range(0, n, size):
        hi = min(n, lo + size)
        starts = event.starts_us
        clock_ns = event.clock_ns
        part_starts = None
        if starts is not None and clock_ns is not None:
            base = starts[lo]
            clock_ns = clock_ns + base * 1000
            part_starts = [s - base for s in starts[lo:hi]]
        out.append(
            protocol.SamplesEvent(
                variant=event.variant,
                phase=event.phase,
                first_iteration=event.first_iteration + lo,
                wall_ms=event.wall_ms[lo:hi],
                device_ms=None if event.device_ms is None else event.device_ms[lo:hi],
                round=event.round,
                clock_ns=clock_ns,
                starts_us=part_starts,
            )
        )
    return out


class ListSink(BatchingSink):
    """Keeps every event in ``events`` (for in-process use: benchmarks, tests)."""

    def __init__(self, interval_s: float = BATCH_INTERVAL_S):
        super().__init__(interval_s)
        self.events: list[protocol.Event] = []

    def _write(self, event: protocol.Event) -> None:
        self.events.append(event)
