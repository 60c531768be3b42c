"""The main window: configure, run on a background thread, live-plot, summarise, compare."""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
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

from ..config import BenchmarkConfig, EnvironmentInfo
from ..results import RunResult, RunStore, SummaryRow, summarize
from .benchmark_thread import BenchmarkThread, EnvironmentProbe, has_finished
from .config_panel import ConfigPanel
from .history_panel import HistoryPanel, run_display_name
from .log_panel import LogPanel
from .paths import runs_dir
from .plots import PlotPanel, SummaryBar
from .settings import AppSettings
from .summary_table import SummaryTableModel, SummaryTableView

#: Plot repaint interval: at most ~30 repaints a second, however fast samples come.
REFRESH_INTERVAL_MS = 33
#: While a benchmark runs, repaint less often: every repaint costs CPU time the
#: worker's timed loop may be sharing (see bench/ui_responsiveness.py).
LIVE_REFRESH_INTERVAL_MS = int(os.environ.get("COMPILE_STUDIO_LIVE_REFRESH_MS", "200"))
#: How long closing the window waits for a running worker to stop (it is killed by then).
CLOSE_WAIT_MS = 8000
#: The message a run folder keeps when the window went away during the run.
CLOSED_DURING_RUN = "the window was closed during the run; the samples measured until then are kept"

_BANNER_STYLE = (
    "QFrame#errorBanner { background: #FDECEA; border: 1px solid #F5C2C0; border-radius: 3px; }"
    " QLabel { color: #7A1010; }"
)


class MainWindow(QMainWindow):
    """Compile Studio's window.

    Left: the configuration form with Run/Stop. Centre: plots (latency,
    distribution, summary) above the summary table and the worker log. Right:
    the run history. The benchmark runs in a worker process supervised by a
    :class:`BenchmarkThread`; this window only shows what it reports.
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
        self.setWindowTitle("Compile Studio")
        self.store = RunStore(store_root if store_root is not None else runs_dir())
        self.settings = settings if settings is not None else AppSettings()
        self.environment: EnvironmentInfo | None = None
        self.hello: dict[str, Any] | None = None
        self.current_run: RunResult | None = None
        self.last_error: str = ""
        self._thread: BenchmarkThread | None = None
        self._threads: list[BenchmarkThread] = []
        self._probe: EnvironmentProbe | None = None
        self._live_run_id = ""
        self._live_name = ""
        self._live_variants: list[str] = []
        self._live_chunks: dict[str, list[tuple[np.ndarray, np.ndarray, str]]] = {}
        self._live_failed: set[str] = set()
        self._live_rows: list[SummaryRow] = []
        self._live_gpu: list[dict[str, Any]] = []
        self._summary_cache: dict[str, list[SummaryRow]] = {}
        self._plots_dirty = False
        self._progress_dirty = False
        self._progress_total = 0
        self._progress_done = 0
        self._run_started = 0.0
        self._compile_started: float | None = None
        self._compile_spent = 0.0
        self._compile_variant = ""
        self._phase_text = ""

        self._build_widgets()
        self._build_actions()
        self._restore_settings()
        self._update_run_state()

        self._refresh_timer = QTimer(self)
        self._refresh_timer.setInterval(REFRESH_INTERVAL_MS)
        self._refresh_timer.timeout.connect(self._refresh_plots)
        self._refresh_timer.start()
        self._compile_timer = QTimer(self)
        self._compile_timer.setInterval(1000)
        self._compile_timer.timeout.connect(self._update_status)

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
        left_layout.addWidget(scroll, 1)
        left_layout.addWidget(self.run_blocker_label)
        left_layout.addLayout(buttons)

        self.error_banner = QFrame()
        self.error_banner.setObjectName("errorBanner")
        self.error_banner.setStyleSheet(_BANNER_STYLE)
        self.error_label = QLabel()
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
        self.log = LogPanel()
        self.bottom_tabs = QTabWidget()
        self.bottom_tabs.addTab(self.table_view, "Summary")
        self.bottom_tabs.addTab(self.log, "Log")

        self.centre_splitter = QSplitter(Qt.Orientation.Vertical)
        self.centre_splitter.setObjectName("centreSplitter")
        self.centre_splitter.addWidget(top)
        self.centre_splitter.addWidget(self.bottom_tabs)
        self.centre_splitter.setStretchFactor(0, 3)
        self.centre_splitter.setStretchFactor(1, 1)
        self.centre_splitter.setSizes([560, 300])

        self.history = HistoryPanel(self.store)
        self.history.overlay_changed.connect(self._overlays_changed)
        self.history.message.connect(self.show_error)
        self.history.setMinimumWidth(160)

        self.main_splitter = QSplitter(Qt.Orientation.Horizontal)
        self.main_splitter.setObjectName("mainSplitter")
        self.main_splitter.addWidget(left)
        self.main_splitter.addWidget(self.centre_splitter)
        self.main_splitter.addWidget(self.history)
        self.main_splitter.setStretchFactor(0, 0)
        self.main_splitter.setStretchFactor(1, 1)
        self.main_splitter.setStretchFactor(2, 0)
        form_width = self.config_panel.sizeHint().width() + scroll.verticalScrollBar().sizeHint().width() + 8
        self.main_splitter.setSizes([form_width, 1500 - form_width - 300, 300])
        self.setCentralWidget(self.main_splitter)

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

    def _build_actions(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        run_menu = self.menuBar().addMenu("&Run")
        view_menu = self.menuBar().addMenu("&View")

        def action(text: str, slot, shortcut: QKeySequence | str | None = None) -> QAction:
            act = QAction(text, self)
            if shortcut is not None:
                act.setShortcut(QKeySequence(shortcut))
                act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.triggered.connect(lambda *_: slot())
            self.addAction(act)
            return act

        self.open_action = action("Open run…", self.history.open_dialog, "Ctrl+O")
        self.export_action = action("Export run…", self.export_run_dialog, "Ctrl+E")
        self.export_report_action = action("Export report (Markdown)…", self.export_report_dialog)
        self.screenshot_action = action("Save screenshot…", self.save_screenshot_dialog, "Ctrl+Shift+S")
        self.save_plot_png_action = action("Save plot as PNG…", lambda: self.save_plot_dialog("png"))
        # PNG options: scale and background
        self.png_scale_actions: dict[int, QAction] = {}
        scale_group = QActionGroup(self)
        for scale in (1, 2, 4):
            act = QAction(f"PNG at {scale}× size", self, checkable=True)
            act.setChecked(scale == 2)
            scale_group.addAction(act)
            self.png_scale_actions[scale] = act
        self.png_transparent_action = QAction("PNG with transparent background", self, checkable=True)
        self.save_plot_svg_action = action("Save plot as SVG…", lambda: self.save_plot_dialog("svg"))
        self.copy_plot_action = action("Copy plot", self.copy_plot, "Ctrl+Shift+C")
        self.quit_action = action("Quit", self.close, "Ctrl+Q")
        for act in (self.open_action, self.export_action, self.export_report_action):
            file_menu.addAction(act)
        file_menu.addSeparator()
        file_menu.addAction(self.screenshot_action)
        file_menu.addAction(self.save_plot_png_action)
        png_menu = file_menu.addMenu("PNG options")
        for act in self.png_scale_actions.values():
            png_menu.addAction(act)
        png_menu.addSeparator()
        png_menu.addAction(self.png_transparent_action)
        file_menu.addAction(self.save_plot_svg_action)
        file_menu.addAction(self.copy_plot_action)
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

    # -- settings --------------------------------------------------------------------
    def _restore_settings(self) -> None:
        config = self.settings.last_config()
        if config is not None:
            self.config_panel.set_config(config)
        geometry = self.settings.geometry()
        if geometry is not None:
            self.restoreGeometry(geometry)
        for name, splitter in (("main", self.main_splitter), ("centre", self.centre_splitter)):
            state = self.settings.splitter_state(name)
            if state is not None:
                splitter.restoreState(state)

    def save_settings(self) -> None:
        """Keep the shown configuration, the geometry and the splitter sizes."""
        self.settings.set_last_config(self.config_panel.config())
        self.settings.set_geometry(self.saveGeometry())
        self.settings.set_splitter_state("main", self.main_splitter.saveState())
        self.settings.set_splitter_state("centre", self.centre_splitter.saveState())
        self.settings.sync()

    # -- environment -------------------------------------------------------------------
    def _start_probe(self) -> None:
        if self._probe is not None or self.hello is not None:
            return
        probe = EnvironmentProbe(self)
        probe.probed.connect(self.set_hello)
        probe.failed.connect(self._probe_failed)
        self._probe = probe
        probe.start()

    def _probe_failed(self, message: str) -> None:
        self.env_label.setText("worker not available")
        self.show_error(message)

    def set_hello(self, hello: dict[str, Any]) -> None:
        """Use the environment a worker reported (device list, compile variants, versions)."""
        self.hello = hello
        env = hello.get("environment", {})
        self.environment = EnvironmentInfo.from_hello(hello)
        self.config_panel.set_environment(self.environment)
        device = self.environment.resolve_device("auto")
        name = (env.get("device_names") or {}).get(device, "")
        text = f"torch {env.get('torch', '?')} · {device}"
        if name and name != device:
            text += f" ({name})"
        self.env_label.setText(text)
        self.env_label.setToolTip(
            "\n".join(f"{k}: {v}" for k, v in env.items() if isinstance(v, (str, int)) and v)
        )
        self.environment_changed.emit(self.environment)

    # -- run state -------------------------------------------------------------------------
    def is_running(self) -> bool:
        return self._thread is not None

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
        stoppable = running and not (self._thread is not None and self._thread.stop_requested)
        self.stop_button.setEnabled(stoppable)
        self.stop_action.setEnabled(stoppable)
        self.config_panel.setEnabled(not running)

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
        if config is not None:
            self.config_panel.set_config(config)
        else:
            config = self.config_panel.config()
        problems = config.problems(self.environment)
        if problems:
            self.show_error("Cannot run: " + "; ".join(str(p) for p in problems))
            return
        self.settings.set_last_config(config)
        try:
            thread = BenchmarkThread(config, self.store, parent=self)
        except OSError as exc:
            self.show_error(f"Cannot create the run folder in {self.store.root}: {exc}")
            return
        self.hide_error()
        self.last_error = ""
        self.current_run = None
        self._thread = thread
        self._threads.append(thread)
        self._live_run_id = thread.run_id
        self._live_name = config.label or datetime.now().strftime("%m-%d %H:%M:%S")
        self._live_variants = list(config.variants)
        self._live_chunks = {v: [] for v in config.variants}
        self._live_failed = set()
        self._live_rows = []
        self._live_gpu = []
        self._progress_total = len(config.variants) * (config.iterations + config.warmup)
        self._progress_done = 0
        self._run_started = time.monotonic()
        self._compile_started = None
        self._compile_spent = 0.0
        self._phase_text = "starting the worker…"
        self.progress_bar.setValue(0)
        self.progress_bar.show()

        thread.hello.connect(self._on_hello)
        thread.phase.connect(self._on_phase)
        thread.samples.connect(self._on_samples)
        thread.gpu_state.connect(self._on_gpu_state)
        thread.compiled.connect(self._on_compiled)
        thread.warning.connect(self._on_warning)
        thread.error.connect(self._on_error)
        thread.log.connect(self.log.append_line)
        thread.summary.connect(self._on_summary)
        thread.finished_run.connect(self._on_finished_run)
        thread.finished.connect(lambda t=thread: self._thread_ended(t))

        self._rebuild_views()
        self.log.note(f"run {thread.run_id or '(not saved)'}: {config.to_json()}")
        self._update_run_state()
        self._update_status()
        self._refresh_timer.setInterval(max(REFRESH_INTERVAL_MS, LIVE_REFRESH_INTERVAL_MS))
        thread.start()

    def stop_run(self) -> None:
        """Ask the running benchmark to stop; returns at once (the stop completes in the background)."""
        thread = self._thread
        if thread is None or thread.stop_requested:
            return
        thread.request_stop()
        self._phase_text = "stopping…"
        self._update_status()
        self._update_run_state()

    def _live_key(self, variant: str) -> str:
        return f"{self._live_run_id}/{variant}"

    def _on_hello(self, hello: dict[str, Any]) -> None:
        if self.hello is None:
            self.set_hello(hello)

    def _on_phase(self, variant: str, phase: str, planned: int) -> None:
        if not variant:
            return
        if phase == "compile":
            self._compile_started = time.monotonic()
            self._compile_variant = variant
            self._compile_timer.start()
        elif self._compile_started is not None:
            self._compile_spent += time.monotonic() - self._compile_started
            self._compile_started = None
            self._compile_timer.stop()
        words = {"build": "building", "compile": "compiling", "warmup": "warming up", "measure": "measuring"}
        self._phase_text = f"{variant}: {words.get(phase, phase)}"
        self._update_status()

    def _on_samples(self, variant: str, phase: str, first: int, wall_ms: np.ndarray) -> None:
        key = self._live_key(variant)
        if key not in self.plots.series_keys():
            self.plots.add_series(key, variant)
        iterations = np.arange(first, first + len(wall_ms), dtype=np.float64)
        plot_phase = phase if phase in ("warmup", "measure") else "measure"
        self.plots.append(key, iterations, wall_ms, plot_phase)
        self._live_chunks.setdefault(variant, []).append((iterations, wall_ms, plot_phase))
        self._plots_dirty = True
        self._progress_done += len(wall_ms)
        self._progress_dirty = True

    def _on_gpu_state(self, rows: list[dict[str, Any]]) -> None:
        self._live_gpu.extend(rows)
        self.plots.append_gpu_state(self._live_run_id, self._live_name, rows)
        self._plots_dirty = True

    def _on_compiled(self, event: dict[str, Any]) -> None:
        breaks = event.get("graph_breaks")
        text = (
            f"{event.get('variant')}: compiled in {float(event.get('compile_s') or 0):.2f} s "
            f"({event.get('graphs')} graph(s), {breaks} graph break(s))"
        )
        self.log.note(text)
        for reason in event.get("break_reasons") or []:
            self.log.note(f"  graph break: {reason}")

    def _on_warning(self, message: str) -> None:
        self.log.note(f"warning: {message}")
        self.statusBar().showMessage(message, 10000)

    def _on_error(self, variant: str, kind: str, message: str) -> None:
        words = {
            "oom": "ran out of memory",
            "compile_failed": "failed to compile",
            "bad_config": "cannot run this configuration",
            "device_unavailable": "device not available",
            "crashed": "crashed",
        }.get(kind, "failed")
        if variant:
            self._live_failed.add(variant)
            key = self._live_key(variant)
            if key not in self.plots.series_keys():
                self.plots.add_series(key, variant)
            self.plots.set_series_failed(key, True)
            self.show_error(f"{variant} {words}: {message}")
        else:
            self.show_error(f"The run {words}: {message}" if kind != "crashed" else message)

    def _on_summary(self, rows: list[SummaryRow]) -> None:
        self._live_rows = list(rows)
        for row in rows:
            if row.status == "failed":
                self._live_failed.add(row.name)
        self._update_table()
        self._update_live_bars()

    def _on_finished_run(self, run: RunResult) -> None:
        thread = self.sender()
        if thread is not None and thread is not self._thread:
            return
        self._thread = None
        self._refresh_timer.setInterval(REFRESH_INTERVAL_MS)
        self._compile_timer.stop()
        self._compile_started = None
        self.current_run = run
        self._live_name = run_display_name(run)
        if self._live_rows:
            self._summary_cache[run.run_id] = list(self._live_rows)
        self._plots_dirty = True
        self._refresh_plots()
        if run.status == "failed" and run.message and not self.error_banner.isVisible():
            self.show_error(f"The run failed: {run.message}")
        elif run.status == "failed" and run.message and run.message not in self.last_error:
            self.show_error(f"The run failed: {run.message}")
        self._phase_text = {
            "complete": "done",
            "stopped": "stopped",
            "failed": "failed",
            "incomplete": "cut short",
        }.get(run.status, run.status)
        self.progress_bar.setValue(1000 if run.status == "complete" else self.progress_bar.value())
        self.progress_bar.hide()
        self._update_status()
        self.statusBar().showMessage(
            f"Run {run.status}" + (f": {run.message}" if run.message else ""), 10000
        )
        self.log.note(f"run {run.status}" + (f": {run.message}" if run.message else ""))
        self._update_run_state()
        self.history.refresh()
        self.run_finished.emit(run)

    def _thread_ended(self, thread: BenchmarkThread) -> None:
        if thread in self._threads:
            self._threads.remove(thread)
        thread.deleteLater()

    # -- progress ---------------------------------------------------------------------------------
    def _update_progress(self) -> None:
        if self._progress_total > 0:
            self.progress_bar.setValue(
                int(1000 * min(1.0, self._progress_done / self._progress_total))
            )
        self._update_status()

    def eta_seconds(self) -> float | None:
        """Estimated seconds left in the running benchmark (None when unknown)."""
        if not self.is_running() or self._progress_done <= 0:
            return None
        elapsed = time.monotonic() - self._run_started - self._compile_spent
        if self._compile_started is not None:
            elapsed -= time.monotonic() - self._compile_started
        rate = self._progress_done / max(elapsed, 1e-6)
        left = max(0, self._progress_total - self._progress_done)
        return left / rate if rate > 0 else None

    def _update_status(self) -> None:
        text = self._phase_text
        if self._compile_started is not None:
            text = f"{self._compile_variant}: compiling… {time.monotonic() - self._compile_started:.0f} s"
        elif self.is_running():
            eta = self.eta_seconds()
            if eta is not None:
                text += f" · ETA {_duration(eta)}"
        self.phase_label.setText(text)

    # -- plots and table ---------------------------------------------------------------------------
    def _refresh_plots(self) -> None:
        if self._progress_dirty:
            self._progress_dirty = False
            self._update_progress()
        if self._plots_dirty:
            self._plots_dirty = False
            self.plots.refresh()

    def _overlay_runs(self) -> list[RunResult]:
        return [r for r in self.history.checked_runs() if r.run_id != self._live_run_id]

    def _overlays_changed(self) -> None:
        self._rebuild_views()

    def _rebuild_views(self) -> None:
        """Plots and table from scratch: ticked runs, then the running or last run."""
        self.plots.clear()
        overlays = self._overlay_runs()
        for run in overlays:
            self.plots.load_run(
                run, key_prefix=f"{run.run_id}/", label_prefix=f"{run_display_name(run)} · "
            )
        prefix = f"{self._live_name} · " if overlays else ""
        if self.is_running() or self.current_run is None:
            for variant in self._live_variants:
                key = self._live_key(variant)
                self.plots.add_series(key, prefix + variant)
                for iterations, wall_ms, phase in self._live_chunks.get(variant, []):
                    self.plots.append(key, iterations, wall_ms, phase)
                if variant in self._live_failed:
                    self.plots.set_series_failed(key, True)
            if self._live_gpu:
                self.plots.append_gpu_state(self._live_run_id, self._live_name, self._live_gpu)
            self._update_live_bars()
        else:
            self.plots.load_run(
                self.current_run, key_prefix=f"{self.current_run.run_id}/", label_prefix=prefix
            )
        self._plots_dirty = True
        self._refresh_plots()
        self._update_table()

    def _update_live_bars(self) -> None:
        if not self._live_run_id and not self.is_running():
            return
        prefix = f"{self._live_run_id}/"
        bars = [b for b in self.plots.summary_bars() if not b.key.startswith(prefix)]
        label_prefix = f"{self._live_name} · " if self._overlay_runs() else ""
        for row in self._live_rows:
            bar = SummaryBar.from_row(row, prefix + row.name, label_prefix + row.name)
            if bar is not None:
                bars.append(bar)
        self.plots.set_summary(bars)

    def _rows_of(self, run: RunResult) -> list[SummaryRow]:
        rows = self._summary_cache.get(run.run_id)
        if rows is None:
            rows = summarize(run)
            self._summary_cache[run.run_id] = rows
        return rows

    def _update_table(self) -> None:
        runs: list[tuple[str, list[SummaryRow]]] = []
        if self.is_running() or self.current_run is None:
            if self._live_rows or self.is_running():
                runs.append((self._live_name, self._live_rows))
        else:
            runs.append((run_display_name(self.current_run), self._rows_of(self.current_run)))
        for run in self._overlay_runs():
            if self.current_run is not None and run.run_id == self.current_run.run_id:
                continue
            runs.append((run_display_name(run), self._rows_of(run)))
        self.table_model.set_runs(runs)

    # -- export -------------------------------------------------------------------------------------
    def _export_folder(self) -> str:
        folder = self.settings.export_folder()
        return str(folder) if folder is not None else str(Path.home())

    def _default_name(self, suffix: str) -> str:
        try:
            from .export import default_file_name

            return default_file_name(self.config_panel.config(), suffix)
        except Exception:  # noqa: BLE001 - a name is only a suggestion
            return f"compile-studio{suffix}"

    def save_screenshot_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self,
            "Save screenshot",
            str(Path(self._export_folder()) / self._default_name("-window.png")),
            "PNG image (*.png)",
        )
        if path:
            self.save_screenshot(Path(path))

    def save_screenshot(self, path: Path) -> bool:
        """Save the whole window as PNG; a failure is shown in the banner."""
        try:
            from .export import save_widget_png

            save_widget_png(self, path)
        except Exception as exc:  # noqa: BLE001 - shown to the user, never a crash
            self.show_error(f"Cannot save the screenshot: {exc}")
            return False
        self._exported(path)
        return True

    def save_plot_dialog(self, kind: str) -> None:
        suffix = ".svg" if kind == "svg" else ".png"
        path, _ = QFileDialog.getSaveFileName(
            self,
            "Save plot",
            str(Path(self._export_folder()) / self._default_name(f"-plot{suffix}")),
            "SVG drawing (*.svg)" if kind == "svg" else "PNG image (*.png)",
        )
        if path:
            self.save_plot(Path(path), self.png_scale(), self.png_transparent_action.isChecked())

    def png_scale(self) -> int:
        """The PNG scale chosen in File → PNG options (1×, 2× or 4×)."""
        return next((s for s, act in self.png_scale_actions.items() if act.isChecked()), 2)

    def save_plot(self, path: Path, scale: float = 2.0, transparent: bool = False) -> bool:
        """Save the plot of the current tab (PNG or SVG by the file suffix)."""
        try:
            from .export import save_plot_png, save_plot_svg

            plot = self.plots.current_plot()
            if Path(path).suffix.lower() == ".svg":
                save_plot_svg(plot, path)
            else:
                save_plot_png(plot, path, scale, transparent)
        except Exception as exc:  # noqa: BLE001 - shown to the user, never a crash
            self.show_error(f"Cannot save the plot: {exc}")
            return False
        self._exported(path)
        return True

    def copy_plot(self) -> bool:
        try:
            from .export import copy_widget_to_clipboard

            copy_widget_to_clipboard(self.plots.current_plot())
        except Exception as exc:  # noqa: BLE001
            self.show_error(f"Cannot copy the plot: {exc}")
            return False
        self.statusBar().showMessage("Plot copied to the clipboard", 5000)
        return True

    def _run_to_export(self) -> RunResult | None:
        if self.current_run is not None:
            return self.current_run
        ticked = self.history.checked_runs()
        return ticked[0] if len(ticked) == 1 else None

    def _ask_export_folder(self, title: str) -> Path | None:
        if self._run_to_export() is None:
            self.show_error(_NOTHING_TO_EXPORT)
            return None
        folder = QFileDialog.getExistingDirectory(self, title, self._export_folder())
        return Path(folder) if folder else None

    def export_run_dialog(self) -> None:
        """File → Export run…: ask for a folder, then :meth:`export_run_to`."""
        folder = self._ask_export_folder("Export run to folder")
        if folder is not None:
            self.export_run_to(folder)

    def export_run_to(self, folder: Path, run: RunResult | None = None) -> list[Path]:
        """Write samples.csv, summary.csv and run.json of the run into ``folder``.

        The run is the one shown (or the only ticked one). Returns the files
        written; on failure nothing is written and the banner says why.
        """
        run = run or self._run_to_export()
        if run is None:
            self.show_error(_NOTHING_TO_EXPORT)
            return []
        try:
            from ..results.export import export_run

            written = export_run(run, folder, prefix=f"{run.run_id}_")
        except Exception as exc:  # noqa: BLE001 - shown to the user, never a crash
            self.show_error(f"Cannot export the run to {folder}: {exc}")
            return []
        self._exported(Path(folder) / "x")
        return list(written)

    #: the name :meth:`export_run_to` had first; kept for callers that use it
    export_run = export_run_to

    def export_report_dialog(self) -> None:
        """File → Export report (Markdown)…: ask for a folder, then :meth:`export_report_to`."""
        folder = self._ask_export_folder("Export report to folder")
        if folder is not None:
            self.export_report_to(folder)

    def latency_plot_png(self, scale: float = 1.0) -> bytes:
        """The latency plot as PNG bytes (raises ExportError when it cannot be rendered)."""
        from .export import encode_png, render_widget_image

        return encode_png(render_widget_image(self.plots.latency_plot, scale))

    def export_report_to(self, folder: Path, run: RunResult | None = None) -> list[Path]:
        """Write ``<run id>_report.md`` and the latency plot beside it as ``<run id>_report.png``.

        Returns the files written; on failure nothing is written and the banner says why.
        """
        run = run or self._run_to_export()
        if run is None:
            self.show_error(_NOTHING_TO_EXPORT)
            return []
        try:
            from ..results.export import export_markdown

            png = self.latency_plot_png()
            written = export_markdown(run, folder, png, name=f"{run.run_id}_report")
        except Exception as exc:  # noqa: BLE001 - shown to the user, never a crash
            self.show_error(f"Cannot export the report to {folder}: {exc}")
            return []
        self._exported(Path(folder) / "x")
        return list(written)

    def _exported(self, path: Path) -> None:
        self.settings.set_export_folder(Path(path).parent)
        self.statusBar().showMessage(f"Saved in {Path(path).parent}", 8000)

    # -- closing ------------------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        """Stop a running worker (no orphan process), save the settings, then close."""
        thread = self._thread
        if thread is not None:
            # not the user's Stop: the run folder is left "incomplete", with its samples
            thread.cut_short(CLOSED_DURING_RUN)
            has_finished(thread, CLOSE_WAIT_MS)
        for t in list(self._threads):
            has_finished(t, CLOSE_WAIT_MS)
        if self._probe is not None:
            self._probe.cancel()
            self._probe.wait(CLOSE_WAIT_MS)
        self._refresh_timer.stop()
        self._compile_timer.stop()
        self.save_settings()
        super().closeEvent(event)


_NOTHING_TO_EXPORT = "Nothing to export: run a benchmark or tick one run in the history."


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, s = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {s:02d} s"
    hours, m = divmod(minutes, 60)
    return f"{hours} h {m:02d} min"
