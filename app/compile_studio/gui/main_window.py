"""The main window: a composition of parts that own their widgets and state, wired here.

The form (:mod:`form_pane`), the centre — error banner, plots, Summary/Log/Why tabs —
(:mod:`centre_pane`) and the history side by side (:mod:`window_panes`); what they show
of the running, shown and ticked runs (:mod:`run_views`); the single run's Run and Stop
(:mod:`run_controller`) over the :class:`LiveRun`; what the worker said of the machine
(:mod:`environment_watch`); the menus (:mod:`window_menus`, :mod:`export_actions`), with
the Sweep and Start-up cost views, the target chooser and Help adding theirs.
"""

from __future__ import annotations

from pathlib import Path

import numpy.ma  # noqa: F401 - the first np.median imports it (~35 ms): at start-up, not mid-run
from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QMainWindow, QVBoxLayout, QWidget

from ..core.config import BenchmarkConfig, EnvironmentInfo
from ..core.protocol import HelloEvent, RunStatus
from ..jobs.kinds import job_kinds
from ..results import RunResult, RunStore
from .centre_pane import CentrePane
from .environment_watch import EnvironmentWatch
from .export_menu import ExportActions
from .form_pane import FormPane
from .gc_guard import collect_on_gui_thread
from .help_menu import HelpMenu, WindowShortcutGuard
from .history_panel import HistoryPanel
from .live_run import LiveRun
from .paths import runs_dir
from .plots.panel import run_hint
from .run_controller import RunController
from .run_views import RunViews
from .settings import AppSettings
from .targets_dialog import install_target_chooser
from .trial_status import follow_trials
from .trust_dialog import CodeConsent
from .verdict_lines import VerdictLines
from .window_menus import WindowMenus
from .window_panes import MainSplitter

#: How long closing the window waits for a running worker to stop (it is killed by then).
CLOSE_WAIT_MS = 8000
#: The message a run folder keeps when the window went away during the run.
CLOSED_DURING_RUN = "the window was closed during the run; the samples measured until then are kept"


class MainWindow(QMainWindow):
    """Compile Studio's window: the form with Run/Stop on the left, the plots over the summary
    table, log and why in the centre, the run history on the right. The benchmark runs in a
    worker process; the window only shows what its :class:`LiveRun` reports."""

    run_finished = Signal(object)
    environment_changed = Signal(object)

    def __init__(self, store_root: Path | None = None, settings: AppSettings | None = None, probe: bool = True):
        super().__init__()
        collect_on_gui_thread()  # Qt objects are only ever freed on this thread
        self.setWindowTitle("Compile Studio")
        self.store = RunStore(store_root if store_root is not None else runs_dir())
        self.settings = settings if settings is not None else AppSettings()
        self.last_error: str = ""
        self.live = LiveRun(self)
        #: what is known of the machine (the worker's hello), asked at start-up and per target
        self.machine = EnvironmentWatch(
            self.live.standby, lambda: self.is_running() or self.sweep_view.is_running(), self
        )
        #: the code the user agreed to run this session; asks about code not agreed yet
        self.code_consent = CodeConsent(self)
        self._build()
        self._wire()
        self._restore_settings()
        self._update_run_state()
        problem = self.settings.take_problem()
        if problem:
            self.statusBar().showMessage(problem, 20000)
            self.log.note(problem)
        self.history.refresh()
        if probe:
            QTimer.singleShot(0, self.machine.start)

    def _build(self) -> None:
        """The parts, laid out: the answer across the window above the three panes, the status bar."""
        self.form = FormPane()
        self.centre = CentrePane(self.settings)
        self.history = HistoryPanel(self.store)
        self.history.setMinimumWidth(160)  # the window fits a small screen
        self.views = RunViews(self, self.live, self.centre, self.history)
        self.runs = RunController(self.live, self.form.config_panel, self.store, self.settings, self.code_consent, self)
        self.exports = ExportActions(self, self.centre.plots, self.settings, self.form.config_panel.config, self.views.run_to_export, self.show_error)
        self.menus = WindowMenus(self, self.history, self.exports, self.centre.plots, self.runs.start, self.runs.stop)
        self.main_splitter = MainSplitter(self.form, self.centre, self.history)
        # the answer, one sentence per compiled variant, across the window above the plots and
        # the table (which keeps the details): read at any window size without scrolling sideways
        self.verdict_lines = VerdictLines(self.centre.table_model)
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.verdict_lines)
        layout.addWidget(self.main_splitter, 1)
        self.setCentralWidget(central)
        bar = self.statusBar()
        for widget in (self.views.phase_label, self.views.progress_bar, self.machine.label):
            bar.addPermanentWidget(widget)
        #: what a Try it comparison is doing, in place of the phase while it runs (trial_status.py)
        self.trial_status_label = follow_trials(bar, self.views.phase_label, self.centre.why_view)
        self.resize(1500, 900)
        # the parts' widgets, by the names the window's users know them by
        self.config_panel, self.run_button, self.stop_button = self.form.config_panel, self.form.run_button, self.form.stop_button
        self.run_blocker_label, self.centre_splitter = self.form.blocker_label, self.centre
        self.error_banner, self.error_label = self.centre.banner, self.centre.banner.label
        self.plots, self.table_model, self.table_view = self.centre.plots, self.centre.table_model, self.centre.table_view
        self.log, self.bottom_tabs, self.why_view = self.centre.log, self.centre.tabs, self.centre.why_view
        self.env_label, self.phase_label, self.progress_bar = self.machine.label, self.views.phase_label, self.views.progress_bar
        self.turns = self.views.turns
        self.run_action, self.stop_action = self.menus.run_action, self.menus.stop_action
        # each registered job kind's menu entries and view (jobs/kinds.py), the target chooser and Help
        self.job_parts = {kind.name: kind.install(self) for kind in job_kinds() if kind.window is not None}
        self.sweep_view, self.coldstart_view = self.job_parts["sweep"], self.job_parts["coldstart"]
        self.target_chooser = install_target_chooser(self)
        self.help_menu = HelpMenu(self)
        # every window shortcut works with the focus in a form field too
        self.shortcut_guard = WindowShortcutGuard(self)

    def _wire(self) -> None:
        """The parts' signals to the parts and the window that answer them."""
        self.form.config_panel.changed.connect(self._update_run_state)
        self.form.run_button.clicked.connect(lambda: self.runs.start())
        self.form.stop_button.clicked.connect(self.runs.stop)
        runs = self.runs
        runs.environment, runs.sweep_running = lambda: self.machine.environment, self.sweep_view.is_running
        runs.launcher, runs.target_name = self.target_chooser.launcher, self.target_chooser.current_name
        runs.problem.connect(self.show_error)
        runs.said.connect(self.statusBar().showMessage)
        runs.note.connect(self.log.note)
        self.history.running_folder = self.live.running_folder
        self.history.message.connect(self.show_error)
        self.history.show_requested.connect(self.show_run)
        self.views.said.connect(self.statusBar().showMessage)
        self.views.log_line.connect(self.log.append_line)
        self.history.load_config_requested.connect(self.load_config)
        self.history.export_requested.connect(self.exports.export_run_dialog)
        self.exports.name_of = self.history.names.of
        self.exports.runs_shown = self.views.runs_shown
        if self.form.measure_factory_batch(lambda: [entry.listed for entry in self.history.entries()]):
            self.run_finished.connect(lambda *_: self.config_panel.refresh_factory_fields())
        self.machine.environment_changed.connect(self._use_environment)
        self.machine.failed.connect(self.show_error)
        # a sweep's points start their own workers: none is started ahead beside them
        self.live.standby.also_busy(self.sweep_view.is_running)
        for started in (self.sweep_view.jobs.sweep_started, self.sweep_view.jobs.shape_started):
            started.connect(lambda *_: self.hide_error())  # an earlier failure's message is not this sweep's
        self.sweep_view.running_changed.connect(self.live.standby.other_job)
        live = self.live
        live.started.connect(self._on_run_started)
        live.status_changed.connect(self._update_run_state)
        live.problem.connect(self.show_error)
        live.warning.connect(lambda message: self.log.note(f"warning: {message}"))
        live.warning.connect(lambda message: self.statusBar().showMessage(message, 10000))
        live.log_line.connect(self.log.append_line)
        live.note.connect(self.log.note)
        live.hello.connect(self.machine.offer)
        live.finished.connect(self._on_finished_run)
        # after the run's own handler: the answer is the saved run's, its "why" included
        self.run_finished.connect(self.views.answer_of_finished)

    # -- settings --------------------------------------------------------------------
    def _restore_settings(self) -> None:
        self.runs.restore()
        geometry = self.settings.geometry()
        if geometry is not None:
            self.restoreGeometry(geometry)
        main, centre = self.settings.splitter_state("main"), self.settings.splitter_state("centre")
        if centre is not None:
            self.centre.restoreState(centre)
        if main is not None:
            self.main_splitter.restore(main)  # the widths the user left

    def save_settings(self) -> None:
        """Keep the shown configuration, the geometry and the splitter sizes."""
        self.runs.keep()
        self.settings.set_geometry(self.saveGeometry())
        self.settings.set_splitter_state("main", self.main_splitter.saveState())
        self.settings.set_splitter_state("centre", self.centre.state_to_keep())
        self.settings.sync()

    # -- environment -------------------------------------------------------------------
    @property
    def environment(self) -> EnvironmentInfo | None:
        """The machine the worker reported (None until one did)."""
        return self.machine.environment

    def _use_environment(self, environment: EnvironmentInfo) -> None:
        self.config_panel.set_environment(environment)
        self.main_splitter.fit_widths()
        self.environment_changed.emit(environment)

    def set_hello(self, hello: HelloEvent) -> None:
        """Use the environment a worker reported (device list, compile variants, versions)."""
        self.machine.use(hello)

    # -- run state -------------------------------------------------------------------------
    def is_running(self) -> bool:
        return self.live.running

    def _update_run_state(self) -> None:
        running, problems = self.is_running(), self.config_panel.problems()
        stoppable = running and not self.live.stop_requested
        self.form.show_state(running, stoppable, problems)
        self.menus.show_run_state(not running and not problems, stoppable)
        self.plots.set_hint("" if running else run_hint(self.config_panel.config()))

    @property
    def run_blocker(self) -> str:
        """Why Run is disabled ("" when it is enabled)."""
        return self.run_blocker_label.text()

    # -- errors ------------------------------------------------------------------------------
    def show_error(self, message: str) -> None:
        """Show a message in the banner above the plots (and the log); keeps it in last_error."""
        self.last_error = message
        self.centre.banner.show_message(message)
        self.log.note(f"error: {message}")

    def hide_error(self) -> None:
        self.centre.banner.hide()

    @property
    def error_text(self) -> str:
        """The text of the banner while it is shown, else ""."""
        return self.centre.banner.shown_text()

    # -- running ---------------------------------------------------------------------------------
    def start_run(self, config: BenchmarkConfig | None = None) -> None:
        """Start a benchmark of ``config`` (None: the form's configuration)."""
        self.runs.start(config)

    def stop_run(self) -> None:
        """Ask the running benchmark to stop; returns at once (the stop completes in the background)."""
        self.runs.stop()

    def _on_run_started(self) -> None:
        self.hide_error()
        self.last_error = ""
        self.views.started()
        self._update_run_state()

    def _on_finished_run(self, run: RunResult) -> None:
        self.views.finished(run)
        if run.status == RunStatus.FAILED and run.message and (
            not self.error_banner.isVisible() or run.message not in self.last_error
        ):
            self.show_error(f"The run failed: {run.message}")
        ended = f"{run.status}" + (f": {run.message}" if run.message else "")
        self.statusBar().showMessage(f"Run {ended}", 10000)
        self.log.note(f"run {ended}")
        self._update_run_state()
        self.history.refresh()
        self.run_finished.emit(run)

    # -- showing and loading runs ------------------------------------------------------------------
    @property
    def current_run(self) -> RunResult | None:
        """The saved run shown (None: the live run, or nothing yet)."""
        return self.views.current_run

    def show_run(self, run: RunResult, alone: bool = False) -> bool:
        """Show a saved ``run`` in the plots and the table (``alone``: without overlays); not while
        a benchmark runs. Returns whether it is shown."""
        return self.views.show(run, alone)

    def load_config(self, config: BenchmarkConfig, source: Path | str | None = None) -> bool:
        """Put ``config`` into the form (not while a benchmark runs); returns whether it was.
        ``source``: the run folder or file it came from (see :meth:`RunController.load`)."""
        if self.is_running():
            self.statusBar().showMessage("A run is in progress: the form is locked until it ends", 8000)
            return False
        self.runs.load(config, source)
        self._update_run_state()
        self.statusBar().showMessage("Configuration loaded into the form", 5000)
        return True

    # -- closing ------------------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        """Stop a running worker (no orphan process), save the settings, then close."""
        # not the user's Stop: the run folder is left "incomplete", with its samples
        self.live.close(CLOSED_DURING_RUN, CLOSE_WAIT_MS)
        for part in self.job_parts.values():  # each job kind's job stops; what it measured is kept
            close_job = getattr(part, "close_job", None)
            if close_job is not None:
                close_job(CLOSE_WAIT_MS)
        self.why_view.stop_trial(CLOSE_WAIT_MS, "the window was closed during the comparison")
        self.machine.cancel(CLOSE_WAIT_MS)
        self.views.stop()
        self.save_settings()
        super().closeEvent(event)
