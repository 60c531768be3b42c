"""The "Why" tab: why each variant of the run shown is as fast as it is.

Per variant: the sentence (what compile did not do — graph breaks, a hit
recompile limit — first; then launch-, dispatch- or compute-bound, mixed,
bound by other operators, or too noisy to classify, and what compile
changes), the top operators or kernels of the profiled calls, graph
breaks and recompiles with their reasons and source lines, Inductor's output
code in a read-only viewer, and the Chrome trace's file (it opens in
ui.perfetto.dev). Compile time by phase is a stacked bar per compiled
variant. Below, "What to try": the run's ranked suggestions
(``results.suggestions.advice``) and, where one was tried (``compile-studio-cli advise RUN
--try N``), the verdict of its trial (``results.suggestions.what_to_try``); "Try it" runs
that comparison for the selected suggestion off the GUI thread
(:class:`~compile_studio.gui.trial_controller.TrialController`: a :class:`~compile_studio.jobs.trial.TrialRunner` on a :class:`~compile_studio.gui.job_thread.JobThread`, as a sweep runs). Everything is
read from the run folder by ``results.explain.why_files`` and ``results.records.trial_record``;
text from the files is shown as plain text, never as markup. No torch.

Below the variant row the tab scrolls rather than squash its parts; a narrow
tab puts the operators above the chart and the details above the code. The
operator table and the chart are in :mod:`why_evidence`.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QFontDatabase, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..jobs.trial import not_tried_reason
from ..results import RunDamaged, RunResult
from ..results.explain.why import sentence, variant_lines
from ..results.explain.why_files import (
    CodeFile,
    VariantWhy,
    WhyReport,
    load_why,
    read_text_file,
)
from ..results.records.trial_record import (
    MIN_TRIAL_ROUNDS,
    TRIAL_JSON,
    TRIALS_DIR,
)
from ..results.suggestions.what_to_try import WhatToTry, round_lines, verdict_summary, what_to_try
from .run_identity import run_folder
from .trial_controller import TrialController
from .why_evidence import OP_COLUMNS as OP_COLUMNS  # where it was first
from .why_evidence import OpsTable
from .why_evidence import PhaseBars as PhaseBars  # where it was first

#: Columns of the "What to try" table.
TRY_COLUMNS = ["#", "what to try", "change", "tried: verdict"]
#: The least height of the "What to try" list (its title row and a row of the table).
TRY_MIN_HEIGHT = 40
#: Narrower than this (px), the operators sit above the compile phases and the details above
#: the output code; wider, side by side.
SIDE_BY_SIDE_WIDTH = 760
#: The least heights (px) of the details and of the output code: less, the tab scrolls.
DETAILS_MIN_HEIGHT = 90
CODE_MIN_HEIGHT = 120
TRY_HINT = "Select a configuration change and press Try it (or: compile-studio-cli advise RUN --try N)"
PERFETTO_NOTE = "open it in ui.perfetto.dev (or chrome://tracing)"


def _plain_label(text: str = "", path: bool = False) -> QLabel:
    """A label of plain text that wraps; ``path``: one that holds a long path, which never
    widens the tab (what runs past the edge is in its tooltip, see :func:`_set_path_text`)."""
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if path:
        label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    return label


def _set_path_text(label: QLabel, text: str, whole: str | None = None) -> None:
    """``text`` in ``label``; ``whole`` (the text with the full path) in its tooltip."""
    label.setText(text)
    label.setToolTip(whole if whole is not None else text)


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value * 1000:.1f} µs" if value < 1 else f"{value:.2f} ms"


def _trials_stamp(folder: Path | None) -> tuple[tuple[str, int], ...]:
    """Each trial folder beside the run with its trial.json's time: the view reads them again when it changes."""
    if folder is None:
        return ()
    out = []
    try:
        with os.scandir(folder / TRIALS_DIR) as entries:
            for entry in list(entries)[:200]:
                try:
                    out.append((entry.name, os.stat(Path(entry.path) / TRIAL_JSON, follow_symlinks=False).st_mtime_ns))
                except OSError:
                    out.append((entry.name, 0))
    except OSError:
        return ()
    return tuple(sorted(out))


class WhyView(QWidget):
    """Why each variant is faster or slower: the evidence of the run's diagnostics."""

    #: what a comparison started here is doing ("Trying 1. larger-batch: round 2/3 · …"); "" once it ended
    trial_status = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.run: RunResult | None = None
        self.folder: Path | None = None
        self.report = WhyReport(None, absent="no run shown yet")
        self._key: tuple[object, ...] | None = None
        self._code_files: list[CodeFile] = []

        head = self._make_head()
        self.evidence = self._make_evidence()
        self.texts = self._make_texts()
        for split in (self.evidence, self.texts):
            split.setChildrenCollapsible(False)
            split.setSizes([600, 500])
        try_box = self._make_try_box()
        #: runs the comparison of a suggestion ("Try it")
        self.trials = TrialController(self)
        self.trials.note.connect(self.try_note.setText)
        self.trials.status.connect(self.trial_status)
        self.trials.ended.connect(self._trial_ended)
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.stop_trial)
        self.what_to_try = WhatToTry()
        body = QSplitter(Qt.Orientation.Vertical)
        body.setChildrenCollapsible(False)
        # what to try (and Try it) first: seen as the tab opens, before the evidence it comes from
        body.addWidget(try_box)
        body.addWidget(self.evidence)
        body.addWidget(self.texts)
        for pane, stretch in enumerate((2, 2, 1)):
            body.setStretchFactor(pane, stretch)
        self.trace_label = _plain_label(path=True)
        # below the variant row everything scrolls: in a low or narrow pane each part keeps the
        # size it is read at (the operator table its rows, the chart its axes) instead of being squashed
        self._content = content = QWidget()
        self._content_layout = content_layout = QVBoxLayout(content)
        content_layout.setContentsMargins(0, 0, 4, 0)
        content_layout.addWidget(self.sentence)
        content_layout.addWidget(body, 1)
        content_layout.addWidget(self.trace_label)
        self.scroll_area = QScrollArea()
        self.scroll_area.setObjectName("whyScroll")
        self.scroll_area.setWidget(content)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QScrollArea.Shape.NoFrame)
        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(self.scroll_area, 1)
        self._show_absent("no run shown yet")

    def _make_head(self) -> QHBoxLayout:
        """The variant row: the variant chosen, the run folder's button; the sentence under it."""
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
        head.addStretch(1)
        head.addWidget(self.open_folder_button)
        return head

    def _make_evidence(self) -> QSplitter:
        """The operators of the profiled calls beside the compile phases (see resizeEvent)."""
        self.ops = OpsTable()
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
        phase_layout.addWidget(self.phases)
        phase_layout.addWidget(self.phases_note)
        phase_layout.addStretch(1)
        evidence = QSplitter(Qt.Orientation.Horizontal)
        evidence.addWidget(ops_box)
        evidence.addWidget(phase_box)
        return evidence

    def _make_texts(self) -> QSplitter:
        """The details (graph breaks, recompiles) beside Inductor's output code (see resizeEvent)."""
        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        self.details.setObjectName("whyDetails")
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.details.setFont(mono)
        self.details.setMinimumHeight(DETAILS_MIN_HEIGHT)
        self.code_box = QComboBox()
        self.code_box.currentIndexChanged.connect(self._show_code)
        self.code = QPlainTextEdit()
        self.code.setReadOnly(True)
        self.code.setFont(mono)
        self.code.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.code.setMinimumHeight(CODE_MIN_HEIGHT)
        self.code_path = _plain_label(path=True)
        code_head = QHBoxLayout()
        code_head.addWidget(QLabel("Output code"))
        code_head.addWidget(self.code_box, 1)
        code_widget = QWidget()
        code_layout = QVBoxLayout(code_widget)
        code_layout.setContentsMargins(0, 0, 0, 0)
        code_layout.addLayout(code_head)
        code_layout.addWidget(self.code_path)
        code_layout.addWidget(self.code, 1)
        texts = QSplitter(Qt.Orientation.Horizontal)
        texts.addWidget(self.details)
        texts.addWidget(code_widget)
        return texts

    def _make_try_box(self) -> QWidget:
        """"What to try": the run's suggestions with their tried verdicts, and Try it."""
        self.try_table = QTableWidget(0, len(TRY_COLUMNS))
        self.try_table.setObjectName("whatToTry")
        self.try_table.setHorizontalHeaderLabels(TRY_COLUMNS)
        try_header = self.try_table.horizontalHeader()
        try_header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # what to try and its result share the width, each wrapped in its cell: neither is cut off
        try_header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        try_header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.try_table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        try_header.sectionResized.connect(lambda *_: self.try_table.resizeRowsToContents())
        self.try_table.verticalHeader().hide()
        self.try_table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.try_table.setWordWrap(True)
        self.try_table.setSizeAdjustPolicy(QTableWidget.SizeAdjustPolicy.AdjustToContents)
        self.try_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.try_table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.try_table.itemSelectionChanged.connect(self._update_try_button)
        self.try_note = _plain_label()
        self.try_button = QPushButton("Try it")
        self.try_button.setObjectName("tryIt")
        self.try_button.setToolTip(
            f"Measure the selected configuration change: the run's configuration (A) against it (B), "
            f"A then B for {MIN_TRIAL_ROUNDS} rounds, kept beside the run (advise RUN --try N)"
        )
        self.try_button.clicked.connect(self._try_clicked)
        self.try_button.setEnabled(False)
        try_box = QWidget()
        try_layout = QVBoxLayout(try_box)
        try_layout.setContentsMargins(0, 0, 0, 0)
        try_title = QLabel("What to try")
        try_title.setStyleSheet("font-weight: bold;")
        try_head = QHBoxLayout()
        try_head.addWidget(try_title, 1)
        try_head.addWidget(self.try_button)
        try_layout.addLayout(try_head)
        try_layout.addWidget(self.try_table, 1)
        try_layout.addWidget(self.try_note)
        # the list folds down to its title row: the tab asks no more room than before it had one
        try_box.setMinimumHeight(TRY_MIN_HEIGHT)
        return try_box

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        wide = event.size().width() >= SIDE_BY_SIDE_WIDTH
        orientation = Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical
        for split in (self.evidence, self.texts):
            if split.orientation() != orientation:
                split.setOrientation(orientation)

    def needed_height(self) -> int:
        """The height (px) at which the tab shows every part at its least size, without scrolling."""
        layout = self.layout()
        margins = layout.contentsMargins().top() + layout.contentsMargins().bottom() + layout.spacing() if layout else 0
        width = self.scroll_area.viewport().width() or self.width()
        need = self._content.minimumSizeHint().height()
        if self._content_layout.hasHeightForWidth():
            need = max(need, self._content_layout.minimumHeightForWidth(width))
        return self.variant_box.sizeHint().height() + need + margins

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
        key = (run.run_id if run is not None else None, str(folder), stamp, _trials_stamp(folder))
        if key == self._key:
            return
        self._key = key
        self.run, self.folder = run, folder
        if run is None:
            self.report = WhyReport(None, absent="no run shown (or a run is in progress)")
        else:
            self.report = load_why(folder)
        self._fill_try()
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
        _set_path_text(self.code_path, "")
        _set_path_text(self.trace_label, "")
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
        if v.trace and self.folder:
            # by its name in the run folder (Open run folder shows it); the full path in the tooltip
            _set_path_text(
                self.trace_label,
                f"Trace: {v.trace} in the run folder — {PERFETTO_NOTE}",
                f"Trace: {self.folder / v.trace} — {PERFETTO_NOTE}",
            )
        else:
            _set_path_text(self.trace_label, "Trace: none kept for this variant")
        notes = []
        for n, w in self.report.variants.items():
            share = w.compile.named_share() if w.compile is not None else None
            if share is not None:
                notes.append(f"{n}: named phases cover {share * 100:.0f} % of the first call")
        self.phases_note.setText("; ".join(notes))

    def _fill_ops(self, v: VariantWhy) -> None:
        p = v.profile
        rows = (p.kernels or p.ops) if p is not None else []
        self.ops.set_rows([
            [
                r.name,
                _ms(r.self_ms_per_call),
                "–" if r.calls_per_call is None else f"{r.calls_per_call:g}",
                "–" if r.share is None else f"{r.share * 100:.1f} %",
            ]
            for r in rows
        ])
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
            _set_path_text(self.code_path, "No output code: eager and non-Inductor backends generate none")

    def _show_code(self, index: int) -> None:
        files = self._code_files
        if not 0 <= index < len(files):
            return
        c = files[index]
        _set_path_text(
            self.code_path, f"Written by Inductor as {Path(str(c.path)).name}", f"Written by Inductor to {c.path}"
        )
        if c.file is None or self.folder is None:
            self.code.setPlainText("(this graph's code was not kept in the run folder)")
            return
        try:
            self.code.setPlainText(read_text_file(self.folder, c.file))
        except RunDamaged as exc:
            self.code.setPlainText(f"(cannot be shown: {exc})")

    def _fill_try(self) -> None:
        """The run's ranked suggestions, each with the verdict of its latest trial where it was tried."""
        run = self.run
        self.what_to_try = what_to_try(run, self.folder) if run is not None else WhatToTry()
        w = self.what_to_try
        self.try_table.setRowCount(len(w.suggestions))
        for i, s in enumerate(w.suggestions):
            if s.delta:
                change = f"config: {s.delta_text()}"
            elif s.code is not None:
                change = f"code at {s.code.place or 'your code'} (shown, not tried)"
            else:
                change = "shown, not tried"
            tried = w.tried(s)
            verdict = verdict_summary(tried.suggestion) if tried is not None else (
                "not tried yet" if s.delta else "–"
            )
            tip = [f"evidence: {s.evidence}", f"source: {s.source_title} — {s.source_url}"]
            if s.code is not None and s.code.after:
                tip.append("try instead:\n" + s.code.after)
            cells = [str(i + 1), s.title + (f" [{s.variant}]" if s.variant else ""), change, verdict]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip("\n".join(tip))
                if j == 3 and tried is not None:
                    lines = [f"{tried.suggestion.verdict}: {tried.suggestion.verdict_reason}"]
                    lines += round_lines(tried.suggestion)
                    lines.append(f"trial: {tried.folder}")
                    item.setToolTip("\n".join(lines))
                self.try_table.setItem(i, j, item)
        notes = []
        if run is not None and not w.suggestions:
            notes.append("Nothing to suggest: no rule's evidence is in this run.")
        elif w.suggestions:
            notes.append(TRY_HINT + " (the run's configuration against the change, in alternating rounds).")
        for t in w.damaged():
            notes.append(f"Trial {t.folder.name} cannot be read: {t.problem}")
        if self.trials.trial_thread is None:
            self.try_note.setText("\n".join(notes))
        self.try_table.resizeRowsToContents()
        self._update_try_button()

    # -- try it ---------------------------------------------------------------------------------
    def _selected_suggestion(self) -> int | None:
        """The 1-based number of the selected suggestion (None when no row is selected)."""
        rows = self.try_table.selectionModel().selectedRows() if self.try_table.selectionModel() else []
        if not rows:
            return None
        k = rows[0].row() + 1
        return k if 1 <= k <= len(self.what_to_try.suggestions) else None

    def _update_try_button(self) -> None:
        if self.trials.trial_thread is not None:
            self.try_button.setText("Stop trying")
            self.try_button.setEnabled(not self.trials.trial_thread.stop_requested)
            return
        self.try_button.setText("Try it")
        k = self._selected_suggestion()
        ok = (
            k is not None and self.run is not None and self.folder is not None
            and not_tried_reason(self.what_to_try.suggestions[k - 1]) is None
        )
        self.try_button.setEnabled(ok)

    def _try_clicked(self) -> None:
        if self.trials.trial_thread is not None:
            self.trials.trial_thread.request_stop()
            self._update_try_button()
            return
        self.try_suggestion(self._selected_suggestion())

    def try_suggestion(self, k: int | None) -> bool:
        """Start the comparison of suggestion ``k`` (1-based) off the GUI thread; whether it started."""
        run, folder = self.run, self.folder
        if k is None or run is None or folder is None or self.trials.trial_thread is not None:
            return False
        s = self.what_to_try.suggestions[k - 1]
        reason = not_tried_reason(s)
        if reason is not None:
            self.try_note.setText(reason)
            return False
        started = self.trials.start(run, folder, k, s)
        self._update_try_button()
        return started

    def _trial_ended(self) -> None:
        self._key = None
        self.show_folder(self.run, self.folder)
        self._update_try_button()

    def stop_trial(self, wait_ms: int | None = None, message: str | None = None) -> None:
        """Stop a comparison running from this view and wait for it (up to ``wait_ms``; the rounds
        measured are kept). ``message``: why, in trial.json (default: stopped by the user)."""
        self.trials.stop(wait_ms, message)

    def open_folder(self) -> None:
        """Open the run folder (trace, output code, why.json) in the desktop's file manager."""
        if self.folder is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.folder)))
