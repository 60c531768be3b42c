"""The answer at the top of the window: one sentence per compiled variant, as the CLI prints it.

Above the plots and the summary table, across the window's width (the verdict is the
table's tenth column, off-screen in a small window).

:class:`VerdictLines` reads the rows the :class:`~compile_studio.gui.summary_table.SummaryTableModel`
was given (the same summary, the same "why"), so the sentence and the table never disagree;
the table keeps the details. Each sentence wraps and can be selected and copied.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from ..results.formatting import is_judged, verdict_line
from .summary_table import SummaryTableModel, TableRow

_MARGINS = (6, 3, 6, 3)
_SPACING = 2
#: the most of the window's height the sentences take (more is cut; the table has them all)
MAX_HEIGHT_SHARE = 0.4
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
    for tr in rows:
        row = tr.row
        if row.error and row.status in ("failed", "stopped"):
            text = f"{row.name} {row.status}: {row.error}"
        elif is_judged(row) and not row.error:
            text = verdict_line(row, tr.why)
        else:
            continue
        out.append((tr, f"{tr.run_name} · {text}" if show_run else text))
    return out


class VerdictLines(QWidget):
    """One label per sentence (see :func:`verdict_texts`), hidden while there is none.

    Its height is that of the sentences wrapped at its width (set at each resize), never
    more than :data:`MAX_HEIGHT_SHARE` of the window: each sentence is read whole, without
    scrolling, and the window's least height does not grow with the sentences.
    """

    #: the sentences changed
    changed = Signal()

    def __init__(self, model: SummaryTableModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("verdictLines")
        self._model = model
        self._labels: list[QLabel] = []
        self._keys: list[tuple[str, str]] = []
        self._texts: list[str] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(*_MARGINS)
        layout.setSpacing(_SPACING)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(0)
        model.modelReset.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        """The sentences of the rows the table shows now."""
        show_run = "run" in self._model.headers()
        texts = verdict_texts(self._model.rows(), show_run)
        layout = self.layout()
        assert layout is not None  # made in __init__
        while len(self._labels) < len(texts):
            label = QLabel()
            # sentences quote run labels and error messages: escaped, the variant's name in bold
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setWordWrap(True)
            label.setTextInteractionFlags(
                Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
            )
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
            layout.addWidget(label)
            self._labels.append(label)
        while len(self._labels) > len(texts):
            label = self._labels.pop()
            layout.removeWidget(label)
            label.deleteLater()
        old = self._texts
        self._texts = [text for _, text in texts]
        self._keys = []
        for label, (tr, text) in zip(self._labels, texts):
            head, sep, rest = text.partition(": ")
            label.setText(f"<b>{escape(head)}</b>{escape(sep)}{escape(rest)}")
            label.setToolTip(escape(text))
            kind = "failed" if tr.row.status == "failed" else tr.row.verdict
            tint = _TINTS.get(kind)
            label.setStyleSheet("" if tint is None else f"QLabel {{ background: {tint}; }}")
            self._keys.append((tr.run_name, tr.row.name))
        self.setVisible(bool(texts))
        self._fit(self.width())
        if old != self._texts:
            self.changed.emit()

    def texts(self) -> list[str]:
        """The sentences shown, top to bottom (plain text)."""
        return list(self._texts)

    def label_for(self, variant: str, run_name: str | None = None) -> QLabel | None:
        """The label of ``variant``'s sentence (of run ``run_name`` when given); None without one."""
        for (name, v), label in zip(self._keys, self._labels):
            if v == variant and (run_name is None or name == run_name):
                return label
        return None

    def needed_height(self, width: int) -> int:
        """The height the sentences take wrapped at ``width`` px (0 without sentences)."""
        if not self._labels:
            return 0
        inner = max(1, width - _MARGINS[0] - _MARGINS[2])
        return sum(self._label_height(label, inner) for label in self._labels) + (
            _SPACING * (len(self._labels) - 1) + _MARGINS[1] + _MARGINS[3]
        )

    @staticmethod
    def _label_height(label: QLabel, width: int) -> int:
        h = label.heightForWidth(width)
        return h if h > 0 else label.sizeHint().height()

    def _fit(self, width: int) -> None:
        if not self._labels or width <= 0:
            self.setFixedHeight(0)
            return
        inner = max(1, width - _MARGINS[0] - _MARGINS[2])
        for label in self._labels:
            label.setFixedHeight(self._label_height(label, inner))
        window = self.window()
        cap = int(window.height() * MAX_HEIGHT_SHARE) if window is not None and window is not self else 10_000
        self.setFixedHeight(min(self.needed_height(width), max(cap, 40)))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        """Wrapped anew at the new width: the height follows."""
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._fit(event.size().width())
