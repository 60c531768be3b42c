"""The window's left pane: the configuration form in its scroll area, Run and Stop, and why Run is disabled."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from .config_panel import ConfigPanel
from .factory_fields import latest_factory_batch


class FormPane(QWidget):
    """The form (:attr:`config_panel`) over :attr:`run_button` and :attr:`stop_button`.

    Its layout's last item is the row of buttons: a widget inserted before it (the
    target chooser) sits just above them.
    """

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.config_panel = ConfigPanel()
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidget(self.config_panel)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        # narrower than the form: scroll rather than cut its fields off
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.scroll_area.setMinimumWidth(240)  # the window fits a small screen; the splitter's first size fits the form
        self.run_button = QPushButton("Run")
        self.run_button.setDefault(True)
        self.stop_button = QPushButton("Stop")
        self.blocker_label = QLabel()
        self.blocker_label.setObjectName("runBlocker")
        self.blocker_label.setWordWrap(True)
        self.blocker_label.setStyleSheet("color: #B00020;")
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.stop_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 2, 4)
        layout.addWidget(self.scroll_area, 1)
        layout.addWidget(self.blocker_label)
        layout.addLayout(buttons)

    def measure_factory_batch(self, runs: Callable[[], list]) -> bool:
        """A custom model's factory that sets its batch: the field shows what its latest run
        among ``runs()`` (the history's listed runs) measured. Returns whether the form has it."""
        panel = self.config_panel
        if panel.factory_batch is None:
            return False
        panel.factory_batch.measured = lambda config: latest_factory_batch(runs(), config)
        panel.refresh_factory_fields()
        return True

    def show_state(self, running: bool, stoppable: bool, problems: list) -> None:
        """Run enabled unless a run is on or the form has ``problems`` (said under the form);
        Stop while a run can be stopped; the form locked while a run is on."""
        if running:
            reason = "A run is in progress."
        elif problems:
            reason = "Cannot run: " + "; ".join(str(p) for p in problems)
        else:
            reason = ""
        self.run_button.setEnabled(not running and not problems)
        self.run_button.setToolTip(reason or "Run the benchmark (Ctrl+R)")
        self.blocker_label.setText(reason if problems and not running else "")
        self.blocker_label.setVisible(bool(problems) and not running)
        self.stop_button.setEnabled(stoppable)
        self.config_panel.setEnabled(not running)

    def _beside_form(self) -> int:
        """The width the pane needs beside the form: its scroll bar, frame and margins."""
        layout = self.layout()
        margins = layout.contentsMargins() if layout is not None else None
        return (
            self.scroll_area.verticalScrollBar().sizeHint().width() + 2 * self.scroll_area.frameWidth()
            + (margins.left() + margins.right() if margins is not None else 0) + 2
        )

    def wanted_width(self) -> int:
        """The width that shows the form whole beside its vertical scroll bar."""
        form = self.config_panel
        return max(form.sizeHint().width(), form.minimumSizeHint().width()) + self._beside_form()

    def least_width(self) -> int:
        """The least width that shows the form without a horizontal scroll bar (its long
        captions and names cut with "…")."""
        return self.config_panel.minimumSizeHint().width() + self._beside_form()
