"""The run history's context menu and its delete confirmation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from PySide6.QtWidgets import QMenu, QMessageBox, QWidget

from .history_entry import HistoryEntry


class EntryActions(Protocol):
    """What the menu does to an entry of the history (the history panel does it)."""

    def show_entry(self, entry: HistoryEntry, alone: bool = False) -> None: ...
    def is_checked(self, entry: HistoryEntry) -> bool: ...
    def set_checked(self, entry: HistoryEntry | str, checked: bool) -> None: ...
    def load_config_of(self, entry: HistoryEntry) -> None: ...
    def open_folder_of(self, entry: HistoryEntry) -> bool: ...
    def export_entry(self, entry: HistoryEntry) -> None: ...
    def is_running(self, entry: HistoryEntry) -> bool: ...
    def delete_entry(self, entry: HistoryEntry) -> bool: ...


def history_menu(parent: QWidget, panel: EntryActions, entry: HistoryEntry) -> QMenu:
    """The history's context menu of ``entry`` (its actions are named as they read)."""
    menu = QMenu(parent)
    readable = entry.listed is not None

    def add(text: str, slot: Callable[[], object], enabled: bool = True, tip: str = "") -> None:
        act = menu.addAction(text)
        act.setEnabled(enabled)
        if tip:
            act.setToolTip(tip)
        act.triggered.connect(lambda *_: slot())

    add("Show", lambda: panel.show_entry(entry), readable)
    add("Show alone", lambda: panel.show_entry(entry, alone=True), readable)
    checked = panel.is_checked(entry)
    add(
        "Remove overlay" if checked else "Overlay",
        lambda: panel.set_checked(entry, not checked),
        readable,
    )
    menu.addSeparator()
    add(
        "Load its configuration",
        lambda: panel.load_config_of(entry),
        readable and entry.listed is not None and entry.listed.config is not None,
    )
    add("Open folder", lambda: panel.open_folder_of(entry))
    add("Export…", lambda: panel.export_entry(entry), readable)
    menu.addSeparator()
    running = panel.is_running(entry)
    add(
        "Remove from list" if entry.external else "Delete…", lambda: panel.delete_entry(entry),
        not running, "the run is still going: stop it first" if running else "",
    )
    menu.setToolTipsVisible(True)
    return menu


def confirm_with_dialog(parent: QWidget, text: str) -> bool:
    answer = QMessageBox.question(
        parent,
        "Delete run",
        text,
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
        QMessageBox.StandardButton.No,
    )
    return answer == QMessageBox.StandardButton.Yes
