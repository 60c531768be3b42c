"""Helpers shared by the window tests."""

from __future__ import annotations

from compile_studio.config import BenchmarkConfig
from compile_studio.gui.main_window import MainWindow

RUN_TIMEOUT_MS = 120_000


def open_window(qtbot, probe: bool = False) -> MainWindow:
    """A shown MainWindow (without the start-up probe unless asked), closed by qtbot."""
    window = MainWindow(probe=probe)
    qtbot.addWidget(window)
    window.show()
    return window


def run_and_wait(qtbot, window: MainWindow, config: BenchmarkConfig):
    """Start ``config`` from the window and return the RunResult it finishes with."""
    with qtbot.waitSignal(window.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.start_run(config)
    return blocker.args[0]
