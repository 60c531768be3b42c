"""What the plots, the summary table, the Why tab and the status line show: the ticked runs, then the running or last run.

:class:`RunViews` follows the window's :class:`~compile_studio.gui.live_run.LiveRun`
(its samples, summaries and status) and the runs ticked in the history, and repaints
the plots at most every :data:`REFRESH_INTERVAL_MS` (once a second while a benchmark
runs, in the pauses the worker leaves between its blocks of timed calls).
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QLabel, QProgressBar, QWidget

from ..core.env_vars import int_from_env
from ..results import RunResult, SummaryRow, summarize
from ..results.report.formatting import why_sentence
from ..results.report.turns_text import turns_line
from .centre_pane import CentrePane
from .draw_turns import DrawTurns
from .history_panel import HistoryPanel, run_display_name
from .live_run import LiveRun
from .plots import SummaryBar

#: Plot repaint interval: at most ~30 repaints a second, however fast samples come.
REFRESH_INTERVAL_MS = 33
#: While a benchmark runs, the plots and the status line are redrawn once a second: every
#: repaint takes CPU time from the core the worker's torch threads share with the window
#: (bench/ui_responsiveness.py, seed MLP, 3 alternating pairs: at 200 ms the window took
#: 0.14-0.21 CPU-s/s and the p99 was 1.8-4.4x its CLI pair's; at 1000 ms, 0.07-0.08 and 1.7-2.1x).
LIVE_REFRESH_INTERVAL_MS = int_from_env("COMPILE_STUDIO_LIVE_REFRESH_MS", 1000, 10, 10_000)


class RunViews(QObject):
    """The plots, table and Why tab of :attr:`current_run` (or the live run) beside the ticked runs,
    and the status bar's phase and progress while a benchmark runs."""

    #: a passing word for the status bar: the text and how long it stays (ms)
    said = Signal(str, int)
    #: a line for the log
    log_line = Signal(str)

    def __init__(self, window: QWidget, live: LiveRun, centre: CentrePane, history: HistoryPanel):
        super().__init__(window)
        self.live, self.history = live, history
        self.plots, self.table_model, self.why_view = centre.plots, centre.table_model, centre.why_view
        #: the saved run shown (None: the live run, or nothing yet)
        self.current_run: RunResult | None = None
        self._summary_cache: dict[str, list[SummaryRow]] = {}
        self._plots_dirty = False
        self.phase_label = QLabel()
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setMaximumWidth(220)
        self.progress_bar.setTextVisible(False)
        self.progress_bar.hide()
        #: the worker's pauses between blocks of timed calls: the window draws in them
        self.turns = DrawTurns(window, self._draw_in_pause)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_INTERVAL_MS)
        self._timer.timeout.connect(self.tick)
        self._timer.start()
        live.samples.connect(self._on_samples)
        live.gpu_state.connect(self._on_gpu_state)
        live.variant_failed.connect(self._on_variant_failed)
        live.summary_changed.connect(self._on_summary)
        live.status_changed.connect(self.update_status)
        history.overlay_changed.connect(self.rebuild)

    def running(self) -> bool:
        return self.live.running

    # -- the live run ---------------------------------------------------------------------------
    def started(self) -> None:
        """A benchmark started: its views from scratch, repainted once a second."""
        self.current_run = None
        self.progress_bar.setValue(0)
        self.progress_bar.show()
        self.rebuild()
        self.update_status()
        self._timer.setInterval(max(REFRESH_INTERVAL_MS, LIVE_REFRESH_INTERVAL_MS))
        self.plots.latency.set_steady_range(True)
        thread = self.live.benchmark_thread
        if thread is not None and self.live.runs_here:
            self.turns.follow(thread)

    def _on_samples(
        self, variant: str, iterations: np.ndarray, wall_ms: np.ndarray, phase: str, round_index: int = -1
    ) -> None:
        key = self.live.key(variant)
        if key not in self.plots.series_keys():
            self.plots.add_series(key, variant)
        self.plots.append(key, iterations, wall_ms, phase, round_index)
        self._plots_dirty = True

    def _on_gpu_state(self, rows: list[dict]) -> None:
        self.plots.append_gpu_state(self.live.run_key, self.live_name(), rows)
        self._plots_dirty = True

    def _on_variant_failed(self, variant: str) -> None:
        key = self.live.key(variant)
        if key not in self.plots.series_keys():
            self.plots.add_series(key, variant)
        self.plots.set_series_failed(key, True)

    def _on_summary(self) -> None:
        self.update_table()
        self.update_live_bars()

    def finished(self, run: RunResult) -> None:
        """The benchmark ended with ``run`` (saved): it is the run shown."""
        self.turns.release()
        self._timer.setInterval(REFRESH_INTERVAL_MS)
        self.plots.latency.set_steady_range(False)
        self.current_run = run
        self.why_view.set_run(run)
        self.plots.summary.set_note(turns_line(run) or "")
        self.live.rename(run_display_name(run))
        if self.live.rows:
            self._summary_cache[self.live.keys.of(run)] = list(self.live.rows)
        self._plots_dirty = True
        self.tick()
        self.progress_bar.hide()
        self.update_status()

    def answer_of_finished(self, run: RunResult) -> None:
        """The table and the answer of the run that ended, as of the saved run (the "why" of its
        diagnostics too), as they read when it is reopened from the history; beside ticked runs,
        the plots too (the run is named as the history names it now)."""
        if run is self.current_run and not self.running():
            if self.overlay_runs():
                self.rebuild()
            else:
                self.update_table()

    # -- status bar and repaints ----------------------------------------------------------------
    def update_status(self) -> None:
        self.phase_label.setText(self.live.status_text())
        if self.live.running:
            # while a variant compiles nothing is counted: the bar says it is busy, the
            # status counts the compile's seconds
            busy = self.live.compile_elapsed_s() is not None
            self.progress_bar.setRange(0, 0 if busy else 1000)
            if not busy:
                self.progress_bar.setValue(int(1000 * self.live.fraction()))

    def plots_held(self) -> bool:
        """Whether the window paints nothing now: a worker on this machine times a block of
        calls (it draws in the pauses between blocks; docs/window.md)."""
        return self.turns.in_block

    def _draw_in_pause(self) -> None:
        """Status and plots up to date (the worker waits for them between two blocks)."""
        self.update_status()
        if self._plots_dirty:
            self._plots_dirty = False
            self.plots.refresh()

    def tick(self) -> None:
        """The refresh timer: the status of a running benchmark, then the plots if they changed;
        nothing while the worker times a block of calls."""
        if self.plots_held():
            return
        if self.live.running:
            self.update_status()
        if self._plots_dirty:
            self._plots_dirty = False
            self.plots.refresh()

    def stop(self) -> None:
        """No more repaints (the window closes)."""
        self._timer.stop()

    # -- what is shown --------------------------------------------------------------------------
    def overlay_runs(self) -> list[RunResult]:
        """The ticked runs shown beside the live or current run."""
        keys = self.live.keys
        shown = {self.live.run_key}
        if self.current_run is not None and not self.running():
            shown.add(keys.of(self.current_run))
        return [r for r in self.history.checked_runs() if keys.of(r) not in shown]

    def runs_shown(self) -> list[RunResult]:
        """The saved runs the plots show, in their order: the ticked ones, then the one shown."""
        shown = self.overlay_runs()
        if self.current_run is not None and not self.running():
            shown.append(self.current_run)
        return shown

    def show(self, run: RunResult, alone: bool = False) -> bool:
        """Show a saved ``run`` in the plots and the table (``alone``: without overlays).

        Not while a benchmark runs (the live run stays shown); returns whether it is shown.
        """
        if self.running():
            self.said.emit("A run is in progress: tick the run in the history to overlay it", 8000)
            return False
        if alone:
            self.history.uncheck_all()
        self.current_run = run
        self.rebuild()
        self.plots.summary.set_note(turns_line(run) or "")
        shown = f"Showing {self.history.names.of(run)} ({run.run_id})"
        if run.load_problems:
            read = "; ".join(run.load_problems)
            self.log_line.emit(f"{run.run_id} was read with problems: {read}")
            self.said.emit(f"{shown}, read with problems: {read}", 15000)
        else:
            self.said.emit(shown, 5000)
        return True

    def run_to_export(self) -> RunResult | None:
        """The run shown, else the only ticked one (None: nothing to export)."""
        if self.current_run is not None:
            return self.current_run
        ticked = self.history.checked_runs()
        return ticked[0] if len(ticked) == 1 else None

    def run_name(self, run: RunResult) -> str:
        """The short name ``run`` has everywhere in the window (see :mod:`run_names`)."""
        return self.history.names.of(run)

    def live_name(self) -> str:
        """The short name of the running (or last live) run, apart from every listed run's."""
        live = self.live
        job = live.run_job
        label = job.config.label.strip() if job is not None else live.name
        try:
            when = datetime.strptime(live.run_id[:15], "%Y%m%d-%H%M%S")
        except ValueError:
            when = None
        return self.history.names.live_name(live.run_key, label or live.name, when)

    def rebuild(self) -> None:
        """Plots and table from scratch: ticked runs, then the running or last run."""
        plots, keys = self.plots, self.live.keys
        plots.clear()
        overlays = self.overlay_runs()
        for run in overlays:
            plots.load_run(run, key_prefix=f"{keys.of(run)}/", label_prefix=f"{self.run_name(run)} · ")
        if self.running() or self.current_run is None:
            self._load_live(f"{self.live_name()} · " if overlays else "")
        else:
            plots.load_run(
                self.current_run,
                key_prefix=f"{keys.of(self.current_run)}/",
                # the run shown may be one picked in the history, not the last live run
                label_prefix=f"{self.run_name(self.current_run)} · " if overlays else "",
            )
        self._plots_dirty = True
        self.tick()
        self.update_table()
        self.why_view.set_run(None if self.running() else self.current_run)

    def _load_live(self, prefix: str) -> None:
        """The live run's series (named with ``prefix``), GPU state and bars."""
        live = self.live
        for variant in live.variants:
            key = live.key(variant)
            self.plots.add_series(key, prefix + variant)
            for iterations, wall_ms, phase in live.chunks.get(variant, []):
                self.plots.append(key, iterations, wall_ms, phase)
            if variant in live.failed:
                self.plots.set_series_failed(key, True)
        if live.gpu_rows:
            self.plots.append_gpu_state(live.run_key, self.live_name(), live.gpu_rows)
        self.update_live_bars()

    def update_live_bars(self) -> None:
        live = self.live
        if not live.run_id and not live.running:
            return
        prefix = f"{live.run_key}/"
        bars = [b for b in self.plots.summary_bars() if not b.key.startswith(prefix)]
        label_prefix = f"{self.live_name()} · " if self.overlay_runs() else ""
        for row in live.rows:
            bar = SummaryBar.from_row(row, prefix + row.name, label_prefix + row.name)
            if bar is not None:
                bars.append(bar)
        self.plots.set_summary(bars)

    def rows_of(self, run: RunResult) -> list[SummaryRow]:
        """The summary rows of a saved ``run`` (computed once)."""
        key = self.live.keys.of(run)
        rows = self._summary_cache.get(key)
        if rows is None:
            rows = summarize(run)
            self._summary_cache[key] = rows
        return rows

    def update_table(self) -> None:
        runs: list[tuple[str, list[SummaryRow]]] = []
        why: dict[tuple[str, str], str] = {}

        def add(run: RunResult) -> None:
            name, rows = self.run_name(run), self.rows_of(run)
            runs.append((name, rows))
            for r in rows:
                because = why_sentence(run, r.name) if r.name != "eager" else None
                if because:
                    why[(name, r.name)] = because

        current, keys = self.current_run, self.live.keys
        if self.running() or current is None:
            if self.live.rows or self.running():
                runs.append((self.live_name(), self.live.rows))
        else:
            add(current)
        for run in self.overlay_runs():
            if current is not None and keys.of(run) == keys.of(current):
                continue
            add(run)
        self.table_model.set_runs(runs, why)
