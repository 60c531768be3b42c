"""The timing thread on its own core while nothing compiles: pinned for timed calls, not for compiles.

The processes and threads a compile starts (Inductor's compile workers, the
C++ compiler) inherit the affinity of the thread that starts them, so the
thread goes back on every core it had before a compile.
"""

from __future__ import annotations

import contextlib
import os

import torch

from ..core import affinity


class TimingThreadPin:
    """Pins this (the timing) thread to the launcher's core and gives it its cores back."""

    def __init__(self) -> None:
        #: where the timing thread ran, in words (known at the first pinning)
        self.text: str | None = None
        self._pinned = False
        self._unpinned_mask: set[int] | None = None

    def pin(self, later_compiles: bool = False) -> None:
        """On its core (once; again after :meth:`unpin`).

        ``later_compiles``: more variants compile later (said in the words).
        """
        if self._pinned:
            return
        try:
            before: set[int] | None = set(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            before = None
        pinned, text = pin_timing_thread()
        if self.text is None:
            self.text = text + (
                "; it left its core while later variants compiled" if pinned and later_compiles else ""
            )
        if pinned:
            self._pinned = True
            self._unpinned_mask = before

    @property
    def pinned(self) -> bool:
        """Whether the timing thread is on its core now."""
        return self._pinned

    def unpin_all(self) -> None:
        """Every thread of the process back on the cores the timing thread had before it was
        pinned, for the system to place, as in a user's own program (:meth:`pin` again after)."""
        if not self._pinned:
            return
        self._pinned = False
        if self._unpinned_mask:
            affinity.pin_process(self._unpinned_mask)

    def unpin(self) -> None:
        """The timing thread back on the cores it had (a compile follows)."""
        if not self._pinned:
            return
        self._pinned = False
        if self._unpinned_mask:
            with contextlib.suppress(AttributeError, OSError):
                os.sched_setaffinity(0, self._unpinned_mask)


def pin_timing_thread() -> tuple[bool, str]:
    """Give this (the timing) thread the core the launcher chose: (pinned?, words for run.json).

    Called once every compile before the timed calls is done: whatever a compile starts
    inherits this thread's cores.
    """
    cpu = affinity.timing_cpu_from_env()
    if cpu is None:
        return False, "not pinned (a remote worker, one core, or turned off)"
    if cpu not in affinity.available_cpus():
        return False, f"not pinned: CPU {cpu} is not available to the worker"
    if torch.get_num_threads() > 1:
        # start torch's thread pool now, from a thread on every core: threads it
        # starts later would inherit the timing thread's one core
        torch.empty(1 << 20).fill_(1.0)
    if not affinity.pin_timing_thread(cpu):
        return False, f"not pinned: the system refused CPU {cpu}"
    try:
        others = max(0, len(os.listdir("/proc/self/task")) - 1)
    except OSError:
        others = 0
    return True, (
        f"timing thread alone on CPU {cpu}; {torch.get_num_threads()} torch threads, "
        f"{others} other threads on the other cores"
    )
