"""The status bar while a "Try it" comparison runs: what it is doing, in place of the last run's end.

The phase of the last benchmark ("done") says nothing of a comparison started from the Why
tab; while one runs, the status bar shows its round and run instead, and the phase again
once it has ended.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QStatusBar

from .why_view import WhyView


def follow_trials(bar: QStatusBar, phase_label: QLabel, why_view: WhyView) -> QLabel:
    """A status-bar label that follows the Why tab's comparison (hidden while none runs);
    the benchmark's phase is hidden meanwhile. Returns the label."""
    label = QLabel()
    label.setObjectName("trialStatus")
    label.hide()
    bar.insertPermanentWidget(0, label)

    def changed(text: str) -> None:
        label.setText(text)
        label.setVisible(bool(text))
        phase_label.setVisible(not text)

    why_view.trial_status.connect(changed)
    return label
