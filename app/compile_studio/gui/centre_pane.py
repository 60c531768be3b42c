"""The window's centre: the error banner over the plots, above the bottom tabs (summary table, log, why)."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .log_panel import LogPanel
from .plots import PlotPanel
from .settings import AppSettings
from .summary_table import SummaryTableModel, SummaryTableView
from .why_view import WhyView

#: Starting height (px) of the pane under the plots (summary table, log, why): the
#: header and a few rows; the plots take the rest of the window's height.
BOTTOM_PANE_HEIGHT = 210

_BANNER_STYLE = (
    "QFrame#errorBanner { background: #FDECEA; border: 1px solid #F5C2C0; border-radius: 3px; }"
    " QLabel { color: #7A1010; }"
)


class ErrorBanner(QFrame):
    """A message across the top of the plots with a button that hides it; hidden until shown."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("errorBanner")
        self.setStyleSheet(_BANNER_STYLE)
        self.label = QLabel()
        # messages quote run labels and files from elsewhere: never rendered as markup
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("×")
        close.setToolTip("Hide this message")
        close.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 4, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def show_message(self, message: str) -> None:
        self.label.setText(message)
        self.show()

    def shown_text(self) -> str:
        """The message while the banner is shown, else ""."""
        return self.label.text() if self.isVisible() else ""


class CentrePane(QSplitter):
    """The plots (under the error banner) above the tabs Summary, Log and Why.

    The plots take what the window gains or loses in height; choosing the Why tab
    grows the bottom pane to its evidence, leaving it gives the heights back.
    """

    def __init__(self, settings: AppSettings, parent: QWidget | None = None):
        super().__init__(Qt.Orientation.Vertical, parent)
        self.setObjectName("centreSplitter")
        self.banner = ErrorBanner()
        self.plots = PlotPanel()
        self.plots.setMinimumWidth(320)  # the window fits a small screen
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.banner)
        top_layout.addWidget(self.plots, 1)
        self.table_model = SummaryTableModel(self)
        self.table_view = SummaryTableView(self.table_model)
        self.table_view.set_hidden_columns(settings.hidden_table_columns())
        self.table_view.hidden_columns_changed.connect(settings.set_hidden_table_columns)
        self.log = LogPanel()
        self.why_view = WhyView()
        # the Why tab's evidence needs more height than the table: it is given room when
        # chosen (see _tab_changed) rather than taking it from the plots for good;
        # nor does its widest row (a long sentence, a variant's name) set the plots' least width
        self.why_view.setMinimumSize(360, BOTTOM_PANE_HEIGHT - 60)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.table_view, "Summary")
        self.tabs.addTab(self.log, "Log")
        self.tabs.addTab(self.why_view, "Why")
        self.tabs.currentChanged.connect(self._tab_changed)
        self.addWidget(top)
        self.addWidget(self.tabs)
        self.setCollapsible(0, False)
        # the plots take what the window gains or loses; the table keeps its height
        self.setStretchFactor(0, 1)
        self.setStretchFactor(1, 0)
        self.setSizes([900 - BOTTOM_PANE_HEIGHT, BOTTOM_PANE_HEIGHT])
        #: the heights before the Why tab made the bottom pane taller (None: it did not)
        self._sizes_before_why: list[int] | None = None
        # the user's own drag is kept: leaving the Why tab then restores nothing
        self.splitterMoved.connect(self._forget_sizes)

    def _forget_sizes(self, *_: object) -> None:
        self._sizes_before_why = None

    def least_width(self) -> int:
        """The least width of the plots and the tabs under them."""
        return max(self.plots.minimumWidth(), self.minimumSizeHint().width())

    def _tab_changed(self, index: int) -> None:
        """The Why tab chosen in a pane lower than its evidence needs: the pane grows (the
        plots keep at least a third of the height). Another tab chosen after it: the panes
        get back the heights they had before (unless the user dragged the handle meanwhile)."""
        if self.tabs.widget(index) is not self.why_view:
            self._restore_sizes()
            return
        top, bottom = self.sizes()
        want = self.why_view.needed_height() + self.tabs.tabBar().sizeHint().height() + 8
        if bottom < want:
            total = top + bottom
            grown = min(want, total - total // 3)
            if grown > bottom:
                if self._sizes_before_why is None:
                    self._sizes_before_why = [top, bottom]
                self.setSizes([total - grown, grown])

    def _restore_sizes(self) -> None:
        """Give the plots and the bottom pane the heights they had before the Why tab grew it
        (the bottom pane's height, the plots the rest when the window was resized meanwhile)."""
        before, self._sizes_before_why = self._sizes_before_why, None
        if before is None:
            return
        top = self.widget(0)
        total = sum(self.sizes())
        bottom = min(before[1], total - (top.minimumSizeHint().height() if top is not None else 0))
        self.setSizes([total - bottom, bottom])

    def state_to_keep(self) -> QByteArray:
        """The state to keep: the heights before the Why tab grew the bottom pane, if it did."""
        before = self._sizes_before_why
        if before is None:
            return self.saveState()
        now = self.sizes()
        self.setSizes(before)
        state = self.saveState()
        self.setSizes(now)
        return state
