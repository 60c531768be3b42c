"""A worker started ahead of the next run on this machine, so that Run starts measuring at once.

Starting a worker costs seconds (Python, then ``import torch``). The window's
:class:`~compile_studio.gui.live_run.LiveRun` keeps a :class:`StandbyKeeper`:
shortly after the window opens, and once a run has fully ended, it starts a
local worker that imports torch, says hello and waits for its config
(:class:`~compile_studio.launchers.standby_worker.StandbyWorker`; its hello is read on a
background thread). Run hands it to the session when it is the process the
run would have started anyway (:func:`~compile_studio.jobs.session.fresh_worker_reason`);
otherwise the run starts a new worker as usual. Never during a run: a run in
progress is not disturbed by a process importing torch.
``COMPILE_STUDIO_STANDBY=0`` turns it off.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from ..core.config import BenchmarkConfig
from ..jobs.session import (
    compile_hosts_wanted,
    fresh_worker_reason,
    hello_timeout_s,
    standby_launcher,
)
from ..jobs.workers import StandbyWorker, WorkerLauncher, WorkerStartFailed

#: Set to ``0`` to start no worker ahead of a run.
STANDBY_ENV = "COMPILE_STUDIO_STANDBY"
#: After the window opens: it paints first.
OPEN_DELAY_MS = 500
#: After a run has ended (its worker reaped).
AFTER_RUN_DELAY_MS = 500


def standby_enabled() -> bool:
    """Whether a worker is started ahead (``COMPILE_STUDIO_STANDBY`` is not ``0``)."""
    return os.environ.get(STANDBY_ENV, "1").strip() != "0"


class StandbyKeeper(QObject):
    """Keeps at most one worker started ahead on this machine; ``changed`` says when its state changes.

    ``busy`` says whether a run is going on (or still ending): no worker is started then.
    """

    changed = Signal()
    #: the standby's state changed (emitted from its thread, delivered on this object's)
    _state_changed = Signal()

    def __init__(self, parent: QObject | None = None, busy: Callable[[], bool] = lambda: False):
        super().__init__(parent)
        self._busy = busy
        #: the configuration the next run will likely have (the form's; None: not known): the
        #: worker started ahead starts a compile process ahead for each of its compiled variants
        self.next_config: Callable[[], BenchmarkConfig | None] = lambda: None
        self._standby: StandbyWorker | None = None
        self._closed = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.start_now)
        self._state_changed.connect(self._on_state_changed)

    @property
    def standby(self) -> StandbyWorker | None:
        """The worker started ahead (None when there is none)."""
        return self._standby

    def schedule(self, delay_ms: int) -> None:
        """Start a worker ahead in ``delay_ms`` (unless turned off, closed, or one is there)."""
        if self._closed or not standby_enabled():
            return
        self._timer.start(delay_ms)

    def start_now(self) -> None:
        """Start a worker ahead now, unless a run is going on or a usable one is there."""
        if self._closed or not standby_enabled() or self._busy():
            return
        if self._standby is not None and self._standby.usable:
            return
        try:
            launcher = standby_launcher()
            if not launcher.runs_here():
                return  # a worker command or prefix of the user's: started for each run
            self._standby = StandbyWorker(
                launcher, hello_timeout_s(), on_change=self._state_changed.emit,
                hosts=self._hosts_wanted(),
            )
        except (OSError, ValueError):
            self._standby = None
            return
        self._standby.start()
        self.changed.emit()

    def _hosts_wanted(self) -> int:
        """The compile processes to start ahead: one per compiled variant of the next run's
        likely configuration (none when it compiles nothing); one when unknown."""
        try:
            config = self.next_config()
        except (ValueError, TypeError):
            config = None
        if config is None or config.compile_cache == "cold":
            return 1  # a cold run starts a process of its own: one ahead, as without a form
        return compile_hosts_wanted(config)

    def config_changed(self) -> None:
        """The next run's likely configuration changed: a worker started ahead that has fewer
        compile processes ahead than its compiled variants want is asked for more (never fewer:
        a run closes those it does not use)."""
        standby = self._standby
        if standby is not None:
            standby.want_hosts(self._hosts_wanted())

    def take_for(
        self, config: BenchmarkConfig, launcher: WorkerLauncher | None
    ) -> tuple[StandbyWorker | None, str]:
        """The worker started ahead, taken for a run of ``config`` (None: start a new one) and why not.

        One that does not fit is kept when it may fit a later run (ready and
        idle: a cold cache, another target); one still importing torch or
        started with another environment is ended, so the run is not disturbed.
        """
        self._timer.stop()
        standby = self._standby
        if standby is None:
            return None, "no worker was started ahead"
        reason = fresh_worker_reason(config, launcher or WorkerLauncher.local(), standby)
        if reason is None and standby.take() is not None:
            self._let_go(standby)  # the run's now
            self.changed.emit()
            return standby, ""
        try:
            still_fits = standby.matches(standby_launcher())
        except WorkerStartFailed:
            still_fits = False
        if standby.state != "ready" or not standby.usable or not still_fits:
            self._let_go(standby)
            standby.close()
            self.changed.emit()
        return None, reason or "the worker started ahead has ended"

    def describe(self) -> str:
        """What the worker started ahead is doing, in words ("" when there is none)."""
        return self._standby.describe() if self._standby is not None else ""

    def also_busy(self, check: Callable[[], bool]) -> None:
        """No worker is started ahead while ``check()`` is true either (a sweep running)."""
        busy = self._busy
        self._busy = lambda: busy() or check()

    def other_job(self, running: bool) -> None:
        """Another job that starts its own workers (a sweep) started (``running``) or ended:
        a worker still starting ends; after it, one is started ahead again."""
        if running:
            self.end_if_starting()
        else:
            self.schedule(AFTER_RUN_DELAY_MS)

    def end_if_starting(self) -> None:
        """End a worker still importing torch (work that must not be disturbed begins now);
        one that is ready waits idle and stays."""
        self._timer.stop()
        standby = self._standby
        if standby is not None and standby.state == "starting":
            self._let_go(standby)
            standby.close()
            self.changed.emit()

    def close(self) -> None:
        """End the worker started ahead (window closing) and start no other."""
        self._closed = True
        self._timer.stop()
        standby = self._standby
        if standby is not None:
            self._let_go(standby)
            standby.close()

    def _on_state_changed(self) -> None:
        standby = self._standby
        if standby is not None and standby.state in ("ended", "closed"):
            self._let_go(standby)  # a run starts its own; the next one is started after it
        self.changed.emit()

    def _let_go(self, standby: StandbyWorker) -> None:
        """``standby`` is this keeper's no more, and its thread signals this object no more
        (once the window closes, this object may be deleted while that thread still runs)."""
        if self._standby is standby:
            self._standby = None
        standby.detach()
