"""The log panel: the worker's stderr (compiler logs) and the window's own notes."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import QTimer
from PySide6.QtGui import QFontDatabase, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QWidget

MAX_LINES = 5000


class LogPanel(QPlainTextEdit):
    """A read-only, bounded log; lines are appended in batches (≤ 10 per second).

    :meth:`append_line` may be called at any rate: lines are buffered and
    painted by a timer, so a flood of compiler output cannot stall the window.
    """

    def __init__(self, parent: QWidget | None = None, max_lines: int = MAX_LINES):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setMaximumBlockCount(max_lines)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self._pending: list[str] = []
        self._timer = QTimer(self)
        self._timer.setInterval(100)
        self._timer.timeout.connect(self.flush)
        self._timer.start()

    def append_line(self, line: str) -> None:
        """Queue one line (shown within 100 ms)."""
        self._pending.append(line)

    def note(self, text: str) -> None:
        """A line from the window itself, time-stamped."""
        self.append_line(f"[{datetime.now():%H:%M:%S}] {text}")

    def flush(self) -> None:
        """Show every queued line now."""
        if not self._pending:
            return
        lines, self._pending = self._pending[-self.maximumBlockCount():], []
        at_end = self.verticalScrollBar().value() >= self.verticalScrollBar().maximum() - 2
        self.appendPlainText("\n".join(lines))
        if at_end:
            self.moveCursor(QTextCursor.MoveOperation.End)
            self.ensureCursorVisible()

    def text(self) -> str:
        """Everything shown and queued, as plain text."""
        self.flush()
        return self.toPlainText()
