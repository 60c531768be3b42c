"""Start-up cost in the window: a dock with the cold-start job's table and its phases as stacked bars.

Run ▸ Start-up cost… asks for the rounds and start kinds; a :class:`ColdStartController`
runs the cold-start job (``jobs/coldstart_run.py``) on the form's configuration in a
:class:`~compile_studio.gui.job_thread.JobThread`, and a :class:`ColdStartView` shows it;
Run ▸ Open start-up job… reopens a saved folder in the view. The view shows what
``compile-studio-cli coldstart`` prints: per variant and start kind the time to first
result and to the first fast call (median, range over rounds) and the break-even
against eager, and a stacked bar per start of where the first call's time went.
No torch here; the widgets hold no benchmark logic.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFileDialog,
    QFormLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..core.config import BenchmarkConfig, ConfigError
from ..core.protocol import START_KINDS
from ..jobs.coldstart_run import ColdStartOutcome, ColdStartRun, coldstart_request, new_coldstart
from ..results.records.cache_file import CacheFileError, read_cache_file
from ..results.records.coldstart_record import (
    PHASES,
    SUMMARY_COLUMNS,
    ColdStartRecord,
    is_coldstart_folder,
    load_coldstart,
    summarize,
    summary_rows,
)
from ..results.records.sweep_record import SweepDamaged
from .job_thread import JobThread

#: One colour per phase, in the order of :data:`PHASES`.
PHASE_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c9c9c"]


class ColdStartDialog(QDialog):
    """Rounds, start kinds and calls per process of a new cold-start job."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Start-up cost")
        form = QFormLayout(self)
        form.addRow(QLabel(
            "Each compiled variant of the form is started in fresh processes: cold (empty compiler "
            "caches), warm (the caches a cold start left) and carried (only its Mega-Cache artifacts)."
        ))
        self.rounds = QSpinBox(minimum=1, maximum=100, value=3)
        self.calls = QSpinBox(minimum=3, maximum=10_000, value=20)
        form.addRow("Rounds", self.rounds)
        form.addRow("Calls timed per process", self.calls)
        self.kinds = {k: QCheckBox(k) for k in START_KINDS}
        for box in self.kinds.values():
            box.setChecked(True)
            form.addRow("", box)
        self.save_path = QLineEdit(placeholderText="keep the cold start's cache artifacts in this file")
        self.load_path = QLineEdit(placeholderText="carry the artifacts of this cache file (only one you trust)")
        form.addRow("Save cache to", self.save_path)
        form.addRow("Load cache from", self.load_path)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def settings(self) -> tuple[int, list[str], int]:
        return self.rounds.value(), [k for k, b in self.kinds.items() if b.isChecked()], self.calls.value()

    def cache_paths(self) -> tuple[Path | None, Path | None]:
        """(save to, load from); None where left empty."""
        save, load = self.save_path.text().strip(), self.load_path.text().strip()
        return (Path(save).expanduser() if save else None, Path(load).expanduser() if load else None)


class ColdStartController(QObject):
    """Runs one cold-start job at a time on a :class:`~compile_studio.gui.job_thread.JobThread`.

    ``base`` gives the configuration a job measures (the form's); new job folders go in
    ``root``. A start emits :attr:`record_changed` with the new folder's record and
    :attr:`running_changed` (True), then the record as its points come, :attr:`finished`
    with the outcome and :attr:`running_changed` (False).
    """

    #: a problem to show the user
    message = Signal(str)
    #: a log line (the job's workers' stderr)
    log_line = Signal(str)
    #: the job started or ended (True while running)
    running_changed = Signal(bool)
    #: the running job's record (ColdStartRecord) changed
    record_changed = Signal(object)
    #: the job ended: its ColdStartOutcome (also kept in :attr:`last_outcome`)
    finished = Signal(object)

    def __init__(self, base: Callable[[], BenchmarkConfig], root: Path, parent: QWidget | None = None):
        super().__init__(parent)
        self.base = base
        self.root = Path(root)
        self._dialog_parent = parent
        self.job_thread: JobThread | None = None
        self.last_outcome: ColdStartOutcome | None = None
        #: asks the user whether the code the configuration names may run (set by the window)
        self.agree_base: Callable[[BenchmarkConfig], bool] = lambda _config: True
        #: asks the user whether a cache file's artifacts may be loaded (torch unpickles them)
        self.agree_cache: Callable[[Path], bool] = self._ask_cache

    def is_running(self) -> bool:
        return self.job_thread is not None and self.job_thread.isRunning()

    def fraction(self) -> float:
        """How far the running job is (0 when none ran)."""
        return self.job_thread.fraction() if self.job_thread is not None else 0.0

    def start(self, rounds: int, kinds: list[str], calls: int,
              save_cache: Path | None = None, load_cache: Path | None = None) -> bool:
        """Run a cold-start job of :attr:`base`'s configuration; returns whether it started.

        ``load_cache``: a cache file whose header is checked first (a damaged or foreign
        file is refused with the reason); loading it is asked about (torch unpickles what
        the artifacts hold) through :attr:`agree_cache`.
        """
        if self.is_running():
            self.message.emit("A start-up job is running: stop it first")
            return False
        try:
            config = self.base()
            request = coldstart_request(config, rounds, kinds, calls)
        except ConfigError as exc:
            self.message.emit("Cannot measure the start-up: " + "; ".join(str(p) for p in exc.problems))
            return False
        load = None
        if load_cache is not None:
            if "carried" not in request.kinds:
                self.message.emit("A cache file to load goes with the carried start")
                return False
            try:
                load = (load_cache, read_cache_file(load_cache))
            except CacheFileError as exc:
                self.message.emit(f"Cannot load the cache: {exc}")
                return False
            if not self.agree_cache(load_cache):
                self.message.emit("Not run: loading the cache file was not agreed to")
                return False
        if not self.agree_base(config):
            self.message.emit("Not run: the code the configuration names was not agreed to")
            return False
        try:
            folder = new_coldstart(request, self.root)
        except OSError as exc:
            self.message.emit(f"Cannot create the start-up job's folder in {self.root}: {exc.strerror or exc}")
            return False
        thread = JobThread(parent=self, what="the cold-start job")
        thread.runner = ColdStartRun(folder, on_point=thread.relay_changed, on_log=thread.log.emit,
                                     load_cache=load, save_cache=save_cache)
        thread.changed.connect(self._on_changed)
        thread.log.connect(self.log_line)
        thread.failed.connect(self.message)
        thread.finished_job.connect(self._on_finished)
        thread.finished.connect(self._on_thread_ended)
        self.job_thread = thread
        thread.start()
        self.record_changed.emit(folder.snapshot())
        self.running_changed.emit(True)
        return True

    def _ask_cache(self, path: Path) -> bool:
        answer = QMessageBox.question(
            self._dialog_parent, "Load a cache file?",
            f"The carried starts will load the artifacts of {path.name} into a fresh cache. They are "
            "compiler output that torch unpickles, which can run code: load only a file you trust.\n\n"
            "Load it?",
        )
        return answer == QMessageBox.StandardButton.Yes

    def _on_changed(self, record: ColdStartRecord, _part: object = None) -> None:
        self.record_changed.emit(record)

    def _on_finished(self, outcome: ColdStartOutcome) -> None:
        self.last_outcome = outcome
        self.record_changed.emit(outcome.record)
        self.finished.emit(outcome)
        if outcome.refused is not None:
            self.message.emit("Cannot run the start-up job: " + "; ".join(str(p) for p in outcome.refused))
        elif outcome.record.status == "failed":
            self.message.emit(f"The start-up job failed: {outcome.record.message[:300]}")

    def _on_thread_ended(self) -> None:
        self.running_changed.emit(False)

    def stop(self) -> None:
        """Stop the running job (what it measured is kept); returns at once."""
        if self.job_thread is not None and self.job_thread.isRunning():
            self.job_thread.request_stop()

    def close_job(self, wait_ms: int) -> None:
        """The window closes: stop a running job (what it measured is kept) and wait for its thread."""
        if self.job_thread is not None and self.job_thread.isRunning():
            self.job_thread.request_stop("the window was closed during the start-up job")
            self.job_thread.wait(wait_ms)

    def wait_done(self, timeout_ms: int) -> bool:
        """Wait (processing nothing) for the job's thread to end; for scripts and tests."""
        return self.job_thread is None or self.job_thread.wait(timeout_ms)


class ColdStartView(QWidget):
    """The cold-start job's table, its phases as stacked bars, progress and Stop.

    It shows what ``jobs`` (the :class:`ColdStartController`) runs, and saved jobs it opens.
    """

    #: a problem to show the user (a folder that could not be opened)
    message = Signal(str)
    #: a log line (what was read with problems)
    log_line = Signal(str)

    def __init__(self, jobs: ColdStartController, parent: QWidget | None = None):
        super().__init__(parent)
        #: runs the jobs this view shows
        self.jobs = jobs
        self.record: ColdStartRecord | None = None
        #: the dock the view sits in, in the main window (None elsewhere)
        self.dock: QDockWidget | None = None
        layout = QVBoxLayout(self)
        self.title = QLabel("No start-up job yet: Run ▸ Start-up cost…")
        self.title.setWordWrap(True)
        layout.addWidget(self.title)
        self.table = QTableWidget(0, len(SUMMARY_COLUMNS))
        self.table.setHorizontalHeaderLabels(SUMMARY_COLUMNS)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        layout.addWidget(self.table)
        self.plot = pg.PlotWidget()
        self.plot.setLabel("left", "first call (s)")
        self.plot.addLegend(offset=(5, 5))
        layout.addWidget(self.plot, 1)
        self.notes = QLabel("")
        self.notes.setWordWrap(True)
        layout.addWidget(self.notes)
        self.progress = QProgressBar()
        self.progress.hide()
        layout.addWidget(self.progress)
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(lambda *_: self.jobs.stop())
        self.stop_button.setEnabled(False)
        layout.addWidget(self.stop_button)
        self._timer = QTimer(self, interval=500)
        self._timer.timeout.connect(self._tick)
        #: the phase bars drawn: (label, {phase: seconds})
        self.bars: list[tuple[str, dict[str, float]]] = []
        jobs.record_changed.connect(self.show_record)
        jobs.running_changed.connect(self._show_running)

    def new_dialog(self) -> None:
        """Ask for a new job's rounds, start kinds and cache files, and have :attr:`jobs` run it."""
        dialog = ColdStartDialog(self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        save, load = dialog.cache_paths()
        self.jobs.start(*dialog.settings(), save_cache=save, load_cache=load)

    def _show_running(self, running: bool) -> None:
        if running:
            self.progress.setValue(0)
            self.progress.show()
            self._timer.start()
        else:
            self._timer.stop()
            self.progress.hide()
        self.stop_button.setEnabled(running)

    def _tick(self) -> None:
        self.progress.setValue(int(100 * self.jobs.fraction()))

    def close_job(self, wait_ms: int) -> None:
        """The window closes: :attr:`jobs` stops a running job (what it measured is kept)."""
        self.jobs.close_job(wait_ms)

    def open_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open start-up job folder", str(self.jobs.root))
        if path:
            self.open_folder(Path(path))

    def open_folder(self, path: str | Path) -> bool:
        """Show the saved job in ``path`` (its folder or coldstart.json); a damaged one is reported."""
        if not is_coldstart_folder(path):
            self.message.emit(f"{Path(path).name} is not a start-up job folder (no coldstart.json)")
            return False
        try:
            record = load_coldstart(path)
        except SweepDamaged as exc:
            self.message.emit(f"Cannot open the start-up job {Path(path).name}: {exc}")
            return False
        self.show_record(record)
        if record.load_problems:
            self.log_line.emit(f"{Path(path).name} was read with problems: " + "; ".join(record.load_problems[:10]))
        return True

    def show_record(self, record: ColdStartRecord) -> None:
        self.record = record
        self.title.setText(f"{record.title()}  [{record.status}]")
        rows = summary_rows(summarize(record))
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                item = QTableWidgetItem(text)
                if c >= 2:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        self._draw_phases(record)
        notes = list(record.notes)
        for s in summarize(record):
            notes += [f"{s.variant} {s.start} failed: {e}" for e in s.errors]
        if record.message:
            notes.append(record.message)
        self.notes.setText("\n".join(notes[:8]))

    def _draw_phases(self, record: ColdStartRecord) -> None:
        self.plot.clear()
        legend = self.plot.plotItem.legend
        if legend is not None:
            legend.clear()
        self.bars = [(f"{s.variant} {s.start}", s.phases) for s in summarize(record) if s.phases]
        if not self.bars:
            return
        bottoms = [0.0] * len(self.bars)
        xs = list(range(len(self.bars)))
        for name, color in zip(PHASES, PHASE_COLORS):
            heights = [phases.get(name, 0.0) for _, phases in self.bars]
            if not any(heights):
                continue
            item = pg.BarGraphItem(x=xs, height=heights, y0=list(bottoms), width=0.6,
                                   brush=QColor(color), name=name)
            self.plot.addItem(item)
            if legend is not None:
                legend.addItem(item, name)
            bottoms = [b + h for b, h in zip(bottoms, heights)]
        self.plot.getAxis("bottom").setTicks([[(x, label) for x, (label, _) in zip(xs, self.bars)]])


def install_coldstart_view(window: Any) -> ColdStartView:
    """Give the window its Start-up cost dock (hidden until used) and its two Run menu items.

    The controller (:attr:`ColdStartView.jobs`) runs the jobs; the view returned is the
    window's part, whose ``close_job`` stops a running job as the window closes.
    """
    jobs = ColdStartController(window.config_panel.config, window.store.root.parent / "coldstart", window)
    runs = getattr(window, "runs", None)  # the window's Run: its rule for the form's code
    if runs is not None:
        jobs.agree_base = runs.code_agreed
    view = ColdStartView(jobs)
    jobs.message.connect(window.show_error)
    jobs.log_line.connect(window.log.append_line)
    view.message.connect(window.show_error)
    view.log_line.connect(window.log.append_line)
    dock = QDockWidget("Start-up cost", window)
    dock.setObjectName("coldstartDock")
    dock.setWidget(view)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    dock.hide()
    view.dock = dock

    def shown(then: Callable[[], object]) -> Callable[[], None]:
        def call() -> None:
            dock.show()
            dock.raise_()
            then()

        return call

    run_menu = next((a.menu() for a in window.menuBar().actions() if a.text() == "&Run"), None)
    menu = run_menu if run_menu is not None else window.menuBar().addMenu("&Run")
    menu.addSeparator()
    window.coldstart_action = QAction("Start-up cost…", window)
    window.coldstart_action.triggered.connect(lambda *_: shown(view.new_dialog)())
    window.open_coldstart_action = QAction("Open start-up job…", window)
    window.open_coldstart_action.triggered.connect(lambda *_: shown(view.open_dialog)())
    for act in (window.coldstart_action, window.open_coldstart_action):
        menu.addAction(act)
        window.addAction(act)
    return view
