"""The Sweep view: start, stop, resume or open a sweep, and watch its chart fill point by point.

The view shows; a :class:`~compile_studio.gui.sweep_controller.SweepController` runs
the jobs (:attr:`SweepView.jobs`).
A new sweep takes the form's configuration as its base and a parameter with
its values from :class:`SweepDialog`. Double-clicking a point asks the window
to show that point's run (:attr:`SweepView.run_requested`); problems go to
:attr:`SweepView.message` (the window's banner).

The dialogs are in sweep_dialogs.py, the dock and the Sweep menu in
sweep_dock.py, the chart in plots/sweep_plot.py, the threads in sweep_thread.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ..core import protocol
from ..core.config import BenchmarkConfig, ConfigError, EnvironmentInfo
from ..jobs.sweep_spec import (
    SweepSpec,
    describe_points,
    value_text,
)
from ..results import RunDamaged, RunResult, load_run
from ..results.records.shape_record import (
    ShapeSweepRecord,
    no_speedup_reason,
    range_text,
    shape_record_to_csv,
    speedup_spread,
)
from ..results.records.sweep_load import is_shape_sweep_folder, load_shape_sweep
from ..results.records.sweep_record import SweepDamaged, SweepRecord, record_to_csv
from ..results.report.formatting import plural
from ..results.storage.file_io import atomic_write_text
from ..results.storage.sweep_store import SweepFolder
from .image_export import ExportError, save_plot_png, save_plot_svg
from .plots.sweep_charts import SweepCharts
from .plots.sweep_plot import ShapeSweepPlot, SweepPlot
from .sweep_controller import SweepController
from .sweep_dialogs import ShapeSweepDialog, SweepDialog

#: How often the progress bar follows a running sweep.
PROGRESS_INTERVAL_MS = 250
class SweepView(QWidget):
    """A sweep's chart with New / Open / Resume / Stop and exports (PNG, SVG, CSV)."""

    #: a point's run, loaded, to be shown by the window
    run_requested = Signal(object)
    #: a problem to show the user
    message = Signal(str)
    #: a log line (the sweep's workers' stderr, point by point)
    log_line = Signal(str)
    #: the sweep started or ended (True while running)
    running_changed = Signal(bool)

    def __init__(
        self,
        base_config: Callable[[], BenchmarkConfig],
        root: Path,
        environment: Callable[[], EnvironmentInfo | None] = lambda: None,
        busy: Callable[[], str] = lambda: "",
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        self._base_config = base_config
        self._environment = environment
        self._busy = busy
        self.root = Path(root)
        #: runs the sweeps and shape sweeps (their threads, the code agreed to run)
        self.jobs = SweepController(self.root, busy, self)
        self.folder: SweepFolder | None = None
        self.record: SweepRecord | None = None
        #: the shape sweep shown instead of a sweep (opened from its folder)
        self.shape_record: ShapeSweepRecord | None = None
        #: the dock the view sits in, in the main window (None elsewhere)
        self.dock: QDockWidget | None = None
        self._follow_jobs()

        self.title = QLabel("No sweep")
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        self.title.setWordWrap(True)
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress.setMaximumWidth(200)
        self.progress.hide()
        self._make_buttons()
        self.charts = SweepCharts(self.open_point)
        #: a shape sweep's warnings in words (Dynamo's recompile limit hit)
        self.warning = QLabel("")
        self.warning.setTextFormat(Qt.TextFormat.PlainText)
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet("color: #B00020;")
        self.warning.hide()
        self._lay_out()
        self._timer = QTimer(self)
        self._timer.setInterval(PROGRESS_INTERVAL_MS)
        self._timer.timeout.connect(self._tick)
        self._phase = ""
        self._update_buttons()

    def _make_buttons(self) -> None:
        """New, Open, Resume and Stop; the exports PNG, SVG and CSV."""
        self.new_button = QPushButton("New sweep…")
        self.open_button = QPushButton("Open…")
        self.resume_button = QPushButton("Resume")
        self.stop_button = QPushButton("Stop")
        self.png_button = QPushButton("PNG…")
        self.svg_button = QPushButton("SVG…")
        self.csv_button = QPushButton("CSV…")
        self.new_button.clicked.connect(lambda: self.new_sweep_dialog())
        self.open_button.clicked.connect(lambda: self.open_dialog())
        self.resume_button.clicked.connect(lambda: self.resume())
        self.stop_button.clicked.connect(lambda: self.stop())
        self.png_button.clicked.connect(lambda: self._export_dialog("png"))
        self.svg_button.clicked.connect(lambda: self._export_dialog("svg"))
        self.csv_button.clicked.connect(lambda: self._export_dialog("csv"))
        for button, tip in (
            (self.resume_button, "Run the points this sweep has not finished"),
            (self.png_button, "Save the sweep chart as PNG"),
            (self.svg_button, "Save the sweep chart as SVG"),
            (self.csv_button, "Save sweep.csv: one row per point × variant"),
        ):
            button.setToolTip(tip)

    def _lay_out(self) -> None:
        # two rows of buttons, and texts that wrap: the dock fits beside the window's panes on a
        # small screen, whatever a sweep's status says
        buttons = QHBoxLayout()
        for b in (self.new_button, self.open_button, self.resume_button, self.stop_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        exports = QHBoxLayout()
        exports.addWidget(QLabel("Export:"))
        for b in (self.png_button, self.svg_button, self.csv_button):
            exports.addWidget(b)
        exports.addStretch(1)
        self.status.setWordWrap(True)
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.warning.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        line = QHBoxLayout()
        line.addWidget(self.status, 1)
        line.addWidget(self.progress)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(buttons)
        lay.addLayout(exports)
        lay.addWidget(self.title)
        lay.addLayout(line)
        lay.addWidget(self.warning)
        lay.addWidget(self.charts, 1)

    @property
    def plot(self) -> SweepPlot:
        """The sweep's chart."""
        return self.charts.plot

    @property
    def shape_plot(self) -> ShapeSweepPlot:
        """A shape sweep's chart, shown instead of :attr:`plot`."""
        return self.charts.shape_plot

    def _follow_jobs(self) -> None:
        jobs = self.jobs
        jobs.message.connect(self.message)
        jobs.log_line.connect(self.log_line)
        jobs.sweep_started.connect(self._on_sweep_started)
        jobs.point_changed.connect(self._on_point)
        jobs.worker_event.connect(self._on_event)
        jobs.sweep_ended.connect(self._on_sweep_ended)
        jobs.shape_started.connect(self._on_shape_started)
        jobs.shape_changed.connect(self.show_shape_record)
        jobs.shape_ended.connect(self._on_shape_ended)
        jobs.running_changed.connect(self.running_changed)

    # -- state ----------------------------------------------------------------------------------
    def is_running(self) -> bool:
        return self.jobs.is_running()

    def _update_buttons(self) -> None:
        running = self.is_running()
        stopping = running and self.jobs.stop_requested()
        has = self.record is not None or self.shape_record is not None
        missing = has and any(p.missing for p in self.record.points) if self.record else False
        self.new_button.setEnabled(not running)
        self.open_button.setEnabled(not running)
        self.resume_button.setEnabled(not running and bool(missing))
        self.stop_button.setEnabled(running and not stopping)
        for b in (self.png_button, self.svg_button, self.csv_button):
            b.setEnabled(has)

    def show_record(self, record: SweepRecord | None) -> None:
        """Draw ``record`` and say where it stands."""
        self.record = record
        if self.shape_record is not None:
            self.shape_record = None
            self.shape_plot.set_record(None)
            self.shape_plot.hide()
            self.warning.hide()
            self.plot.show()
        self.plot.set_record(record)
        if record is None:
            self.title.setText("No sweep")
            self.status.setText("")
        else:
            self.title.setText(f"Sweep: {record.title()}")
            status = "running" if self.is_running() else record.status
            text = f"[{status}] {describe_points(record)}"
            if record.message and not self.is_running():
                text += f" · {record.message}"
            if self._phase and self.is_running():
                text += f" · {self._phase}"
            failed = [p for p in record.points if p.status == "failed"]
            if failed:
                text += f" · failed: {record.param}={value_text(failed[0].value)}: {failed[0].message[:120]}"
            self.status.setText(text)
        self._update_buttons()

    # -- starting and stopping ------------------------------------------------------------------
    def new_sweep_dialog(self) -> None:
        busy = self._busy()
        if busy:
            self.message.emit(busy)
            return
        base = self._base_config()
        dialog = SweepDialog(base, self._environment(), self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        try:
            spec = dialog.spec()
        except ConfigError as exc:
            self.message.emit("Cannot sweep: " + "; ".join(str(p) for p in exc.problems))
            return
        self.start(spec, base, dialog.concurrency.value())

    def start(self, spec: SweepSpec, base: BenchmarkConfig, concurrency: int = 1) -> bool:
        """Make a sweep folder for ``spec`` from ``base`` and run it; returns whether it started."""
        return self.jobs.start(spec, base, concurrency)

    def resume(self, concurrency: int | None = None) -> bool:
        """Run the points of the shown sweep that are missing (pending, stopped, cut off)."""
        if self.folder is None:
            return False
        return self.jobs.resume(self.folder.path, concurrency)

    def _on_sweep_started(self, folder: SweepFolder) -> None:
        self.folder = folder
        self._phase = ""
        self.progress.setValue(0)
        self.progress.show()
        self._timer.start()
        self.show_record(folder.snapshot())

    def new_shape_sweep_dialog(self) -> None:
        busy = self._busy()
        if busy:
            self.message.emit(busy)
            return
        base = self._base_config()
        dialog = ShapeSweepDialog(base, self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        try:
            request = dialog.request()
        except ConfigError as exc:
            self.message.emit("Cannot run the shape sweep: " + "; ".join(str(p) for p in exc.problems))
            return
        self.start_shape(request)

    def start_shape(self, request: protocol.ShapeSweepRequest) -> bool:
        """Make a shape-sweep folder for ``request`` and run it in one worker; returns whether it started."""
        return self.jobs.start_shape(request)

    def _on_shape_started(self, record: ShapeSweepRecord) -> None:
        self.folder = None
        self.progress.setValue(0)
        self.progress.show()
        self._timer.start()
        self.show_shape_record(record)

    def stop(self) -> None:
        """Stop the running sweep: no new point starts, the running one stops; points done are kept."""
        if self.jobs.stop():
            self.status.setText(self.status.text() + " · stopping…")
            self._update_buttons()

    def close_job(self, wait_ms: int) -> None:
        """The window closes: stop a running sweep and wait up to ``wait_ms`` for its workers."""
        self.jobs.close(wait_ms)

    def _on_point(self, record: SweepRecord, index: int) -> None:
        self.show_record(record)

    def _on_event(self, index: int, event: protocol.Event) -> None:
        """An event of the worker running point ``index``: its phase shown, its errors and warnings logged."""
        record = self.record
        if isinstance(event, protocol.ErrorEvent):
            self.log_line.emit(f"[point {index + 1}] error ({event.kind}) in {event.variant or 'run'}: {event.message}")
        elif isinstance(event, protocol.WarningEvent):
            self.log_line.emit(f"[point {index + 1}] warning: {event.message}")
        elif isinstance(event, protocol.PhaseEvent) and event.variant and record is not None:
            point = next((p for p in record.points if p.index == index), None)
            where = f"{record.param}={value_text(point.value)}" if point is not None else f"point {index + 1}"
            self._phase = f"{where}: {event.variant} {str(event.phase)}"
            self.show_record(record)

    def _tick(self) -> None:
        if self.is_running():
            self.progress.setValue(int(1000 * self.jobs.fraction()))

    def _on_shape_ended(self, record: ShapeSweepRecord) -> None:
        self._timer.stop()
        self.progress.hide()
        self.show_shape_record(record)

    def _on_sweep_ended(self, record: SweepRecord) -> None:
        self._timer.stop()
        self.progress.hide()
        self._phase = ""
        self.show_record(record)

    def wait_done(self, timeout_ms: int) -> bool:
        """Wait (processing nothing) for the sweep thread to end; for scripts and tests."""
        return self.jobs.wait_done(timeout_ms)

    # -- opening ----------------------------------------------------------------------------------
    def open_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open sweep folder", str(self.root))
        if path:
            self.open_sweep(Path(path))

    def open_sweep(self, path: str | Path) -> bool:
        """Show the sweep in ``path`` (its folder or sweep.json, or a shape sweep's); a damaged one is reported."""
        if self.is_running():
            self.message.emit("A sweep is running: stop it before opening another")
            return False
        if is_shape_sweep_folder(path):
            try:
                shape = load_shape_sweep(path)
            except SweepDamaged as exc:
                self.message.emit(f"Cannot open the shape sweep {Path(path).name}: {exc}")
                return False
            self.folder = None
            self.show_shape_record(shape)
            if shape.load_problems:
                self.log_line.emit(f"{Path(path).name} was read with problems: " + "; ".join(shape.load_problems[:10]))
            return True
        try:
            folder = SweepFolder.open(Path(path))
        except SweepDamaged as exc:
            self.message.emit(f"Cannot open the sweep {Path(path).name}: {exc}")
            return False
        self.folder = folder
        record = folder.snapshot()
        if record.status == "running":
            record.status = "incomplete"
        self.show_record(record)
        if record.load_problems:
            self.log_line.emit(f"{folder.path.name} was read with problems: " + "; ".join(record.load_problems[:10]))
        return True

    def show_shape_record(self, record: ShapeSweepRecord) -> None:
        """Draw a shape sweep: first-call ms and recompiles per batch size per mode, warnings in words."""
        self.record = None
        self.plot.set_record(None)
        self.plot.hide()
        self.shape_record = record
        self.shape_plot.set_record(record)
        self.shape_plot.show()
        self.title.setText(shape_title(record))
        parts = [f"[{record.status}]"]
        for variant, mode in record.series():
            points = record.points_of(variant, mode)
            words = f"{variant} dynamic={mode}: {plural(sum(p.recompiles for p in points), 'recompile')}"
            speedups = shape_speedups_text(record, variant, mode)
            parts.append(f"{words}, {speedups}" if speedups else words)
        if record.message:
            parts.append(record.message)
        if self.jobs.shape_thread is not None:
            parts[0] = "[running]"
        self.status.setText(" · ".join(parts))
        warnings = record.warnings()
        self.warning.setText("\n".join(f"⚠ {w}" for w in warnings))
        self.warning.setVisible(bool(warnings))
        self._update_buttons()

    def open_point(self, index: int) -> RunResult | None:
        """Load point ``index``'s run and ask the window to show it (:attr:`run_requested`)."""
        if self.folder is None or self.record is None:
            return None
        point = next((p for p in self.record.points if p.index == index), None)
        if point is None or not point.run:
            self.message.emit("This point has no run yet")
            return None
        try:
            run = load_run(self.folder.path / point.run)
        except RunDamaged as exc:
            self.message.emit(f"Cannot open the run of {self.record.param}={value_text(point.value)}: {exc}")
            return None
        self.run_requested.emit(run)
        return run

    # -- exports ----------------------------------------------------------------------------------
    def _default_name(self, suffix: str) -> str:
        shown = self.record or self.shape_record
        name = shown.sweep_id if shown is not None else "sweep"
        return f"{name}{suffix}"

    def _export_dialog(self, kind: str) -> None:
        filters = {"png": "PNG image (*.png)", "svg": "SVG image (*.svg)", "csv": "CSV (*.csv)"}
        start = str((self.folder.path if self.folder else self.root) / self._default_name(f".{kind}"))
        path, _ = QFileDialog.getSaveFileName(self, f"Export sweep as {kind.upper()}", start, filters[kind])
        if path:
            self.export(Path(path))

    def export(self, path: Path, scale: float = 2.0) -> bool:
        """Save the chart (``.png``/``.svg``) or the table (``.csv``); a failure is reported."""
        shape = self.shape_record
        if self.record is None and shape is None:
            self.message.emit("Nothing to export: start or open a sweep")
            return False
        suffix = path.suffix.lower()
        plot = self.shape_plot if shape is not None else self.plot
        title = shape_title(shape) if shape is not None else f"Sweep: {self.record.title()}"  # type: ignore[union-attr]
        try:
            if suffix == ".svg":
                save_plot_svg(plot, path, title=title)
            elif suffix == ".csv":
                text = shape_record_to_csv(shape) if shape is not None else record_to_csv(self.record)  # type: ignore[arg-type]
                try:
                    atomic_write_text(path, text)
                except OSError as exc:
                    raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from exc
            else:
                save_plot_png(plot, path, scale=scale)
        except ExportError as exc:
            self.message.emit(str(exc))
            return False
        return True


def shape_title(record: ShapeSweepRecord) -> str:
    """A shape sweep's heading, "shape sweep" said once: ``Shape sweep: batch 1,8 · MLP … · fp32 · cpu``."""
    title = record.title()
    for said in ("shape sweep over ", "shape sweep "):
        if title.lower().startswith(said):
            title = title[len(said):]
            break
    return f"Shape sweep: {title}"


def shape_speedups_text(record: ShapeSweepRecord, variant: str, mode: str) -> str:
    """The speedups of one shape-sweep series in words, as far as its few calls support them:
    ``speedup 0.8–1.5× across its calls (5 calls each)``, the range its calls' ratios span
    (never a ratio of medians of a few calls as if it were a measurement); "" when no point
    recorded that range."""
    points = record.points_of(variant, mode)
    spreads = [s for p in points if no_speedup_reason(p) is None and (s := speedup_spread(p)) is not None]
    if not spreads:
        return ""
    calls = {p.timed_calls for p in points if p.timed_calls is not None}
    n = calls.pop() if len(calls) == 1 else record.repeats
    lo, hi = min(s[0] for s in spreads), max(s[1] for s in spreads)
    return f"speedup {range_text(lo, hi)} across its calls ({plural(n, 'call')} each)"
