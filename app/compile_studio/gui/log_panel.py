"""The log panel: the worker's stderr (compiler logs) and the window's own notes.

Lines that are noise to a reader (the profiler's ``USDT … profiler_start``
probe lines, one per profiled call) are left out of the view but kept in
what :meth:`LogPanel.save` writes, so a saved log stays complete.
"""

from __future__ import annotations

import re
from collections import deque
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import QPoint, QTimer
from PySide6.QtGui import QFontDatabase, QTextCursor
from PySide6.QtWidgets import QFileDialog, QPlainTextEdit, QWidget

from ..results.storage.file_io import atomic_write_text

MAX_LINES = 5000

#: Lines shown in no view: the profiler's USDT probe lines (``… USDT … profiler_start``).
NOISE_PATTERNS = (re.compile(r"\bUSDT\b.*\bprofiler_(start|stop|step)\b", re.IGNORECASE),)


def is_noise(line: str) -> bool:
    """Whether ``line`` is one the log view leaves out (kept in a saved log)."""
    return any(p.search(line) for p in NOISE_PATTERNS)


class LogPanel(QPlainTextEdit):
    """A read-only, bounded log; lines are appended in batches (≤ 10 per second).

    :meth:`append_line` may be called at any rate: lines are buffered and
    painted by a timer, so a flood of compiler output cannot stall the window.
    Noise lines (:func:`is_noise`) are counted in :attr:`hidden_lines`, not shown;
    :meth:`save` writes every line, noise included.
    """

    def __init__(self, parent: QWidget | None = None, max_lines: int = MAX_LINES):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setMaximumBlockCount(max_lines)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self._pending: list[str] = []
        #: every line received, noise included (bounded like the view)
        self._all: deque[str] = deque(maxlen=max_lines)
        #: how many noise lines were left out of the view
        self.hidden_lines = 0
        self._timer = QTimer(self)
        self._timer.setInterval(100)
        self._timer.timeout.connect(self.flush)
        self._timer.start()

    def append_line(self, line: str) -> None:
        """Queue one line (shown within 100 ms, unless it is noise)."""
        self._all.append(line)
        if is_noise(line):
            self.hidden_lines += 1
            return
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

    def full_text(self) -> str:
        """Every line received (the last :data:`MAX_LINES`), noise included."""
        return "\n".join(self._all) + ("\n" if self._all else "")

    def save(self, path: Path) -> Path:
        """Write :meth:`full_text` to ``path`` (OSError when it cannot be written)."""
        atomic_write_text(Path(path), self.full_text())
        return Path(path)

    def contextMenuEvent(self, event) -> None:  # noqa: N802 - Qt API
        menu = self.createStandardContextMenu()
        menu.addSeparator()
        act = menu.addAction("Save log…")
        act.setToolTip("Every line, the profiler's probe lines included")
        act.triggered.connect(lambda: self._save_dialog(event.globalPos()))
        menu.exec(event.globalPos())
        menu.deleteLater()

    def _save_dialog(self, _: QPoint) -> None:
        path, _filter = QFileDialog.getSaveFileName(self, "Save log", "compile-studio.log", "Log (*.log *.txt)")
        if not path:
            return
        try:
            self.save(Path(path))
        except OSError as exc:
            self.note(f"error: cannot save the log to {path}: {exc.strerror or exc}")
