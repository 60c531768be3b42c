"""The status bar while a "Try it" comparison runs: what it is doing, in place of the last run's end.

The phase of the last benchmark ("done") says nothing of a comparison started from the Why
tab; while one runs, the status bar shows its round and run instead, and the phase again
once it has ended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QLabel

if TYPE_CHECKING:
    from .main_window import MainWindow


def follow_trials(window: MainWindow) -> QLabel:
    """A status-bar label that follows the Why tab's comparison (hidden while none runs);
    the benchmark's phase is hidden meanwhile. Returns the label (``window.trial_status_label``)."""
    label = QLabel()
    label.setObjectName("trialStatus")
    label.hide()
    window.statusBar().insertPermanentWidget(0, label)

    def changed(text: str) -> None:
        label.setText(text)
        label.setVisible(bool(text))
        window.phase_label.setVisible(not text)

    window.why_view.trial_status.connect(changed)
    window.trial_status_label = label
    return label
