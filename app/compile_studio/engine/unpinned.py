"""The figure a user's own program gets: the variants timed again with no thread pinned.

A pinned run (the timing thread alone on its core, torch's other threads on the
others) measures the app's controlled case. A user's program lets the system
place every thread; on a quiet machine that can be slower (a thread moved, two
of torch's threads on one core), on a busy one faster (a pinned thread cannot
leave a core another program takes). After the timed rounds, every thread of
the worker goes back on all its cores and each variant runs UNPINNED_ROUNDS
short blocks, alternating (A B A B …); the median of those calls is the
variant's ``unpinned_ms``, recorded beside its pinned median. Then the timing
thread is pinned again for what follows.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from .run_errors import Stopped
from .run_state import RunState
from .timing import no_gc, settle
from .variant import Variant

#: Alternating blocks per variant, and calls per block (at most; a short run times fewer).
UNPINNED_ROUNDS = 3
UNPINNED_CALLS = 40


def unpinned_calls(iterations: int) -> int:
    """Calls per block: a fifth of the run's timed calls, 1 to UNPINNED_CALLS."""
    return max(1, min(UNPINNED_CALLS, iterations // 5))


def time_unpinned(run: RunState, live: list[Variant]) -> None:
    """Each live variant's ``unpinned_ms``, when the run is pinned (else nothing is timed)."""
    if not live or not run.pin.pinned:
        return
    count = unpinned_calls(run.config.iterations)
    samples: dict[str, list[float]] = {v.name: [] for v in live}
    failed: set[str] = set()  # a variant that fails here has no figure; its timed calls stand
    run.pin.unpin_all()
    try:
        with run.no_grad(), no_gc():
            for _ in range(UNPINNED_ROUNDS):
                for v in live:
                    if v.name in failed:
                        continue
                    try:
                        samples[v.name] += _block(run, v, count)
                    except Stopped:
                        raise
                    except Exception:  # noqa: BLE001
                        failed.add(v.name)
                        samples[v.name] = []
    finally:
        run.pin.pin()
    for v in live:
        if samples[v.name]:
            v.unpinned_ms = statistics.median(samples[v.name])


def _block(run: RunState, v: Variant, count: int) -> list[float]:
    step, x, flush = v.step, run.x, run.flush

    def call() -> Any:
        return step(x)

    settle(call, run.timer.sync)  # untimed: the first calls after the threads moved
    if run.timer.host_only:  # the clock around the call itself, as the timed rounds read it
        counter_ns, stop = time.perf_counter_ns, run.stop
        walls = []
        for _ in range(count):
            if stop.is_set():
                raise Stopped
            if flush is not None:
                flush.evict()  # cold L2: outside the call's span, as the other path
            a = counter_ns()
            step(x)
            walls.append(counter_ns() - a)
        return [w / 1e6 for w in walls]
    out = []
    for _ in range(count):
        if run.stop.is_set():
            raise Stopped
        if flush is not None:
            flush.evict()
            run.timer.sync()
        wall, _device = run.timer.time(call)
        out.append(wall)
    return out
