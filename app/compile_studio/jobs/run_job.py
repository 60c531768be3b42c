"""One benchmark run as a job (:class:`~compile_studio.jobs.job.Job`): its session, its reports, its end.

The window runs it on the thread every job kind runs on (``gui/job_thread.py``):
:class:`RunJob` drives a :class:`~compile_studio.jobs.session.RunSession` and
hands on what it reports — every protocol event, the worker's stderr lines,
the summary rows after each variant (computed here, beside the recorder) and
the worker's pauses for a window to draw in. It ends with the run's
:class:`~compile_studio.results.records.run_result.RunResult`. No Qt, no torch here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..core import protocol
from ..core.config import BenchmarkConfig
from ..launchers.standby_worker import StandbyWorker
from ..launchers.supervisor import WorkerLauncher
from ..results.analysis.summary import SummaryRow, summarize
from ..results.records.run_result import RunResult
from ..results.storage.store import RunStore
from .progress import Progress
from .session import STOPPED_BY_USER, RunSession

__all__ = ["RunJob"]


def _drop(*_args: object) -> None:
    return None


class RunJob:
    """A single run of ``config`` saved in ``store`` (None: kept in memory only).

    The callbacks are called from the thread that calls :meth:`run` (``on_log``
    from the session's stderr reader). ``on_turn`` takes the worker's pauses
    while :meth:`take_turns` is on (then answer each with :meth:`answer_turn`);
    otherwise they are answered at once. The run folder is made here: OSError
    when it cannot be.
    """

    def __init__(
        self,
        config: BenchmarkConfig,
        store: RunStore | None,
        launcher: WorkerLauncher | None = None,
        standby: StandbyWorker | None = None,
        on_event: Callable[[protocol.Event], None] = _drop,
        on_log: Callable[[str], None] = _drop,
        on_summary: Callable[[list[SummaryRow]], None] = _drop,
        on_turn: Callable[[protocol.TurnEvent], None] = _drop,
    ):
        self.config = config
        self.on_event, self.on_log, self.on_summary, self.on_turn = on_event, on_log, on_summary, on_turn
        self.session = RunSession(
            config, store, launcher=launcher, on_event=self._relay, on_log=on_log,
            standby=standby, turn_taker=self._take_turn,
        )
        self.folder: Path | None = self.session.folder
        self.run_id = self.session.run_id
        #: the run as it ended (None until :meth:`run` returns)
        self.result: RunResult | None = None
        self._turns_taken = False

    # -- the Job shape ------------------------------------------------------------------------------
    @property
    def stop_requested(self) -> bool:
        return self.session.stop_requested

    def request_stop(self, message: str = STOPPED_BY_USER) -> None:
        """Ask the worker to stop; escalates to SIGTERM/SIGKILL off the calling thread."""
        self.session.request_stop(message)

    def fraction(self) -> float:
        return self.progress.fraction()

    def run(self) -> RunResult:
        """Run to the end; an error of the session itself is reported as the run's
        ``internal`` error and the run kept as failed (raised on when nothing was recorded)."""
        try:
            run = self.session.run().run
        except Exception as exc:
            said = f"{type(exc).__name__}: {exc}"
            self.on_event(protocol.ErrorEvent(kind=protocol.ErrorKind.INTERNAL, message=said))
            recorder = self.session.recorder
            if recorder is None:
                raise
            recorder.fail(said)
            run = recorder.run
        self.result = run
        self._summarize(run)
        return run

    # -- what a run has besides ------------------------------------------------------------------
    @property
    def progress(self) -> Progress:
        return self.session.progress

    @property
    def worker_pid(self) -> int | None:
        return self.session.worker_pid

    @property
    def worker_prestarted(self) -> bool:
        """Whether the run uses a worker started ahead (known once its worker is chosen)."""
        return self.session.worker_prestarted

    def take_turns(self, on: bool = True) -> None:
        """Whether the worker's pauses go to ``on_turn`` (a window draws in them and answers)
        or are answered here at once (nobody draws)."""
        self._turns_taken = on

    def answer_turn(self, block: int, paints: list[tuple[int, int]] | None) -> None:
        """The window has drawn in the worker's pause before ``block``; ``paints``: its repaints."""
        self.session.answer_turn(block, paints)

    def cut_short(self, message: str) -> None:
        """End the run because its front end goes away: the run is left ``incomplete``."""
        self.session.cut_short(message)

    def _take_turn(self, event: protocol.TurnEvent) -> None:
        if self._turns_taken:
            self.on_turn(event)
        elif event.state == "pause":
            self.session.answer_turn(event.block, None)

    def _summarize(self, run: RunResult | None = None) -> None:
        if run is None:
            recorder = self.session.recorder
            if recorder is None:
                return
            run = recorder.run
        try:
            rows = summarize(run)
        except Exception as exc:  # noqa: BLE001 - a summary that fails leaves the run as it is
            self.on_log(f"summary failed: {exc}")
            return
        self.on_summary(rows)

    def _relay(self, event: protocol.Event) -> None:
        self.on_event(event)
        if isinstance(event, protocol.VariantDoneEvent) or (
            isinstance(event, protocol.ErrorEvent) and event.variant
        ):
            self._summarize()
