"""The main window: the form, the plots, the table, the log and the history, laid out and wired.

The window shows; it does not run. A :class:`~compile_studio.gui.live_run.LiveRun`
holds the running benchmark's state and says what changed; the File menu's
exports are :class:`~compile_studio.gui.export_actions.ExportActions`.

The panes are built and sized in :mod:`window_panes`, the menus in
:mod:`window_menus`, the machine's environment asked for in
:mod:`window_environment`, what the plots and table show in :mod:`window_views`;
this module wires them to the live run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.ma  # noqa: F401 - the first np.median imports it (~35 ms): at start-up, not mid-run
from PySide6.QtCore import QEvent, QObject, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
)

from ..core.config import BenchmarkConfig, EnvironmentInfo
from ..core.env_vars import int_from_env
from ..core.protocol import HelloEvent, RunStatus
from ..jobs.trust import Agreement
from ..results import RunResult, RunStore, SummaryRow, summarize
from ..results.turns_text import turns_line
from .coldstart_view import ColdStartView
from .config_panel import ConfigPanel
from .draw_turns import DrawTurns
from .environment_watch import EnvironmentWatch
from .export_actions import ExportActions
from .gc_guard import collect_on_gui_thread
from .help_menu import HelpMenu, WindowShortcutGuard
from .history_panel import HistoryPanel, run_display_name
from .live_run import LiveRun
from .log_panel import LogPanel
from .paths import runs_dir
from .plots import PlotPanel
from .plots.panel import run_hint
from .settings import AppSettings
from .standby import AFTER_RUN_DELAY_MS
from .summary_table import SummaryTableModel, SummaryTableView
from .sweep_view import SweepView
from .targets_dialog import TargetChooser
from .trust_dialog import NOT_AGREED, CodeConsent, code_fields, code_from_loaded
from .verdict_lines import VerdictLines
from .why_view import WhyView
from .window_menus import build_menus
from .window_panes import BOTTOM_PANE_HEIGHT as BOTTOM_PANE_HEIGHT  # where it was first
from .window_panes import HISTORY_WIDTH as HISTORY_WIDTH  # where it was first
from .window_panes import bottom_tab_changed, build_panes, centre_state, fit_form_width, form_width
from .window_views import live_name, rebuild_views, update_live_bars, update_table

#: Plot repaint interval: at most ~30 repaints a second, however fast samples come.
REFRESH_INTERVAL_MS = 33
#: While a benchmark runs, the plots and the status line are redrawn once a second: every
#: repaint takes CPU time from the core the worker's torch threads share with the window
#: (bench/ui_responsiveness.py, seed MLP, 3 alternating pairs: at 200 ms the window took
#: 0.14-0.21 CPU-s/s and the p99 was 1.8-4.4x its CLI pair's; at 1000 ms, 0.07-0.08 and 1.7-2.1x).
LIVE_REFRESH_INTERVAL_MS = int_from_env("COMPILE_STUDIO_LIVE_REFRESH_MS", 1000, 10, 10_000)
#: How long closing the window waits for a running worker to stop (it is killed by then).
CLOSE_WAIT_MS = 8000
#: The message a run folder keeps when the window went away during the run.
CLOSED_DURING_RUN = "the window was closed during the run; the samples measured until then are kept"


class MainWindow(QMainWindow):
    """Compile Studio's window.

    Left: the configuration form with Run/Stop. Centre: plots (latency,
    distribution, summary, GPU) above the summary table and the worker log.
    Right: the run history. The benchmark runs in a worker process; the
    window only shows what its :class:`LiveRun` reports.
    """

    run_finished = Signal(object)
    environment_changed = Signal(object)

    # the panes (made by window_panes.build_panes)
    config_panel: ConfigPanel
    run_button: QPushButton
    stop_button: QPushButton
    run_blocker_label: QLabel
    error_banner: QFrame
    error_label: QLabel
    plots: PlotPanel
    table_model: SummaryTableModel
    table_view: SummaryTableView
    log: LogPanel
    bottom_tabs: QTabWidget
    why_view: WhyView
    centre_splitter: QSplitter
    history: HistoryPanel
    main_splitter: QSplitter
    verdict_lines: VerdictLines
    env_label: QLabel
    phase_label: QLabel
    #: what a Try it comparison is doing, in place of the phase while it runs (trial_status.py)
    trial_status_label: QLabel
    progress_bar: QProgressBar
    _form_scroll: QScrollArea
    #: whether the panes keep the widths the window chose (until the user drags a handle)
    _auto_widths: bool
    #: the centre panes' heights before the Why tab grew the bottom one (None: it did not)
    _sizes_before_why: list[int] | None
    # the menus' actions and what they install (made by window_menus.build_menus)
    open_action: QAction
    quit_action: QAction
    run_action: QAction
    stop_action: QAction
    log_scale_action: QAction
    refresh_history_action: QAction
    sweep_view: SweepView
    coldstart_view: ColdStartView
    target_chooser: TargetChooser
    help_menu: HelpMenu
    shortcut_guard: WindowShortcutGuard

    def __init__(
        self,
        store_root: Path | None = None,
        settings: AppSettings | None = None,
        probe: bool = True,
    ):
        super().__init__()
        collect_on_gui_thread()  # Qt objects are only ever freed on this thread
        self.setWindowTitle("Compile Studio")
        self.store = RunStore(store_root if store_root is not None else runs_dir())
        self.settings = settings if settings is not None else AppSettings()
        self.current_run: RunResult | None = None
        self.last_error: str = ""
        self._summary_cache: dict[str, list[SummaryRow]] = {}
        self._plots_dirty = False
        self.live = LiveRun(self)
        #: what is known of the machine (the worker's hello), asked at start-up and per target
        self.machine = EnvironmentWatch(
            self.live.standby, lambda: self.is_running() or self.sweep_view.is_running(), self
        )
        #: the code the user agreed to run this session; asks about code not agreed yet
        self.code_consent = CodeConsent(self)
        #: the code fields of a configuration loaded into the form from a file, and where it
        #: came from (None: the form is the user's own; see CodeTrustDialog for the rule)
        self._loaded_code: dict[str, Any] | None = None
        self._loaded_from = ""
        #: the folders of the runs started in this session (their configurations are the user's)
        self._own_run_folders: set[str] = set()
        #: plot and table keys of the runs shown: a run is named after the folder it was read from
        self.run_keys = self.live.keys

        self._build_widgets()
        self.machine.environment_changed.connect(self._use_environment)
        self.machine.failed.connect(self.show_error)
        #: the worker's pauses between blocks of timed calls: the window draws in them
        self.turns = DrawTurns(self, self._draw_in_pause)
        self.exports = ExportActions(
            self, self.plots, self.settings, self.config_panel.config, self._run_to_export, self.show_error
        )
        self.exports.name_of = self.history.names.of
        self.exports.runs_shown = self._runs_shown
        self._build_actions()
        self._connect_live()
        self._restore_settings()
        self._update_run_state()

        self._refresh_timer = QTimer(self)
        self._refresh_timer.setInterval(REFRESH_INTERVAL_MS)
        self._refresh_timer.timeout.connect(self._on_tick)
        self._refresh_timer.start()

        problem = self.settings.take_problem()
        if problem:
            self.statusBar().showMessage(problem, 20000)
            self.log.note(problem)
        self.history.refresh()
        if probe:
            QTimer.singleShot(0, self.machine.start)

    # -- construction ---------------------------------------------------------------
    def _build_widgets(self) -> None:
        build_panes(self)

    def _form_width(self) -> int:
        """The left pane's width that shows the form whole beside its vertical scroll bar."""
        return form_width(self)

    def _splitter_dragged(self, *_: object) -> None:
        self._auto_widths = False

    def _fit_form_width(self) -> None:
        fit_form_width(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        """After the panes were resized with the window: keep the form and the history whole."""
        if watched is self.main_splitter and event.type() == QEvent.Type.Resize:
            QTimer.singleShot(0, self._fit_form_width)
        return super().eventFilter(watched, event)

    def _bottom_tab_changed(self, index: int) -> None:
        bottom_tab_changed(self, index)

    def _build_actions(self) -> None:
        build_menus(self)


    def _connect_live(self) -> None:
        live = self.live
        live.started.connect(self._on_run_started)
        live.samples.connect(self._on_live_samples)
        live.gpu_state.connect(self._on_live_gpu_state)
        live.variant_failed.connect(self._on_variant_failed)
        live.summary_changed.connect(self._on_live_summary)
        live.status_changed.connect(self._on_status_changed)
        live.problem.connect(self.show_error)
        live.warning.connect(self._on_warning)
        live.log_line.connect(self.log.append_line)
        live.note.connect(self.log.note)
        live.hello.connect(self.machine.offer)
        live.finished.connect(self._on_finished_run)
        # after the run's own handler: the answer is the saved run's, its "why" included
        self.run_finished.connect(self._answer_of_finished_run)

    # -- settings --------------------------------------------------------------------
    def _restore_settings(self) -> None:
        config = self.settings.last_config()
        if config is not None:
            self.config_panel.set_config(config)
            loaded = self.settings.loaded_code()
            if loaded is not None:
                self._loaded_code, self._loaded_from = loaded
        geometry = self.settings.geometry()
        if geometry is not None:
            self.restoreGeometry(geometry)
        for name, splitter in (("main", self.main_splitter), ("centre", self.centre_splitter)):
            state = self.settings.splitter_state(name)
            if state is not None:
                splitter.restoreState(state)
                if splitter is self.main_splitter:
                    self._auto_widths = False  # the widths the user left

    def save_settings(self) -> None:
        """Keep the shown configuration, the geometry and the splitter sizes."""
        config = self.config_panel.config()
        self.settings.set_last_config(config)
        unagreed = self.code_consent.pending(code_from_loaded(config, self._loaded_code))
        self.settings.set_loaded_code(self._loaded_code if unagreed else None, self._loaded_from)
        self.settings.set_geometry(self.saveGeometry())
        self.settings.set_splitter_state("main", self.main_splitter.saveState())
        self.settings.set_splitter_state("centre", centre_state(self))
        self.settings.sync()

    # -- environment -------------------------------------------------------------------
    @property
    def environment(self) -> EnvironmentInfo | None:
        """The machine the worker reported (None until one did)."""
        return self.machine.environment

    def _use_environment(self, environment: EnvironmentInfo) -> None:
        self.config_panel.set_environment(environment)
        self._fit_form_width()
        self.environment_changed.emit(environment)

    def _sweep_running_changed(self, running: bool) -> None:
        if running:
            self.hide_error()  # an earlier failure's message is not this sweep's
            self.live.standby.end_if_starting()
        else:
            self.live.standby.schedule(AFTER_RUN_DELAY_MS)

    def set_hello(self, hello: HelloEvent) -> None:
        """Use the environment a worker reported (device list, compile variants, versions)."""
        self.machine.use(hello)


    # -- run state -------------------------------------------------------------------------
    def _running_folder(self) -> Path | None:
        thread = self.live.benchmark_thread
        return thread.folder if self.is_running() and thread is not None else None

    def is_running(self) -> bool:
        return self.live.running

    def _update_run_state(self) -> None:
        running = self.is_running()
        problems = self.config_panel.problems()
        if running:
            reason = "A run is in progress."
        elif problems:
            reason = "Cannot run: " + "; ".join(str(p) for p in problems)
        else:
            reason = ""
        self.run_button.setEnabled(not running and not problems)
        self.run_action.setEnabled(not running and not problems)
        self.run_button.setToolTip(reason or "Run the benchmark (Ctrl+R)")
        self.run_blocker_label.setText(reason if problems and not running else "")
        self.run_blocker_label.setVisible(bool(problems) and not running)
        stoppable = running and not self.live.stop_requested
        self.stop_button.setEnabled(stoppable)
        self.stop_action.setEnabled(stoppable)
        self.config_panel.setEnabled(not running)
        self.plots.set_hint("" if running else run_hint(self.config_panel.config()))

    @property
    def run_blocker(self) -> str:
        """Why Run is disabled ("" when it is enabled)."""
        return self.run_blocker_label.text()

    # -- errors ------------------------------------------------------------------------------
    def show_error(self, message: str) -> None:
        """Show a message in the banner above the plots (and the log); keeps it in last_error."""
        self.last_error = message
        self.error_label.setText(message)
        self.error_banner.show()
        self.log.note(f"error: {message}")

    def hide_error(self) -> None:
        self.error_banner.hide()

    @property
    def error_text(self) -> str:
        """The text of the banner while it is shown, else ""."""
        return self.error_label.text() if self.error_banner.isVisible() else ""

    # -- running ---------------------------------------------------------------------------------
    def start_run(self, config: BenchmarkConfig | None = None) -> None:
        """Start a benchmark of ``config`` (None: the form's configuration)."""
        if self.is_running():
            return
        if self.sweep_view.is_running():
            self.show_error("A sweep is running: stop it (Sweep → Stop sweep) before a single run")
            return
        if config is not None:
            self.config_panel.set_config(config)
            self._loaded_code = None  # the caller's own configuration
        else:
            config = self.config_panel.config()
        problems = config.problems(self.environment)
        if problems:
            self.show_error("Cannot run: " + "; ".join(str(p) for p in problems))
            return
        agreement = self.form_code_agreed(config)
        if agreement is None:
            said = self.code_consent.problem or NOT_AGREED
            self.statusBar().showMessage(said, 15000)
            self.log.note(said)
            return
        self.settings.set_last_config(config)
        self.settings.sync()
        try:
            launcher = self.target_chooser.launcher()
        except (KeyError, ValueError) as exc:
            self.show_error(f"Cannot run on {self.target_chooser.current_name()}: {exc.args[0]}")
            return
        try:
            self.live.start(agreement.apply(config), self.store, launcher=launcher)
        except OSError as exc:
            self.show_error(f"Cannot create the run folder in {self.store.root}: {exc}")

    def stop_run(self) -> None:
        """Ask the running benchmark to stop; returns at once (the stop completes in the background)."""
        if not self.live.running or self.live.stop_requested:
            return
        self.live.stop()
        self.statusBar().showMessage("Stopping… variants not started yet are kept as not run", 5000)

    def _on_run_started(self) -> None:
        thread = self.live.benchmark_thread
        if thread is not None and thread.folder is not None:
            self._own_run_folders.add(os.path.abspath(thread.folder))
        self.hide_error()
        self.last_error = ""
        self.current_run = None
        self.progress_bar.setValue(0)
        self.progress_bar.show()
        self._rebuild_views()
        self._update_run_state()
        self._update_status()
        self._refresh_timer.setInterval(max(REFRESH_INTERVAL_MS, LIVE_REFRESH_INTERVAL_MS))
        self.plots.latency.set_steady_range(True)
        if thread is not None and self.live.runs_here:
            self.turns.follow(thread)

    def _on_live_samples(
        self, variant: str, iterations: np.ndarray, wall_ms: np.ndarray, phase: str, round_index: int = -1
    ) -> None:
        key = self.live.key(variant)
        if key not in self.plots.series_keys():
            self.plots.add_series(key, variant)
        self.plots.append(key, iterations, wall_ms, phase, round_index)
        self._plots_dirty = True

    def _on_live_gpu_state(self, rows: list[dict]) -> None:
        self.plots.append_gpu_state(self.live.run_key, live_name(self), rows)
        self._plots_dirty = True

    def _on_variant_failed(self, variant: str) -> None:
        key = self.live.key(variant)
        if key not in self.plots.series_keys():
            self.plots.add_series(key, variant)
        self.plots.set_series_failed(key, True)

    def _on_live_summary(self) -> None:
        self._update_table()
        self._update_live_bars()

    def _on_status_changed(self) -> None:
        self._update_status()
        self._update_run_state()

    def _on_warning(self, message: str) -> None:
        self.log.note(f"warning: {message}")
        self.statusBar().showMessage(message, 10000)

    def _on_finished_run(self, run: RunResult) -> None:
        self.turns.release()
        self._refresh_timer.setInterval(REFRESH_INTERVAL_MS)
        self.plots.latency.set_steady_range(False)
        self.current_run = run
        self.why_view.set_run(run)
        self.plots.summary.set_note(turns_line(run) or "")
        self.live.rename(run_display_name(run))
        if self.live.rows:
            self._summary_cache[self.run_keys.of(run)] = list(self.live.rows)
        self._plots_dirty = True
        self._on_tick()
        if run.status == RunStatus.FAILED and run.message and (
            not self.error_banner.isVisible() or run.message not in self.last_error
        ):
            self.show_error(f"The run failed: {run.message}")
        self.progress_bar.hide()
        self._update_status()
        ended = f"{run.status}" + (f": {run.message}" if run.message else "")
        self.statusBar().showMessage(f"Run {ended}", 10000)
        self.log.note(f"run {ended}")
        self._update_run_state()
        self.history.refresh()
        self.run_finished.emit(run)

    def _answer_of_finished_run(self, run: RunResult) -> None:
        """The table and the answer of the run that ended, as of the saved run (the "why" of its
        diagnostics too), as they read when it is reopened from the history; beside ticked runs,
        the plots too (the run is named as the history names it now)."""
        if run is self.current_run and not self.is_running():
            if self._overlay_runs():
                self._rebuild_views()
            else:
                self._update_table()

    # -- status bar and repaints -----------------------------------------------------------------
    def _update_status(self) -> None:
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
        self._update_status()
        if self._plots_dirty:
            self._plots_dirty = False
            self.plots.refresh()

    def _on_tick(self) -> None:
        """The refresh timer: the status of a running benchmark, then the plots if they changed;
        nothing while the worker times a block of calls."""
        if self.plots_held():
            return
        if self.live.running:
            self._update_status()
        if self._plots_dirty:
            self._plots_dirty = False
            self.plots.refresh()

    # -- plots and table ---------------------------------------------------------------------------
    def _overlay_runs(self) -> list[RunResult]:
        shown = {self.live.run_key}
        if self.current_run is not None and not self.is_running():
            shown.add(self.run_keys.of(self.current_run))
        return [r for r in self.history.checked_runs() if self.run_keys.of(r) not in shown]

    def _runs_shown(self) -> list[RunResult]:
        """The saved runs the plots show, in their order: the ticked ones, then the one shown."""
        shown = self._overlay_runs()
        if self.current_run is not None and not self.is_running():
            shown.append(self.current_run)
        return shown

    def show_run(self, run: RunResult, alone: bool = False) -> bool:
        """Show a saved ``run`` in the plots and the table (``alone``: without overlays).

        Not while a benchmark runs (the live run stays shown); returns whether it is shown.
        """
        if self.is_running():
            self.statusBar().showMessage(
                "A run is in progress: tick the run in the history to overlay it", 8000
            )
            return False
        if alone:
            self.history.uncheck_all()
        self.current_run = run
        self._rebuild_views()
        self.plots.summary.set_note(turns_line(run) or "")
        shown = f"Showing {self.history.names.of(run)} ({run.run_id})"
        if run.load_problems:
            read = "; ".join(run.load_problems)
            self.log.append_line(f"{run.run_id} was read with problems: {read}")
            self.statusBar().showMessage(f"{shown}, read with problems: {read}", 15000)
        else:
            self.statusBar().showMessage(shown, 5000)
        return True

    def load_config(self, config: BenchmarkConfig, source: Path | str | None = None) -> bool:
        """Put ``config`` into the form (not while a benchmark runs); returns whether it was.

        ``source``: the run folder or file it came from; the code it names is then asked
        about before it runs (see :meth:`form_code_agreed`), unless the run was started in
        this session. None: the caller's own.
        """
        if self.is_running():
            self.statusBar().showMessage("A run is in progress: the form is locked until it ends", 8000)
            return False
        self.config_panel.set_config(config)
        if source is None or os.path.abspath(source) in self._own_run_folders:
            self._loaded_code = None
        else:
            self._loaded_code = code_fields(config)
            self._loaded_from = f"The configuration loaded from {source}"
        self._update_run_state()
        self.statusBar().showMessage("Configuration loaded into the form", 5000)
        return True

    def form_code_agreed(
        self, config: BenchmarkConfig, more: list[BenchmarkConfig] | None = None
    ) -> Agreement | None:
        """The agreement to run the code ``config`` (the form's) and ``more`` (the other
        configurations of its job: a sweep's points) name, None when not agreed: code still as
        a loaded configuration had it is asked about (:class:`CodeTrustDialog`) unless agreed
        already; the job runs the agreed copies."""
        refs = code_from_loaded(config, self._loaded_code, more)
        return self.code_consent.agreed(refs, self._loaded_from)

    def _export_run_of_history(self, run: RunResult) -> None:
        self.exports.export_run_dialog(run)

    def _overlays_changed(self) -> None:
        self._rebuild_views()

    def _rebuild_views(self) -> None:
        """Plots and table from scratch: ticked runs, then the running or last run."""
        rebuild_views(self)

    def _update_live_bars(self) -> None:
        update_live_bars(self)

    def _rows_of(self, run: RunResult) -> list[SummaryRow]:
        key = self.run_keys.of(run)
        rows = self._summary_cache.get(key)
        if rows is None:
            rows = summarize(run)
            self._summary_cache[key] = rows
        return rows

    def _update_table(self) -> None:
        update_table(self)

    # -- export ---------------------------------------------------------------------------------------
    def _run_to_export(self) -> RunResult | None:
        """The run shown, else the only ticked one (None: nothing to export)."""
        if self.current_run is not None:
            return self.current_run
        ticked = self.history.checked_runs()
        return ticked[0] if len(ticked) == 1 else None

    def save_screenshot(self, path: Path) -> bool:
        """Save the whole window as PNG; a failure is shown in the banner."""
        return self.exports.save_screenshot(path)

    def save_plot(self, path: Path, scale: float = 2.0, transparent: bool = False) -> bool:
        """Save the plot of the current tab (PNG or SVG by the file suffix)."""
        return self.exports.save_plot(path, scale, transparent)

    def export_run_to(self, folder: Path, run: RunResult | None = None) -> list[Path]:
        """Write samples.csv, summary.csv and run.json of the run shown into ``folder``."""
        return self.exports.export_run_to(folder, run)

    #: the name :meth:`export_run_to` had first; kept for callers that use it
    export_run = export_run_to

    def export_report_to(self, folder: Path, run: RunResult | None = None) -> list[Path]:
        """Write the Markdown report of the run shown and its latency plot into ``folder``."""
        return self.exports.export_report_to(folder, run)

    # -- closing ------------------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        """Stop a running worker (no orphan process), save the settings, then close."""
        # not the user's Stop: the run folder is left "incomplete", with its samples
        self.live.close(CLOSED_DURING_RUN, CLOSE_WAIT_MS)
        self.sweep_view.close_sweep(CLOSE_WAIT_MS)
        self.coldstart_view.close_job(CLOSE_WAIT_MS)
        self.why_view.stop_trial(CLOSE_WAIT_MS, "the window was closed during the comparison")
        self.machine.cancel(CLOSE_WAIT_MS)
        self._refresh_timer.stop()
        self.save_settings()
        super().closeEvent(event)
