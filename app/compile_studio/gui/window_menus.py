"""The window's menus and actions: File, Run and View, then the Sweep, target and Help additions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QAction

from .coldstart_view import install_coldstart_view
from .export_menu import window_action
from .help_menu import HelpMenu, WindowShortcutGuard
from .sweep_dock import install_sweep_view
from .targets_dialog import install_target_chooser

if TYPE_CHECKING:
    from .main_window import MainWindow


def build_menus(window: MainWindow) -> None:
    file_menu = window.menuBar().addMenu("&File")
    run_menu = window.menuBar().addMenu("&Run")
    view_menu = window.menuBar().addMenu("&View")

    def action(text: str, slot, shortcut: str | None = None) -> QAction:
        return window_action(window, text, slot, shortcut)

    window.open_action = action("Open run…", window.history.open_dialog, "Ctrl+O")
    window.quit_action = action("Quit", window.close, "Ctrl+Q")
    file_menu.addAction(window.open_action)
    window.exports.add_to_menu(file_menu)
    file_menu.addSeparator()
    file_menu.addAction(window.quit_action)

    window.run_action = action("Run", window.start_run, "Ctrl+R")
    window.stop_action = action("Stop", window.stop_run, "Esc")
    run_menu.addAction(window.run_action)
    run_menu.addAction(window.stop_action)

    window.log_scale_action = QAction("Logarithmic latency axis", window, checkable=True)
    window.log_scale_action.toggled.connect(window.plots.set_log_scale)
    view_menu.addAction(window.log_scale_action)
    window.refresh_history_action = action("Refresh history", window.history.refresh)
    view_menu.addAction(window.refresh_history_action)
    window.sweep_view = install_sweep_view(window)
    # a sweep's points start their own workers: none is started ahead beside them
    window.live.standby.also_busy(window.sweep_view.is_running)
    window.sweep_view.running_changed.connect(window._sweep_running_changed)
    window.coldstart_view = install_coldstart_view(window)
    window.target_chooser = install_target_chooser(window)
    window.help_menu = HelpMenu(window)
    # every window shortcut works with the focus in a form field too
    window.shortcut_guard = WindowShortcutGuard(window)
