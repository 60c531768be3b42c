"""The window's File, Run and View menus and their actions (each job kind's part, the target chooser and Help add theirs)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow

from .export_menu import ExportActions, window_action
from .history_panel import HistoryPanel
from .plots import PlotPanel


class WindowMenus(QObject):
    """File (open, exports, quit), Run (run, stop) and View (log axis, refresh history) of ``window``.

    Each action's shortcut works anywhere in the window; ``run`` and ``stop`` are the
    window's Run and Stop.
    """

    def __init__(
        self,
        window: QMainWindow,
        history: HistoryPanel,
        exports: ExportActions,
        plots: PlotPanel,
        run: Callable[[], object],
        stop: Callable[[], object],
    ):
        super().__init__(window)
        file_menu = window.menuBar().addMenu("&File")
        run_menu = window.menuBar().addMenu("&Run")
        view_menu = window.menuBar().addMenu("&View")
        self.open_action = window_action(window, "Open run…", history.open_dialog, "Ctrl+O")
        self.quit_action = window_action(window, "Quit", window.close, "Ctrl+Q")
        file_menu.addAction(self.open_action)
        exports.add_to_menu(file_menu)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)

        self.run_action = window_action(window, "Run", run, "Ctrl+R")
        self.stop_action = window_action(window, "Stop", stop, "Esc")
        run_menu.addAction(self.run_action)
        run_menu.addAction(self.stop_action)

        self.log_scale_action = QAction("Logarithmic latency axis", window, checkable=True)
        self.log_scale_action.toggled.connect(plots.set_log_scale)
        view_menu.addAction(self.log_scale_action)
        self.refresh_history_action = window_action(window, "Refresh history", history.refresh)
        view_menu.addAction(self.refresh_history_action)

    def show_run_state(self, can_run: bool, can_stop: bool) -> None:
        self.run_action.setEnabled(can_run)
        self.stop_action.setEnabled(can_stop)
