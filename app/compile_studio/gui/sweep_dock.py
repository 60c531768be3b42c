"""The Sweep view in the main window: its dock and the Sweep menu."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QStyle

from .sweep_view import SweepView
from .window_panes import MainSplitter, keep_on_screen


def install_sweep_view(window: Any) -> SweepView:
    """Give the main window its Sweep view (a dock, hidden until used) and a Sweep menu.

    Sweep folders go beside the window's run store (``<data>/sweeps``); the base
    of a new sweep is the form's configuration; double-clicking a point shows
    its run in the window (``window.show_run``). Returns the view.
    """
    view = SweepView(
        window.config_panel.config,
        window.store.root.parent / "sweeps",
        lambda: window.environment,
        busy=lambda: "A run is in progress: start the sweep when it has ended" if window.is_running() else "",
    )
    view.run_requested.connect(window.show_run)
    consent = getattr(window, "code_consent", None)
    if consent is not None:
        view.jobs.code_consent = consent
    runs = getattr(window, "runs", None)  # the window's Run: its rule for the form's code
    if runs is not None:
        view.jobs.agree_base = runs.code_agreed
    view.message.connect(window.show_error)
    view.log_line.connect(window.log.append_line)
    # a sweep's status or title that grows never widens the window past its screen
    view.running_changed.connect(lambda *_: keep_on_screen(window))
    dock = QDockWidget("Sweep", window)
    dock.setObjectName("sweepDock")
    dock.setWidget(view)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    dock.hide()
    view.dock = dock

    def shown(then: Callable[[], object]) -> Callable[[], None]:
        def call() -> None:
            show_dock(window, dock)
            then()

        return call

    menu = window.menuBar().addMenu("&Sweep")
    for text, slot, shortcut in (
        ("New sweep…", shown(view.new_sweep_dialog), "Ctrl+Shift+R"),
        ("New shape sweep…", shown(view.new_shape_sweep_dialog), None),
        ("Open sweep…", shown(view.open_dialog), None),
        ("Resume sweep", shown(view.resume), None),
        ("Stop sweep", view.stop, None),
    ):
        act = QAction(text, window)
        if shortcut:
            act.setShortcut(QKeySequence(shortcut))
        act.triggered.connect(lambda *_, s=slot: s())
        menu.addAction(act)
        window.addAction(act)
    menu.addSeparator()
    menu.addAction(dock.toggleViewAction())
    return view


#: The share of the window's width the dock asks for (never less than its least width)
DOCK_SHARE = 0.36


def show_dock(window: Any, dock: QDockWidget) -> None:
    """Show the sweep dock beside the window's panes, over about a third of its width.

    The panes keep what they need (the form without a horizontal scroll bar, the
    plots and the history their least widths: :meth:`MainSplitter.fit_widths` shares out
    the rest); the dock takes the remainder, never less than its own least
    width, and the window never grows past its screen.
    """
    dock.show()
    dock.raise_()
    splitter = getattr(window, "main_splitter", None)
    if isinstance(splitter, MainSplitter):
        panes = splitter.least_width()
    else:
        central = window.centralWidget()
        panes = central.minimumSizeHint().width() if central is not None else 0
    room = window.width() - panes - window.style().pixelMetric(QStyle.PixelMetric.PM_DockWidgetSeparatorExtent)
    want = min(max(dock.minimumSizeHint().width(), int(window.width() * DOCK_SHARE)), room)
    window.resizeDocks([dock], [max(dock.minimumSizeHint().width(), want)], Qt.Orientation.Horizontal)
    keep_on_screen(window)
