"""The Help menu (README, keyboard shortcuts, About) and shortcuts that work anywhere in the window.

The shortcuts dialog lists the window's own actions: every :class:`QAction` of the window
with a shortcut is listed, with its menu, so the list is the one that defines them.
:class:`WindowShortcutGuard` keeps a form field from taking a window shortcut for itself
(a line edit reads Ctrl+E as "end of line" on Linux): while the action is enabled, the
window's shortcut wins.

No torch here: the torch version is the one the worker reported (``hello``), if any.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from .. import __version__
from ..core.app_info import APPLICATION
from ..core.resources_path import ResourceMissing, resources_dir
from .paths import data_dir, runs_dir

#: the licence the application ships under (pyproject.toml)
LICENCE = "MIT"


@dataclass(frozen=True)
class Shortcut:
    """One keyboard shortcut of the window: its keys, what it does and where it is found."""

    keys: str
    text: str
    menu: str
    #: where it works: "window" (anywhere in it) or the widget it belongs to
    scope: str = "window"


def _plain(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&")


def _menu_of(window: QMainWindow) -> dict[int, tuple[str, int]]:
    """Each action's id → the menu (path) it appears in and its place in the menu bar's order."""
    where: dict[int, tuple[str, int]] = {}

    def walk(menu: QMenu, path: str) -> None:
        for act in menu.actions():
            sub = act.menu()
            if isinstance(sub, QMenu):
                walk(sub, f"{path} → {_plain(sub.title())}")
            else:
                where.setdefault(id(act), (path, len(where)))

    for top in window.menuBar().actions():
        sub = top.menu()
        if isinstance(sub, QMenu):
            walk(sub, _plain(sub.title()))
    return where


def window_shortcuts(window: QMainWindow) -> list[Shortcut]:
    """Every shortcut of ``window``'s actions in menu order, then those of its panels' own actions
    (such as the summary table's Copy, whose action names where it works: ``shortcut_scope``)."""
    menus = _menu_of(window)
    seen: set[int] = set()
    out: list[tuple[bool, int, int, Shortcut]] = []
    window_wide = (Qt.ShortcutContext.WindowShortcut, Qt.ShortcutContext.ApplicationShortcut)
    for act in [*window.actions(), *window.findChildren(QAction)]:
        if id(act) in seen or act.shortcut().isEmpty():
            continue
        seen.add(id(act))
        keys = ", ".join(
            s.toString(QKeySequence.SequenceFormat.NativeText) for s in act.shortcuts() if not s.isEmpty()
        )
        scope = "window"
        if act.shortcutContext() not in window_wide:
            scope = str(act.property("shortcut_scope") or "its panel")
        menu, place = menus.get(id(act), ("", len(menus)))
        out.append((scope != "window", place, len(out), Shortcut(keys, _plain(act.text()), menu, scope)))
    return [entry[-1] for entry in sorted(out, key=lambda e: e[:3])]


def _window_actions(window: QMainWindow) -> list[QAction]:
    window_wide = (Qt.ShortcutContext.WindowShortcut, Qt.ShortcutContext.ApplicationShortcut)
    return [
        a
        for a in dict.fromkeys([*window.actions(), *window.findChildren(QAction)])
        if not a.shortcut().isEmpty() and a.shortcutContext() in window_wide
    ]


class WindowShortcutGuard(QObject):
    """Lets ``window``'s shortcuts through while a form field has the focus.

    Qt asks the focused widget first (a "shortcut override"); a line edit or spin box
    claims keys such as Ctrl+E (end of line) or Ctrl+R, and the window's action never
    fires. For a key that is the shortcut of an enabled window action, the claim is
    refused, so the action runs. It watches the widget of ``window`` that has the focus
    (not its dialogs or menus, which are windows of their own).
    """

    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self._window = window
        self._watched: QWidget | None = None
        app = QApplication.instance()
        if isinstance(app, QApplication):
            # the focused widget is the one asked first: watch it alone, not every event of the app
            app.focusChanged.connect(self._focus_changed)
            self._focus_changed(None, app.focusWidget())

    def _focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        if self._watched is not None:
            try:
                self._watched.removeEventFilter(self)
            except RuntimeError:  # already deleted
                pass
            self._watched = None
        if isinstance(new, QWidget) and new is not self._window and new.window() is self._window:
            new.installEventFilter(self)
            self._watched = new

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if event.type() != QEvent.Type.ShortcutOverride or not isinstance(event, QKeyEvent):
            return False
        if watched is self._window:
            return False
        pressed = QKeySequence(event.keyCombination())
        for act in _window_actions(self._window):
            if act.isEnabled() and any(
                s.matches(pressed) == QKeySequence.SequenceMatch.ExactMatch for s in act.shortcuts()
            ):
                event.ignore()  # not the field's: the shortcut map runs the action
                return True
        return False


class ShortcutsDialog(QDialog):
    """Every keyboard shortcut of the window, as its actions define them."""

    def __init__(self, shortcuts: list[Shortcut], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.table = QTableWidget(len(shortcuts), 3, self)
        self.table.setHorizontalHeaderLabels(["Keys", "Action", "Menu"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for r, s in enumerate(shortcuts):
            where = s.menu if s.scope == "window" else f"in {s.scope} only"
            for c, text in enumerate((s.keys, s.text, where)):
                self.table.setItem(r, c, QTableWidgetItem(text))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        note = QLabel("Window shortcuts work wherever the focus is in the main window, form fields included.")
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(note)
        layout.addWidget(buttons)
        self.resize(520, 420)

    def keys(self) -> list[str]:
        """The keys column, top to bottom."""
        items = (self.table.item(r, 0) for r in range(self.table.rowCount()))
        return [item.text() if item is not None else "" for item in items]


def readme_path() -> Path | None:
    """The README shipped with the application (resources) or beside the source; None if neither."""
    candidates: list[Path] = []
    try:
        res = resources_dir()
        candidates += [res / "README.md", res.parent / "README.md"]
    except ResourceMissing:
        pass
    candidates.append(Path(__file__).resolve().parents[3] / "README.md")
    return next((p for p in candidates if p.is_file()), None)


def docs_url() -> str | None:
    """The online documentation named in the installed package's metadata, if any."""
    try:
        urls = metadata.metadata("compile-studio").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    found = {}
    for entry in urls:
        name, _, url = str(entry).partition(",")
        found[name.strip().lower()] = url.strip()
    for name in ("documentation", "docs", "homepage", "source", "repository"):
        if found.get(name):
            return found[name]
    return None


def _version(dist: str, module: Any = None) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return str(getattr(module, "__version__", "?"))


def about_text(hello_environment: dict[str, Any] | None, settings_path: Path | None) -> str:
    """The About box's text (plain): versions, folders and the licence."""
    import pyqtgraph
    import PySide6
    from PySide6.QtCore import qVersion

    torch = (hello_environment or {}).get("torch")
    lines = [
        f"{APPLICATION} {__version__}",
        "Does torch.compile make this model faster on this machine?",
        "",
        f"Python {platform.python_version()} ({sys.executable})",
        f"Qt {qVersion()} · PySide6 {getattr(PySide6, '__version__', '?')} · "
        f"pyqtgraph {_version('pyqtgraph', pyqtgraph)}",
        f"torch {torch} (as the worker reported)" if torch else "torch: not known yet (no worker has answered)",
        "",
        f"Data folder: {data_dir()}",
        f"Runs: {runs_dir()}",
        f"Settings: {settings_path if settings_path is not None else '(Qt default)'}",
        "",
        f"Licence: {LICENCE}",
    ]
    return "\n".join(lines)


class AboutDialog(QDialog):
    """About Compile Studio: the text of :func:`about_text`, selectable."""

    def __init__(self, text: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"About {APPLICATION}")
        self.label = QLabel(text)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)
        layout.addWidget(buttons)


class HelpMenu(QObject):
    """The window's Help menu: README / online docs, Keyboard shortcuts, About."""

    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self._window = window
        self.menu = window.menuBar().addMenu("&Help")
        self.docs_action = QAction("README and documentation", window)
        self.docs_action.triggered.connect(lambda *_: self.open_docs())
        self.shortcuts_action = QAction("Keyboard shortcuts", window)
        self.shortcuts_action.triggered.connect(lambda *_: self.show_shortcuts())
        self.about_action = QAction(f"About {APPLICATION}", window)
        self.about_action.setMenuRole(QAction.MenuRole.AboutRole)
        self.about_action.triggered.connect(lambda *_: self.show_about())
        for act in (self.docs_action, self.shortcuts_action, self.about_action):
            self.menu.addAction(act)
        self.shortcuts_dialog: ShortcutsDialog | None = None
        self.about_dialog: AboutDialog | None = None

    def _say(self, message: str) -> None:
        self._window.statusBar().showMessage(message, 10000)

    def open_docs(self) -> bool:
        """Open the README (or the online docs); says so in the status bar when there is neither."""
        path = readme_path()
        if path is not None:
            if QDesktopServices.openUrl(QUrl.fromLocalFile(os.fspath(path))):
                self._say(f"Opened {path}")
                return True
            self._say(f"No program opens {path}: open it yourself")
            return False
        url = docs_url()
        if url and QDesktopServices.openUrl(QUrl(url)):
            self._say(f"Opened {url}")
            return True
        self._say("No README was installed with the application, and no online documentation is known")
        return False

    def show_shortcuts(self) -> ShortcutsDialog:
        """Show the shortcuts dialog (non-modal) and return it."""
        if self.shortcuts_dialog is not None:
            self.shortcuts_dialog.close()
            self.shortcuts_dialog.deleteLater()
        dialog = ShortcutsDialog(window_shortcuts(self._window), self._window)
        self.shortcuts_dialog = dialog
        dialog.show()
        return dialog

    def show_about(self) -> AboutDialog:
        """Show the About dialog (non-modal) and return it."""
        if self.about_dialog is not None:
            self.about_dialog.close()
            self.about_dialog.deleteLater()
        hello = getattr(getattr(self._window, "machine", None), "hello", None)
        settings = getattr(self._window, "settings", None)
        env = getattr(hello, "environment", None)
        path = getattr(settings, "path", None)
        dialog = AboutDialog(about_text(env if isinstance(env, dict) else None, path), self._window)
        self.about_dialog = dialog
        dialog.show()
        return dialog
