"""Asking before code named by a received file runs: the dialog, and what was agreed this session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ..core.config import BenchmarkConfig
from ..jobs.trust import Agreement, CodeChanged, CodeRef, agree, code_of_configs, describe
from ..results.records.run_result import plain_text

#: What the window says when the user did not agree to run the code.
NOT_AGREED = "Not run: the code named by a received file was not agreed to (nothing was started)"
#: The fields of a configuration that name code the worker imports.
CODE_FIELDS = ("factory", "backend_modules")


class CodeTrustDialog(QDialog):
    """Names the code a configuration from a received file would run, with each file's
    sha256, and asks; only "Run this code" is a yes (closing or Esc is a no).

    When the window asks (its rule for a form edited after loading):

    - A run whose configuration came from a file the user did not write in
      this session is asked about: the window's Resume of a sweep it did not
      start, and Run after "Load its configuration" of a run in the history.
    - A configuration loaded into the form stays the file's until the user
      edits a code field. Each code field (the factory, the backend modules)
      is judged on its own: one the user changed by hand names what the user
      typed and is not asked about; one still as the file had it is, whatever
      else was edited (a new batch size does not make the file's factory the
      user's).
    - A configuration typed into the form, a preset, the configuration of a
      run or a sweep started in this session is the user's own and is not
      asked about; nor is the configuration the window saved in its own
      settings, unless it still held code from a file that was not agreed to
      when the window closed.
    - A yes holds for the rest of the session for the same code (same spec,
      same file, same sha256): a changed file is asked about again.
    """

    def __init__(self, refs: list[CodeRef], source: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Run code from a received file?")
        self.setModal(True)
        self.refs = list(refs)
        intro = QLabel(
            f"{plain_text(source, 300)} names code that would run in the worker as you, "
            "with your files and your network:"
        )
        intro.setTextFormat(Qt.TextFormat.PlainText)
        intro.setWordWrap(True)
        self.listing = QPlainTextEdit()
        self.listing.setReadOnly(True)
        self.listing.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)  # sha256 in view
        self.listing.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.listing.setPlainText(describe(self.refs))
        advice = QLabel("Run it only if you trust this code and whoever sent it.")
        advice.setWordWrap(True)
        buttons = QDialogButtonBox()
        self.run_button: QPushButton = buttons.addButton("Run this code", QDialogButtonBox.ButtonRole.AcceptRole)
        self.cancel_button: QPushButton = buttons.addButton("Do not run", QDialogButtonBox.ButtonRole.RejectRole)
        self.run_button.setAutoDefault(False)
        self.cancel_button.setDefault(True)
        self.cancel_button.setFocus()
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.listing, 1)
        layout.addWidget(advice)
        layout.addWidget(buttons)
        self.resize(760, 300)

    def text(self) -> str:
        """The code named, as the dialog lists it."""
        return self.listing.toPlainText()


def ask_to_run_code(parent: QWidget | None, refs: list[CodeRef], source: str) -> bool:
    """Show :class:`CodeTrustDialog`; whether the user chose to run the code."""
    dialog = CodeTrustDialog(refs, source, parent)
    try:
        return dialog.exec() == QDialog.DialogCode.Accepted
    finally:
        dialog.deleteLater()


def _signature(ref: CodeRef) -> tuple[str, str, str | None, str | None]:
    return ref.what, ref.spec, ref.path, ref.sha256


class CodeConsent:
    """The code the user agreed to run this session, and the question for code not agreed yet."""

    def __init__(self, parent: QWidget | None = None) -> None:
        self._agreed: set[tuple[str, str, str | None, str | None]] = set()
        #: why the last :meth:`agreed` gave no agreement though the code was agreed to ("" if none)
        self.problem = ""
        #: asks about ``refs`` named by ``source``; replaceable (the default shows the dialog)
        self.ask: Callable[[list[CodeRef], str], bool] = lambda refs, source: ask_to_run_code(parent, refs, source)

    def pending(self, refs: list[CodeRef]) -> list[CodeRef]:
        """The refs not agreed to yet."""
        return [r for r in refs if _signature(r) not in self._agreed]

    def agreed(self, refs: list[CodeRef], source: str) -> Agreement | None:
        """The agreement to run the code in ``refs`` (its agreed copies: the job runs those), or
        None: not agreed (:attr:`problem` says why when it was not the user's no).

        Code agreed already this session is not asked again; a file whose bytes changed since
        it was shown is a new question (its copy is not made, the next try asks again).
        """
        self.problem = ""
        todo = self.pending(refs)
        if todo and not self.ask(todo, source):
            return None
        try:
            agreement = agree(refs)
        except CodeChanged as exc:
            self._agreed.discard(_signature(exc.ref))
            self.problem = f"Not run: {exc}"
            return None
        except OSError as exc:
            self.problem = f"Not run: cannot keep a copy of the agreed code: {exc.strerror or exc}"
            return None
        self._agreed.update(_signature(r) for r in todo)
        return agreement


def code_fields(config: BenchmarkConfig) -> dict[str, Any]:
    """The values of the code fields of ``config`` (for telling a loaded one from an edited one)."""
    return {"factory": config.factory.strip(), "backend_modules": [m.strip() for m in config.backend_modules]}


def code_from_loaded(
    config: BenchmarkConfig, loaded: dict[str, Any] | None, more: list[BenchmarkConfig] | None = None
) -> list[CodeRef]:
    """The code ``config`` and ``more`` (the other configurations of its job: a sweep's points)
    name that is still as a loaded configuration had it (``loaded``: its :func:`code_fields`;
    None: the configuration is the user's own)."""
    if loaded is None:
        return []
    now = code_fields(config)
    edited = {name for name in CODE_FIELDS if now.get(name) != loaded.get(name)}
    return code_of_configs([config, *(more or [])], edited)


