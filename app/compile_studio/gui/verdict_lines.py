"""The answer at the top of the window: one sentence per compiled variant, as the CLI prints it.

Above the plots and the summary table, across the window's width (the verdict is the
table's tenth column, off-screen in a small window).

:class:`VerdictLines` reads the rows the :class:`~compile_studio.gui.summary_table.SummaryTableModel`
was given (the same summary, the same "why"), so the sentence and the table never disagree;
the table keeps the details.

The pane has one height, whatever it shows: :data:`ROWS` sentences of one line each, a
note while there is no answer. A sentence wider than the window ends in "…": the whole
sentence is its tooltip, and *Full text* shows every sentence whole, wrapped, in a popup
over the window (which moves nothing). More sentences than :data:`ROWS` scroll. So a run
that starts or ends, or runs ticked in the history, never move the panes below.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics, QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..results.report.formatting import is_judged, medians_note, verdict_line
from .summary_table import SummaryTableModel, TableRow

_MARGINS = (6, 3, 6, 3)
_SPACING = 2
#: the sentences seen at once; the pane's height is theirs, with or without an answer
ROWS = 3
#: shown while there is no answer
EMPTY_NOTE = "The answer, one sentence per compiled variant, appears here when a run is done or opened."
#: a verdict that cannot tell (or a failure) is tinted like its cell in the table
_TINTS = {
    "faster": "#E6F4EA",
    "slower": "#FDECEA",
    "cannot tell": "#FFF8DC",
    "failed": "#FDECEA",
}


def verdict_texts(rows: list[TableRow], show_run: bool = False) -> list[tuple[TableRow, str]]:
    """The sentence of each row that has one: judged variants, then failed or stopped ones.

    ``show_run``: each sentence starts with its run's name (several runs are shown).
    """
    out: list[tuple[TableRow, str]] = []
    eager = {tr.run_name: tr.row for tr in rows if tr.row.name == "eager"}
    for tr in rows:
        row = tr.row
        if row.error and row.status in ("failed", "stopped"):
            text = f"{row.name} {row.status}: {row.error}"
        elif is_judged(row) and not row.error:
            text = verdict_line(row, tr.why)
            note = medians_note(eager.get(tr.run_name), row)
            if note:
                text += f" ({note})"  # as the CLI says it (results.report.formatting.verdict_lines)
        else:
            continue
        out.append((tr, f"{tr.run_name} · {text}" if show_run else text))
    return out


def _rich(head: str, rest: str) -> str:
    # sentences quote run labels and error messages: escaped, the variant's name in bold
    return f"<b>{escape(head)}</b>{escape(rest)}"


class SentenceLabel(QLabel):
    """One sentence on one line: the variant's name in bold, the rest cut with "…" where
    the line is too short (the whole sentence is the tooltip)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(False)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setContentsMargins(3, 0, 3, 0)
        self._head = ""
        self._rest = ""
        self.sentence = ""
        #: whether the line shows less than the whole sentence
        self.elided = False

    def set_sentence(self, text: str) -> None:
        head, sep, rest = text.partition(": ")
        self.sentence = text
        self._head, self._rest = head + sep, rest
        self.setToolTip(f"<p>{escape(text)}</p>")  # rich text: the tooltip wraps
        self._render()

    def _render(self) -> None:
        width = self.contentsRect().width()
        bold = QFont(self.font())
        bold.setBold(True)
        head_width = QFontMetrics(bold).horizontalAdvance(self._head)
        if width <= 0:
            head, rest = self._head, self._rest
        elif head_width >= width:
            head, rest = QFontMetrics(bold).elidedText(self._head, Qt.TextElideMode.ElideRight, width), ""
        else:
            head = self._head
            rest = self.fontMetrics().elidedText(self._rest, Qt.TextElideMode.ElideRight, width - head_width)
        self.elided = (head, rest) != (self._head, self._rest)
        self.setText(_rich(head, rest))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        """Cut anew at the new width."""
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._render()


class FullTextPopup(QFrame):
    """Every sentence whole, wrapped and selectable, over the window (it moves nothing)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, Qt.WindowType.Popup)
        self.setObjectName("verdictFullText")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.addWidget(self.label)

    def show_sentences(self, texts: list[str], at: QPoint, width: int) -> None:
        paragraphs = []
        for text in texts:
            head, sep, rest = text.partition(": ")
            paragraphs.append(f"<p style='margin: 0 0 4px 0'>{_rich(head + sep, rest)}</p>")
        self.label.setText("".join(paragraphs))
        self.setFixedWidth(max(200, width))
        inner = self.width() - 16
        self.setFixedHeight(self.label.heightForWidth(inner) + 14)
        self.move(at)
        self.show()

    def text(self) -> str:
        """The sentences shown (plain text, one per line)."""
        return self.label.text()


class VerdictLines(QFrame):
    """One line per sentence (see :func:`verdict_texts`), in a pane of one height.

    Its height is :data:`ROWS` lines whatever it shows (a note while there is no answer):
    nothing below it moves when a run starts or ends or runs are ticked. A long sentence
    ends in "…" (its tooltip and *Full text* have it whole); more than :data:`ROWS` scroll.
    """

    #: the sentences changed
    changed = Signal()

    def __init__(self, model: SummaryTableModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("verdictLines")
        self._model = model
        self._labels: list[SentenceLabel] = []
        self._keys: list[tuple[str, str]] = []
        self._texts: list[str] = []
        bold = QFont(self.font())
        bold.setBold(True)
        #: the height of one sentence's line
        self.row_height = QFontMetrics(bold).lineSpacing() + 2

        self._rows = QWidget()
        self._rows_layout = QVBoxLayout(self._rows)
        self._rows_layout.setContentsMargins(0, 0, 0, 0)
        self._rows_layout.setSpacing(_SPACING)
        self.empty_note = QLabel(EMPTY_NOTE)
        self.empty_note.setObjectName("verdictEmpty")
        self.empty_note.setStyleSheet("color: #777;")
        self.empty_note.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.empty_note.setFixedHeight(self.row_height)
        self._rows_layout.addWidget(self.empty_note)
        self._rows_layout.addStretch(1)
        self.sentences_area = QScrollArea()
        self.sentences_area.setWidget(self._rows)
        self.sentences_area.setWidgetResizable(True)
        self.sentences_area.setFrameShape(QFrame.Shape.NoFrame)
        self.sentences_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.sentences_area.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.sentences_area.verticalScrollBar().setSingleStep(self.row_height + _SPACING)

        self.full_button = QToolButton()
        self.full_button.setText("Full text")
        self.full_button.setToolTip("Every sentence whole, wrapped (a sentence's tooltip has it too)")
        self.full_button.setAutoRaise(True)
        self.full_button.clicked.connect(self.show_full_text)
        self.popup = FullTextPopup(self)

        layout = QHBoxLayout(self)
        layout.setContentsMargins(*_MARGINS)
        layout.setSpacing(4)
        layout.addWidget(self.sentences_area, 1)
        layout.addWidget(self.full_button, 0, Qt.AlignmentFlag.AlignTop)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self.pane_height())
        model.modelReset.connect(self.refresh)
        self.refresh()

    def pane_height(self) -> int:
        """The pane's one height: :data:`ROWS` lines and the margins."""
        return ROWS * self.row_height + (ROWS - 1) * _SPACING + _MARGINS[1] + _MARGINS[3]

    def refresh(self) -> None:
        """The sentences of the rows the table shows now."""
        show_run = "run" in self._model.headers()
        texts = verdict_texts(self._model.rows(), show_run)
        while len(self._labels) < len(texts):
            label = SentenceLabel()
            label.setFixedHeight(self.row_height)
            self._rows_layout.insertWidget(len(self._labels) + 1, label)
            self._labels.append(label)
        while len(self._labels) > len(texts):
            label = self._labels.pop()
            self._rows_layout.removeWidget(label)
            label.deleteLater()
        old = self._texts
        self._texts = [text for _, text in texts]
        self._keys = []
        for label, (tr, text) in zip(self._labels, texts):
            label.set_sentence(text)
            kind = "failed" if tr.row.status == "failed" else tr.row.verdict
            tint = _TINTS.get(kind)
            label.setStyleSheet("" if tint is None else f"QLabel {{ background: {tint}; }}")
            self._keys.append((tr.run_name, tr.row.name))
        self.empty_note.setVisible(not texts)
        self.full_button.setEnabled(bool(texts))
        if self.popup.isVisible():
            self.popup.hide()
        if old != self._texts:
            self.changed.emit()

    def texts(self) -> list[str]:
        """The sentences, top to bottom (plain text, whole)."""
        return list(self._texts)

    def label_for(self, variant: str, run_name: str | None = None) -> SentenceLabel | None:
        """The label of ``variant``'s sentence (of run ``run_name`` when given); None without one."""
        for (name, v), label in zip(self._keys, self._labels):
            if v == variant and (run_name is None or name == run_name):
                return label
        return None

    def show_full_text(self) -> FullTextPopup:
        """Every sentence whole in a popup just below the pane's top edge, as wide as the pane."""
        self.popup.show_sentences(self._texts, self.mapToGlobal(QPoint(0, 0)), self.width())
        return self.popup
