"""The main window: the form, the plots, the table, the log and the history, laid out and wired.

The window shows; it does not run. A :class:`~compile_studio.gui.live_run.LiveRun`
holds the running benchmark's state and says what changed; the File menu's
exports are :class:`~compile_studio.gui.export_actions.ExportActions`.

Over 500 lines because it is the one place the five panels (form, plots,
table, log, history) and the status bar are laid out and wired to each other
and to the live run; each piece of that wiring is a few lines.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..core.config import BenchmarkConfig, EnvironmentInfo
from ..core.env_vars import int_from_env
from ..core.protocol import HelloEvent, RunStatus
from ..results import RunResult, RunStore, SummaryRow, summarize
from ..results.formatting import why_sentence
from .benchmark_thread import EnvironmentProbe
from .config_panel import ConfigPanel
from .export_actions import ExportActions, window_action
from .gc_guard import collect_on_gui_thread
from .help_menu import HelpMenu, WindowShortcutGuard
from .history_panel import HistoryPanel, run_display_name
from .live_run import LiveRun
from .log_panel import LogPanel
from .paths import runs_dir
from .plots import PlotPanel, SummaryBar
from .plots.panel import run_hint
from .settings import AppSettings
from .standby import AFTER_RUN_DELAY_MS, standby_enabled
from .summary_table import SummaryTableModel, SummaryTableView
from .sweep_dock import install_sweep_view
from .targets_dialog import install_target_chooser
from .trust_dialog import NOT_AGREED, CodeConsent, code_fields, code_from_loaded
from .verdict_lines import VerdictLines
from .why_view import WhyView

#: Plot repaint interval: at most ~30 repaints a second, however fast samples come.
REFRESH_INTERVAL_MS = 33
#: While a benchmark runs, repaint less often: every repaint costs CPU time the
#: worker's timed loop may be sharing (see bench/ui_responsiveness.py).
LIVE_REFRESH_INTERVAL_MS = int_from_env("COMPILE_STUDIO_LIVE_REFRESH_MS", 200, 10, 10_000)
#: How long closing the window waits for a running worker to stop (it is killed by then).
CLOSE_WAIT_MS = 8000
#: Starting height (px) of the pane under the plots (summary table, log, why): the
#: header and a few rows; the plots take the rest of the window's height.
BOTTOM_PANE_HEIGHT = 210
#: Starting width (px) of the history: its model (elided to what fits), best speedup and
#: status columns side by side, at 1280 px as at 1500.
HISTORY_WIDTH = 300
#: The message a run folder keeps when the window went away during the run.
CLOSED_DURING_RUN = "the window was closed during the run; the samples measured until then are kept"

_BANNER_STYLE = (
    "QFrame#errorBanner { background: #FDECEA; border: 1px solid #F5C2C0; border-radius: 3px; }"
    " QLabel { color: #7A1010; }"
)


class MainWindow(QMainWindow):
    """Compile Studio's window.

    Left: the configuration form with Run/Stop. Centre: plots (latency,
    distribution, summary, GPU) above the summary table and the worker log.
    Right: the run history. The benchmark runs in a worker process; the
    window only shows what its :class:`LiveRun` reports.
    """

    run_finished = Signal(object)
    environment_changed = Signal(object)

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
        self.environment: EnvironmentInfo | None = None
        self.hello: HelloEvent | None = None
        self.current_run: RunResult | None = None
        self.last_error: str = ""
        self.probe_problem = ""
        self._probe: EnvironmentProbe | None = None
        #: the worker started ahead ended before its hello: the probe asks instead
        self._standby_hello_failed = False
        self._summary_cache: dict[str, list[SummaryRow]] = {}
        self._plots_dirty = False
        self.live = LiveRun(self)
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
        self.exports = ExportActions(
            self, self.plots, self.settings, self.config_panel.config, self._run_to_export, self.show_error
        )
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
            QTimer.singleShot(0, self._start_probe)

    # -- construction ---------------------------------------------------------------
    def _build_widgets(self) -> None:
        self.config_panel = ConfigPanel()
        self.config_panel.changed.connect(self._update_run_state)
        scroll = QScrollArea()
        scroll.setWidget(self.config_panel)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        # narrower than the form: scroll rather than cut its fields off
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        scroll.setMinimumWidth(240)  # the window fits a small screen; the splitter's first size fits the form
        self.run_button = QPushButton("Run")
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(lambda: self.start_run())
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(self.stop_run)
        self.run_blocker_label = QLabel()
        self.run_blocker_label.setObjectName("runBlocker")
        self.run_blocker_label.setWordWrap(True)
        self.run_blocker_label.setStyleSheet("color: #B00020;")
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.stop_button)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(6, 4, 2, 4)
        left_layout.addWidget(scroll, 1)
        left_layout.addWidget(self.run_blocker_label)
        left_layout.addLayout(buttons)

        self.error_banner = QFrame()
        self.error_banner.setObjectName("errorBanner")
        self.error_banner.setStyleSheet(_BANNER_STYLE)
        self.error_label = QLabel()
        # messages quote run labels and files from elsewhere: never rendered as markup
        self.error_label.setTextFormat(Qt.TextFormat.PlainText)
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close_banner = QToolButton()
        close_banner.setText("×")
        close_banner.setToolTip("Hide this message")
        close_banner.clicked.connect(self.hide_error)
        banner_layout = QHBoxLayout(self.error_banner)
        banner_layout.setContentsMargins(8, 4, 4, 4)
        banner_layout.addWidget(self.error_label, 1)
        banner_layout.addWidget(close_banner, 0, Qt.AlignmentFlag.AlignTop)
        self.error_banner.hide()

        self.plots = PlotPanel()
        self.plots.setMinimumWidth(320)  # the window fits a small screen
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.error_banner)
        top_layout.addWidget(self.plots, 1)

        self.table_model = SummaryTableModel(self)
        self.table_view = SummaryTableView(self.table_model)
        self.table_view.set_hidden_columns(self.settings.hidden_table_columns())
        self.table_view.hidden_columns_changed.connect(self.settings.set_hidden_table_columns)
        self.log = LogPanel()
        self.bottom_tabs = QTabWidget()
        self.bottom_tabs.addTab(self.table_view, "Summary")
        self.bottom_tabs.addTab(self.log, "Log")
        self.why_view = WhyView()
        # the Why tab's evidence needs more height than the table: it is given room when
        # chosen (see _bottom_tab_changed) rather than taking it from the plots for good;
        # nor does its widest row (a long sentence, a variant's name) set the plots' least width
        self.why_view.setMinimumSize(360, BOTTOM_PANE_HEIGHT - 60)
        self.bottom_tabs.addTab(self.why_view, "Why")
        self.bottom_tabs.currentChanged.connect(self._bottom_tab_changed)

        self.centre_splitter = QSplitter(Qt.Orientation.Vertical)
        self.centre_splitter.setObjectName("centreSplitter")
        self.centre_splitter.addWidget(top)
        self.centre_splitter.addWidget(self.bottom_tabs)
        self.centre_splitter.setCollapsible(0, False)
        # the plots take what the window gains or loses; the table keeps its height
        self.centre_splitter.setStretchFactor(0, 1)
        self.centre_splitter.setStretchFactor(1, 0)
        self.centre_splitter.setSizes([900 - BOTTOM_PANE_HEIGHT, BOTTOM_PANE_HEIGHT])

        self.history = HistoryPanel(self.store)
        self.history.running_folder = self._running_folder
        self.history.overlay_changed.connect(self._overlays_changed)
        self.history.message.connect(self.show_error)
        self.history.show_requested.connect(self.show_run)
        self.history.load_config_requested.connect(self.load_config)
        self.history.export_requested.connect(self._export_run_of_history)
        self.history.setMinimumWidth(160)  # the window fits a small screen

        self.main_splitter = QSplitter(Qt.Orientation.Horizontal)
        self.main_splitter.setObjectName("mainSplitter")
        self.main_splitter.addWidget(left)
        self.main_splitter.addWidget(self.centre_splitter)
        self.main_splitter.addWidget(self.history)
        # the form and the history keep their widths; the plots take what the window gains or loses
        self.main_splitter.setStretchFactor(0, 0)
        self.main_splitter.setStretchFactor(1, 1)
        self.main_splitter.setStretchFactor(2, 0)
        self.main_splitter.setCollapsible(1, False)
        self._form_scroll = scroll
        form_width = self._form_width()
        self.main_splitter.setSizes([form_width, 1500 - form_width - HISTORY_WIDTH, HISTORY_WIDTH])
        #: whether the panes keep the widths the window chose (until the user drags a handle)
        self._auto_widths = True
        self.main_splitter.splitterMoved.connect(self._splitter_dragged)
        self.main_splitter.installEventFilter(self)
        # the answer, one sentence per compiled variant, across the window above the plots and
        # the table (which keeps the details): read at any window size without scrolling sideways
        self.verdict_lines = VerdictLines(self.table_model)
        central = QWidget()
        central_layout = QVBoxLayout(central)
        central_layout.setContentsMargins(0, 0, 0, 0)
        central_layout.setSpacing(0)
        central_layout.addWidget(self.verdict_lines)
        central_layout.addWidget(self.main_splitter, 1)
        self.setCentralWidget(central)

        self.env_label = QLabel("asking the worker about this machine…")
        self.phase_label = QLabel()
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setMaximumWidth(220)
        self.progress_bar.setTextVisible(False)
        self.progress_bar.hide()
        bar = self.statusBar()
        bar.addPermanentWidget(self.phase_label)
        bar.addPermanentWidget(self.progress_bar)
        bar.addPermanentWidget(self.env_label)
        self.resize(1500, 900)

    def _form_width(self) -> int:
        """The left pane's width that shows the form whole beside its vertical scroll bar."""
        scroll = self._form_scroll
        left = scroll.parentWidget()
        layout = left.layout() if left is not None else None
        margins = layout.contentsMargins() if layout is not None else None
        return (
            max(self.config_panel.sizeHint().width(), self.config_panel.minimumSizeHint().width())
            + scroll.verticalScrollBar().sizeHint().width() + 2 * scroll.frameWidth()
            + (margins.left() + margins.right() if margins is not None else 0) + 2
        )

    def _splitter_dragged(self, *_: object) -> None:
        self._auto_widths = False

    def _fit_form_width(self) -> None:
        """Keep the form whole and the history at its width, the plots taking the difference:
        when the form grows (the worker names its compile variants) or the window shrinks
        (the splitter takes a little from every pane). Not after the user set the widths."""
        if not self._auto_widths:
            return
        form, centre, history = self.main_splitter.sizes()
        want_form, want_history = max(form, self._form_width()), max(history, HISTORY_WIDTH)
        need = want_form - form + want_history - history
        if need > 0 and centre - need >= self.plots.minimumWidth():
            self.main_splitter.setSizes([want_form, centre - need, want_history])

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        """After the panes were resized with the window: keep the form and the history whole."""
        if watched is self.main_splitter and event.type() == QEvent.Type.Resize:
            QTimer.singleShot(0, self._fit_form_width)
        return super().eventFilter(watched, event)

    def _bottom_tab_changed(self, index: int) -> None:
        """The Why tab chosen in a pane lower than its evidence needs: the pane grows (the
        plots keep at least a third of the height)."""
        if self.bottom_tabs.widget(index) is not self.why_view:
            return
        top, bottom = self.centre_splitter.sizes()
        tab_bar = self.bottom_tabs.tabBar().sizeHint().height()
        layout = self.why_view.layout()
        if layout is None:
            return
        want = layout.minimumSize().height() + tab_bar + 8
        if bottom < want:
            total = top + bottom
            bottom = min(want, total - total // 3)
            self.centre_splitter.setSizes([total - bottom, bottom])

    def _build_actions(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        run_menu = self.menuBar().addMenu("&Run")
        view_menu = self.menuBar().addMenu("&View")

        def action(text: str, slot, shortcut: str | None = None) -> QAction:
            return window_action(self, text, slot, shortcut)

        self.open_action = action("Open run…", self.history.open_dialog, "Ctrl+O")
        self.quit_action = action("Quit", self.close, "Ctrl+Q")
        file_menu.addAction(self.open_action)
        self.exports.add_to_menu(file_menu)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)

        self.run_action = action("Run", self.start_run, "Ctrl+R")
        self.stop_action = action("Stop", self.stop_run, "Esc")
        run_menu.addAction(self.run_action)
        run_menu.addAction(self.stop_action)

        self.log_scale_action = QAction("Logarithmic latency axis", self, checkable=True)
        self.log_scale_action.toggled.connect(self.plots.set_log_scale)
        view_menu.addAction(self.log_scale_action)
        self.refresh_history_action = action("Refresh history", self.history.refresh)
        view_menu.addAction(self.refresh_history_action)
        self.sweep_view = install_sweep_view(self)
        # a sweep's points start their own workers: none is started ahead beside them
        self.live.standby.also_busy(self.sweep_view.is_running)
        self.sweep_view.running_changed.connect(self._sweep_running_changed)
        self.target_chooser = install_target_chooser(self)
        self.help_menu = HelpMenu(self)
        # every window shortcut works with the focus in a form field too
        self.shortcut_guard = WindowShortcutGuard(self)

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
        live.hello.connect(self._on_hello)
        live.finished.connect(self._on_finished_run)

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
        self.settings.set_splitter_state("centre", self.centre_splitter.saveState())
        self.settings.sync()

    # -- environment -------------------------------------------------------------------
    def _start_probe(self) -> None:
        if self._probe is not None or self.hello is not None:
            return
        keeper = self.live.standby
        if standby_enabled() and not self._standby_hello_failed:
            # the worker started ahead answers for the probe: one torch import, not two
            keeper.start_now()
            if keeper.standby is not None and keeper.standby.usable:
                keeper.changed.connect(self._hello_from_standby)
                self._hello_from_standby()
                return
        self._standby_hello_failed = True
        probe = EnvironmentProbe(self)
        probe.probed.connect(self.set_hello)
        probe.failed.connect(self._probe_failed)
        self._probe = probe
        probe.start()

    def _sweep_running_changed(self, running: bool) -> None:
        if running:
            self.live.standby.end_if_starting()
        else:
            self.live.standby.schedule(AFTER_RUN_DELAY_MS)

    def _hello_from_standby(self) -> None:
        """The environment from the worker started ahead; the probe if it ends without a hello."""
        if self.hello is not None or self._standby_hello_failed:
            return
        standby = self.live.standby.standby
        if standby is not None and standby.hello is not None:
            self.set_hello(standby.hello)
        elif self.is_running() or self.sweep_view.is_running():
            return  # the run's own worker says hello (or the next worker started ahead does)
        elif standby is None or not standby.usable:
            self._standby_hello_failed = True
            self._start_probe()

    def _probe_failed(self, message: str) -> None:
        self.env_label.setText("worker not available")
        self.show_error(message)
        #: the banner's text saying the worker could not be asked (cleared with a new target)
        self.probe_problem = self.error_text

    def set_hello(self, hello: HelloEvent) -> None:
        """Use the environment a worker reported (device list, compile variants, versions)."""
        self.hello = hello
        env = hello.environment
        self.environment = EnvironmentInfo.from_hello(env)
        self.config_panel.set_environment(self.environment)
        self._fit_form_width()
        device = self.environment.resolve_device("auto")
        name = (env.get("device_names") or {}).get(device, "")
        text = f"torch {env.get('torch', '?')} · {device}"
        if name and name != device:
            text += f" ({name})"
        if env.get("target"):
            text += f" · on {env.get('host') or '?'} ({env['target']})"
        self.env_label.setText(text)
        self.env_label.setToolTip(
            "\n".join(f"{k}: {v}" for k, v in env.items() if isinstance(v, (str, int)) and v)
        )
        self.environment_changed.emit(self.environment)

    def _on_hello(self, hello: HelloEvent) -> None:
        if self.hello is None:
            self.set_hello(hello)

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
        if not self.form_code_agreed(config):
            self.statusBar().showMessage(NOT_AGREED, 15000)
            self.log.note(NOT_AGREED)
            return
        self.settings.set_last_config(config)
        self.settings.sync()
        try:
            launcher = self.target_chooser.launcher()
        except (KeyError, ValueError) as exc:
            self.show_error(f"Cannot run on {self.target_chooser.current_name()}: {exc.args[0]}")
            return
        try:
            self.live.start(config, self.store, launcher=launcher)
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

    def _on_live_samples(
        self, variant: str, iterations: np.ndarray, wall_ms: np.ndarray, phase: str, round_index: int = -1
    ) -> None:
        key = self.live.key(variant)
        if key not in self.plots.series_keys():
            self.plots.add_series(key, variant)
        self.plots.append(key, iterations, wall_ms, phase, round_index)
        self._plots_dirty = True

    def _on_live_gpu_state(self, rows: list[dict]) -> None:
        self.plots.append_gpu_state(self.live.run_key, self.live.name, rows)
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
        self._refresh_timer.setInterval(REFRESH_INTERVAL_MS)
        self.current_run = run
        self.why_view.set_run(run)
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

    # -- status bar and repaints -----------------------------------------------------------------
    def _update_status(self) -> None:
        self.phase_label.setText(self.live.status_text())
        if self.live.running:
            self.progress_bar.setValue(int(1000 * self.live.fraction()))

    def _on_tick(self) -> None:
        """The refresh timer: the status of a running benchmark, then the plots if they changed."""
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
        shown = f"Showing {run_display_name(run)} ({run.run_id})"
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

    def form_code_agreed(self, config: BenchmarkConfig) -> bool:
        """Whether the code ``config`` (the form's) names may run: code still as a loaded
        configuration had it is asked about (:class:`CodeTrustDialog`) unless agreed already."""
        refs = code_from_loaded(config, self._loaded_code)
        return self.code_consent.agreed(refs, self._loaded_from)

    def _export_run_of_history(self, run: RunResult) -> None:
        self.exports.export_run_dialog(run)

    def _overlays_changed(self) -> None:
        self._rebuild_views()

    def _rebuild_views(self) -> None:
        """Plots and table from scratch: ticked runs, then the running or last run."""
        self.plots.clear()
        overlays = self._overlay_runs()
        for run in overlays:
            self.plots.load_run(
                run, key_prefix=f"{self.run_keys.of(run)}/", label_prefix=f"{run_display_name(run)} · "
            )
        live = self.live
        prefix = f"{live.name} · " if overlays else ""
        if self.is_running() or self.current_run is None:
            for variant in live.variants:
                key = live.key(variant)
                self.plots.add_series(key, prefix + variant)
                for iterations, wall_ms, phase in live.chunks.get(variant, []):
                    self.plots.append(key, iterations, wall_ms, phase)
                if variant in live.failed:
                    self.plots.set_series_failed(key, True)
            if live.gpu_rows:
                self.plots.append_gpu_state(live.run_key, live.name, live.gpu_rows)
            self._update_live_bars()
        else:
            self.plots.load_run(
                self.current_run,
                key_prefix=f"{self.run_keys.of(self.current_run)}/",
                # the run shown may be one picked in the history, not the last live run
                label_prefix=f"{run_display_name(self.current_run)} · " if overlays else "",
            )
        self._plots_dirty = True
        self._on_tick()
        self._update_table()
        self.why_view.set_run(None if self.is_running() else self.current_run)

    def _update_live_bars(self) -> None:
        live = self.live
        if not live.run_id and not live.running:
            return
        prefix = f"{live.run_key}/"
        bars = [b for b in self.plots.summary_bars() if not b.key.startswith(prefix)]
        label_prefix = f"{live.name} · " if self._overlay_runs() else ""
        for row in live.rows:
            bar = SummaryBar.from_row(row, prefix + row.name, label_prefix + row.name)
            if bar is not None:
                bars.append(bar)
        self.plots.set_summary(bars)

    def _rows_of(self, run: RunResult) -> list[SummaryRow]:
        key = self.run_keys.of(run)
        rows = self._summary_cache.get(key)
        if rows is None:
            rows = summarize(run)
            self._summary_cache[key] = rows
        return rows

    def _update_table(self) -> None:
        runs: list[tuple[str, list[SummaryRow]]] = []
        why: dict[tuple[str, str], str] = {}

        def add(run: RunResult) -> None:
            name, rows = run_display_name(run), self._rows_of(run)
            runs.append((name, rows))
            for r in rows:
                because = why_sentence(run, r.name) if r.name != "eager" else None
                if because:
                    why[(name, r.name)] = because

        if self.is_running() or self.current_run is None:
            if self.live.rows or self.is_running():
                runs.append((self.live.name, self.live.rows))
        else:
            add(self.current_run)
        for run in self._overlay_runs():
            if self.current_run is not None and self.run_keys.of(run) == self.run_keys.of(self.current_run):
                continue
            add(run)
        self.table_model.set_runs(runs, why)

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
        if self._probe is not None:
            self._probe.cancel()
            self._probe.wait(CLOSE_WAIT_MS)
        self._refresh_timer.stop()
        self.save_settings()
        super().closeEvent(event)
