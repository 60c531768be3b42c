"""The window's three panes side by side and their widths: the form, the centre (plots over the tabs), the history."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QSplitter, QWidget

from .centre_pane import BOTTOM_PANE_HEIGHT as BOTTOM_PANE_HEIGHT  # where it was first
from .centre_pane import CentrePane
from .form_pane import FormPane
from .history_panel import HistoryPanel

#: Starting width (px) of the history: its run (elided to what fits), best verdict and
#: status columns side by side, at 1280 px as at 1500.
HISTORY_WIDTH = 300


class MainSplitter(QSplitter):
    """The form, the centre and the history; the centre takes what the window gains or loses.

    The form and the history keep their widths (:meth:`fit_widths`) until the user drags
    a handle.
    """

    def __init__(self, form: FormPane, centre: CentrePane, history: HistoryPanel, parent: QWidget | None = None):
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.setObjectName("mainSplitter")
        self.form, self.centre, self.history = form, centre, history
        self.addWidget(form)
        self.addWidget(centre)
        self.addWidget(history)
        # the form and the history keep their widths; the plots take what the window gains or loses
        self.setStretchFactor(0, 0)
        self.setStretchFactor(1, 1)
        self.setStretchFactor(2, 0)
        self.setCollapsible(1, False)
        width = form.wanted_width()
        self.setSizes([width, 1500 - width - HISTORY_WIDTH, HISTORY_WIDTH])
        #: whether the panes keep the widths the window chose (until the user drags a handle)
        self.auto_widths = True
        self.splitterMoved.connect(self._dragged)

    def _dragged(self, *_: object) -> None:
        self.auto_widths = False

    def restore(self, state: object) -> None:
        """The widths the user left (a state saved before): kept from now on."""
        self.restoreState(state)  # type: ignore[arg-type]
        self.auto_widths = False

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        """After the panes were resized with the window: keep the form and the history whole."""
        super().resizeEvent(event)
        QTimer.singleShot(0, self.fit_widths)

    def least_width(self) -> int:
        """The panes' least width: the form without a horizontal scroll bar, the others at theirs."""
        handles = self.handleWidth() * max(0, self.count() - 1)
        return self.form.least_width() + self.centre.least_width() + self.history.minimumWidth() + handles

    def fit_widths(self) -> None:
        """Keep the form whole and the history at its width, the plots taking the difference:
        when the form grows (the worker names its compile variants) or the window shrinks
        (the splitter takes a little from every pane). Where that leaves the plots less than
        their least width (a small window, the Sweep dock open), the history gives up to its
        least width, then the form down to the width that needs no horizontal scroll bar.
        Not after the user set the widths."""
        if not self.auto_widths:
            return
        form, centre, history = self.sizes()
        total = form + centre + history
        plots_least = self.centre.least_width()
        want_form, want_history = max(form, self.form.wanted_width()), max(history, HISTORY_WIDTH)
        if total - want_form - want_history < plots_least:
            want_history = max(self.history.minimumWidth(), total - want_form - plots_least)
        if total - want_form - want_history < plots_least:
            want_form = max(self.form.least_width(), total - want_history - plots_least)
        want_centre = total - want_form - want_history
        if [want_form, want_centre, want_history] != [form, centre, history] and want_centre >= plots_least:
            self.setSizes([want_form, want_centre, want_history])


def keep_on_screen(window: QWidget) -> None:
    """Narrow (and move) the window so that its frame lies within its screen's available width."""
    screen = window.screen()
    if screen is None:
        return
    room = screen.availableGeometry()
    frame = window.frameGeometry()
    if frame.width() > room.width():
        extra = frame.width() - window.width()
        window.resize(max(window.minimumSizeHint().width(), room.width() - extra), window.height())
        frame = window.frameGeometry()
    if frame.right() > room.right() or frame.left() < room.left():
        window.move(max(room.left(), room.right() - frame.width() + 1), frame.top())
