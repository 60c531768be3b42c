"""The "Why" tab: why each variant of the run shown is as fast as it is.

Per variant: the sentence (what compile did not do — graph breaks, a hit
recompile limit — first; then launch-, dispatch- or compute-bound, mixed,
bound by other operators, or too noisy to classify, and what compile
changes), the top operators or kernels of the profiled calls, graph
breaks and recompiles with their reasons and source lines, Inductor's output
code in a read-only viewer, and the Chrome trace's file (it opens in
ui.perfetto.dev). Compile time by phase is a stacked bar per compiled
variant. Everything is read from the run folder by ``results.why_files``; text from
the files is shown as plain text, never as markup. No torch.
"""

from __future__ import annotations

from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QColor, QDesktopServices, QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..results import RunDamaged, RunResult
from ..results.why import sentence, variant_lines
from ..results.why_files import (
    CodeFile,
    VariantWhy,
    WhyReport,
    load_why,
    read_text_file,
)
from .colors import SERIES_COLORS
from .run_identity import run_folder

#: Columns of the top-operators table.
OP_COLUMNS = ["operator / kernel", "self / call", "calls / call", "share"]
PERFETTO_NOTE = "open it in ui.perfetto.dev (or chrome://tracing)"


def _plain_label(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value * 1000:.1f} µs" if value < 1 else f"{value:.2f} ms"


class PhaseBars(pg.PlotWidget):
    """Compile time by phase: one horizontal stacked bar per compiled variant."""

    def __init__(self) -> None:
        super().__init__(background="w")
        self.item = self.getPlotItem()
        self.item.setLabel("bottom", "seconds of the first call")
        self.item.showGrid(x=True, y=False, alpha=0.3)
        self.item.setMouseEnabled(x=False, y=False)
        self.item.hideButtons()
        # top left, above the bars: a narrow view never cuts the phase names off
        self.legend = self.item.addLegend(offset=(5, 5), colCount=2)
        self.bars: list[pg.BarGraphItem] = []
        self.setMinimumHeight(140)

    def show_phases(self, report: WhyReport) -> None:
        self.item.clear()
        self.legend.clear()
        self.bars = []
        rows = [(n, v) for n, v in report.variants.items() if v.compile is not None and v.compile.phases]
        phases: list[str] = []
        for _, v in rows:
            assert v.compile is not None
            phases += [p for p in v.compile.phases if p not in phases]
        for j, phase in enumerate(phases):
            x0, y, w = [], [], []
            for i, (_, v) in enumerate(rows):
                assert v.compile is not None
                before = sum(v.compile.phases.get(p, 0.0) for p in phases[:j])
                x0.append(before)
                y.append(i)
                w.append(v.compile.phases.get(phase, 0.0))
            if not any(w):
                continue
            color = QColor(SERIES_COLORS[j % len(SERIES_COLORS)])
            bar = pg.BarGraphItem(x0=x0, y=y, height=0.6, width=w, brush=color, pen=pg.mkPen(None))
            self.item.addItem(bar)
            self.legend.addItem(bar, phase)
            self.bars.append(bar)
        for i, (_, v) in enumerate(rows):
            assert v.compile is not None
            if v.compile.first_call_ms:
                total = v.compile.first_call_ms / 1000.0
                mark = pg.ScatterPlotItem([total], [i], symbol="|", size=18, pen=pg.mkPen("k", width=2))
                self.item.addItem(mark)
        axis = self.item.getAxis("left")
        axis.setTicks([[(i, name) for i, (name, _) in enumerate(rows)]])
        # room above the bars for the legend
        self.item.setYRange(-0.6, max(0.6, len(rows) - 0.4) + 1.3)
        self.item.setTitle("compile time by phase  (| first call)" if rows else "no compile phases")


class WhyView(QWidget):
    """Why each variant is faster or slower: the evidence of the run's diagnostics."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.run: RunResult | None = None
        self.folder: Path | None = None
        self.report = WhyReport(None, absent="no run shown yet")
        self._key: tuple[object, ...] | None = None
        self._code_files: list[CodeFile] = []

        self.variant_box = QComboBox()
        self.variant_box.currentTextChanged.connect(self._show_variant)
        self.sentence = _plain_label()
        self.sentence.setObjectName("whySentence")
        self.sentence.setStyleSheet("font-weight: bold;")
        self.open_folder_button = QPushButton("Open run folder")
        self.open_folder_button.clicked.connect(self.open_folder)
        head = QHBoxLayout()
        head.addWidget(QLabel("Variant"))
        head.addWidget(self.variant_box)
        head.addWidget(self.sentence, 1)
        head.addWidget(self.open_folder_button)

        self.ops = QTableWidget(0, len(OP_COLUMNS))
        self.ops.setHorizontalHeaderLabels(OP_COLUMNS)
        header = self.ops.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.ops.setToolTip("self time per call (median over the profiled calls), calls per call, "
                            "share of the call's wall time")
        self.ops.verticalHeader().hide()
        self.ops.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.profile_note = _plain_label()
        ops_box = QWidget()
        ops_layout = QVBoxLayout(ops_box)
        ops_layout.setContentsMargins(0, 0, 0, 0)
        ops_layout.addWidget(self.profile_note)
        ops_layout.addWidget(self.ops, 1)

        self.phases = PhaseBars()
        self.phases_note = _plain_label()
        phase_box = QWidget()
        phase_layout = QVBoxLayout(phase_box)
        phase_layout.setContentsMargins(0, 0, 0, 0)
        phase_layout.addWidget(self.phases, 1)
        phase_layout.addWidget(self.phases_note)

        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        self.details.setObjectName("whyDetails")
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.details.setFont(mono)
        self.code_box = QComboBox()
        self.code_box.currentIndexChanged.connect(self._show_code)
        self.code = QPlainTextEdit()
        self.code.setReadOnly(True)
        self.code.setFont(mono)
        self.code.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.code_path = _plain_label()
        code_head = QHBoxLayout()
        code_head.addWidget(QLabel("Output code"))
        code_head.addWidget(self.code_box, 1)
        code_widget = QWidget()
        code_layout = QVBoxLayout(code_widget)
        code_layout.setContentsMargins(0, 0, 0, 0)
        code_layout.addLayout(code_head)
        code_layout.addWidget(self.code_path)
        code_layout.addWidget(self.code, 1)

        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(ops_box)
        top.addWidget(phase_box)
        top.setSizes([600, 500])
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.details)
        bottom.addWidget(code_widget)
        bottom.setSizes([600, 500])
        body = QSplitter(Qt.Orientation.Vertical)
        body.addWidget(top)
        body.addWidget(bottom)
        self.trace_label = _plain_label()
        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(body, 1)
        layout.addWidget(self.trace_label)
        self._show_absent("no run shown yet")

    # -- the run ------------------------------------------------------------------------------
    def set_run(self, run: RunResult | None) -> None:
        """Show the diagnostics of ``run`` from the folder it was read from (never a folder
        found by the id inside it); None clears the view."""
        self.show_folder(run, run_folder(run))

    def show_folder(self, run: RunResult | None, folder: Path | None) -> None:
        """Show the diagnostics in ``folder`` (read again only when its why.json changed)."""
        why = folder / "why.json" if folder is not None else None
        try:
            stamp = why.stat().st_mtime_ns if why is not None else None
        except OSError:
            stamp = None
        key = (run.run_id if run is not None else None, str(folder), stamp)
        if key == self._key:
            return
        self._key = key
        self.run, self.folder = run, folder
        if run is None:
            self.report = WhyReport(None, absent="no run shown (or a run is in progress)")
        else:
            self.report = load_why(folder)
        self.phases.show_phases(self.report)
        self.variant_box.blockSignals(True)
        self.variant_box.clear()
        self.variant_box.addItems(list(self.report.variants))
        self.variant_box.blockSignals(False)
        if self.report.absent or not self.report.variants:
            self._show_absent(self.report.absent or "no variant has diagnostics")
            return
        compiled = [n for n, v in self.report.variants.items() if v.compiled]
        self.variant_box.setCurrentText(compiled[0] if compiled else next(iter(self.report.variants)))
        self._show_variant(self.variant_box.currentText())

    def _show_absent(self, why: str) -> None:
        self.sentence.setText(f"No diagnostics: {why}")
        self.ops.setRowCount(0)
        self.details.setPlainText("")
        self.code_box.clear()
        self.code.setPlainText("")
        self.code_path.setText("")
        self.trace_label.setText("")
        self.profile_note.setText("")
        self.phases_note.setText("")
        self.open_folder_button.setEnabled(self.folder is not None)

    def _show_variant(self, name: str) -> None:
        v = self.report.variants.get(name)
        if v is None:
            return
        self.open_folder_button.setEnabled(self.folder is not None)
        because = sentence(self.run, name) if self.run is not None else None
        self.sentence.setText(because or "Not enough evidence for a sentence (no profile of eager).")
        self._fill_ops(v)
        lines = variant_lines(v, ops=False)
        measured = [f"model as measured: {self.run.title()}"] if self.run is not None else []
        if self.run is not None:
            measured += [f"  {note}" for note in self.run.model_notes()]
        self.details.setPlainText("\n".join(measured + lines[1:]))
        self._fill_code(v)
        self.trace_label.setText(
            f"Trace: {self.folder / v.trace} — {PERFETTO_NOTE}" if v.trace and self.folder
            else "Trace: none kept for this variant"
        )
        notes = []
        for n, w in self.report.variants.items():
            share = w.compile.named_share() if w.compile is not None else None
            if share is not None:
                notes.append(f"{n}: named phases cover {share * 100:.0f} % of the first call")
        self.phases_note.setText("; ".join(notes))

    def _fill_ops(self, v: VariantWhy) -> None:
        p = v.profile
        rows = (p.kernels or p.ops) if p is not None else []
        self.ops.setRowCount(len(rows))
        for i, r in enumerate(rows):
            cells = [
                r.name,
                _ms(r.self_ms_per_call),
                "–" if r.calls_per_call is None else f"{r.calls_per_call:g}",
                "–" if r.share is None else f"{r.share * 100:.1f} %",
            ]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if j:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.ops.setItem(i, j, item)
        if p is None:
            self.profile_note.setText("No profile for this variant.")
        else:
            what = "kernels" if p.kernels else "operators"
            count = (
                f"{p.kernels_per_call:g} {p.kernels_counted}" if p.kernels_per_call is not None
                else "kernels not counted"
            )
            self.profile_note.setText(
                f"Top {what} of {p.calls} profiled steady-state calls, {_ms(p.wall_ms_per_call)} per call; "
                f"{count}"
                + (f" + {p.fused_kernels_in_code} fused kernels in the output code"
                   if p.fused_kernels_in_code else "")
            )

    def _fill_code(self, v: VariantWhy) -> None:
        self.code_box.blockSignals(True)
        self.code_box.clear()
        for k, c in enumerate(v.code):
            self.code_box.addItem(c.file or f"graph {k} (not kept)", k)
        self.code_box.blockSignals(False)
        self._code_files = list(v.code)
        if v.code:
            self.code_box.setCurrentIndex(0)
            self._show_code(0)
        else:
            self.code.setPlainText("")
            self.code_path.setText("No output code: eager and non-Inductor backends generate none")

    def _show_code(self, index: int) -> None:
        files = self._code_files
        if not 0 <= index < len(files):
            return
        c = files[index]
        self.code_path.setText(f"Written by Inductor to {c.path}")
        if c.file is None or self.folder is None:
            self.code.setPlainText("(this graph's code was not kept in the run folder)")
            return
        try:
            self.code.setPlainText(read_text_file(self.folder, c.file))
        except RunDamaged as exc:
            self.code.setPlainText(f"(cannot be shown: {exc})")

    def open_folder(self) -> None:
        """Open the run folder (trace, output code, why.json) in the desktop's file manager."""
        if self.folder is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.folder)))
