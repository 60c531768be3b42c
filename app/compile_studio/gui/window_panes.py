"""The window's panes and their widths: form with Run/Stop, error banner, plots over the bottom tabs, history."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .config_panel import ConfigPanel
from .factory_fields import latest_factory_batch
from .history_panel import HistoryPanel
from .log_panel import LogPanel
from .plots import PlotPanel
from .summary_table import SummaryTableModel, SummaryTableView
from .trial_status import follow_trials
from .verdict_lines import VerdictLines
from .why_view import WhyView

if TYPE_CHECKING:
    from .main_window import MainWindow

#: Starting height (px) of the pane under the plots (summary table, log, why): the
#: header and a few rows; the plots take the rest of the window's height.
BOTTOM_PANE_HEIGHT = 210
#: Starting width (px) of the history: its run (elided to what fits), best verdict and
#: status columns side by side, at 1280 px as at 1500.
HISTORY_WIDTH = 300

_BANNER_STYLE = (
    "QFrame#errorBanner { background: #FDECEA; border: 1px solid #F5C2C0; border-radius: 3px; }"
    " QLabel { color: #7A1010; }"
)


def build_panes(window: MainWindow) -> None:
    window.config_panel = ConfigPanel()
    window.config_panel.changed.connect(window._update_run_state)
    scroll = QScrollArea()
    scroll.setWidget(window.config_panel)
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    # narrower than the form: scroll rather than cut its fields off
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
    scroll.setMinimumWidth(240)  # the window fits a small screen; the splitter's first size fits the form
    window.run_button = QPushButton("Run")
    window.run_button.setDefault(True)
    window.run_button.clicked.connect(lambda: window.start_run())
    window.stop_button = QPushButton("Stop")
    window.stop_button.clicked.connect(window.stop_run)
    window.run_blocker_label = QLabel()
    window.run_blocker_label.setObjectName("runBlocker")
    window.run_blocker_label.setWordWrap(True)
    window.run_blocker_label.setStyleSheet("color: #B00020;")
    buttons = QHBoxLayout()
    buttons.addWidget(window.run_button)
    buttons.addWidget(window.stop_button)
    left = QWidget()
    left_layout = QVBoxLayout(left)
    left_layout.setContentsMargins(6, 4, 2, 4)
    left_layout.addWidget(scroll, 1)
    left_layout.addWidget(window.run_blocker_label)
    left_layout.addLayout(buttons)

    window.error_banner = QFrame()
    window.error_banner.setObjectName("errorBanner")
    window.error_banner.setStyleSheet(_BANNER_STYLE)
    window.error_label = QLabel()
    # messages quote run labels and files from elsewhere: never rendered as markup
    window.error_label.setTextFormat(Qt.TextFormat.PlainText)
    window.error_label.setWordWrap(True)
    window.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    close_banner = QToolButton()
    close_banner.setText("×")
    close_banner.setToolTip("Hide this message")
    close_banner.clicked.connect(window.hide_error)
    banner_layout = QHBoxLayout(window.error_banner)
    banner_layout.setContentsMargins(8, 4, 4, 4)
    banner_layout.addWidget(window.error_label, 1)
    banner_layout.addWidget(close_banner, 0, Qt.AlignmentFlag.AlignTop)
    window.error_banner.hide()

    window.plots = PlotPanel()
    window.plots.setMinimumWidth(320)  # the window fits a small screen
    top = QWidget()
    top_layout = QVBoxLayout(top)
    top_layout.setContentsMargins(0, 0, 0, 0)
    top_layout.addWidget(window.error_banner)
    top_layout.addWidget(window.plots, 1)

    window.table_model = SummaryTableModel(window)
    window.table_view = SummaryTableView(window.table_model)
    window.table_view.set_hidden_columns(window.settings.hidden_table_columns())
    window.table_view.hidden_columns_changed.connect(window.settings.set_hidden_table_columns)
    window.log = LogPanel()
    window.bottom_tabs = QTabWidget()
    window.bottom_tabs.addTab(window.table_view, "Summary")
    window.bottom_tabs.addTab(window.log, "Log")
    window.why_view = WhyView()
    # the Why tab's evidence needs more height than the table: it is given room when
    # chosen (see _bottom_tab_changed) rather than taking it from the plots for good;
    # nor does its widest row (a long sentence, a variant's name) set the plots' least width
    window.why_view.setMinimumSize(360, BOTTOM_PANE_HEIGHT - 60)
    window.bottom_tabs.addTab(window.why_view, "Why")
    window.bottom_tabs.currentChanged.connect(window._bottom_tab_changed)

    window.centre_splitter = QSplitter(Qt.Orientation.Vertical)
    window.centre_splitter.setObjectName("centreSplitter")
    window.centre_splitter.addWidget(top)
    window.centre_splitter.addWidget(window.bottom_tabs)
    window.centre_splitter.setCollapsible(0, False)
    # the plots take what the window gains or loses; the table keeps its height
    window.centre_splitter.setStretchFactor(0, 1)
    window.centre_splitter.setStretchFactor(1, 0)
    window.centre_splitter.setSizes([900 - BOTTOM_PANE_HEIGHT, BOTTOM_PANE_HEIGHT])
    #: the centre panes' heights before the Why tab made the bottom pane taller (None: it did not)
    window._sizes_before_why = None
    # the user's own drag is kept: leaving the Why tab then restores nothing
    window.centre_splitter.splitterMoved.connect(lambda *_: setattr(window, "_sizes_before_why", None))

    window.history = HistoryPanel(window.store)
    window.history.running_folder = window._running_folder
    window.history.overlay_changed.connect(window._overlays_changed)
    window.history.message.connect(window.show_error)
    window.history.show_requested.connect(window.show_run)
    window.history.load_config_requested.connect(window.load_config)
    window.history.export_requested.connect(window._export_run_of_history)
    window.history.setMinimumWidth(160)  # the window fits a small screen
    if window.config_panel.factory_batch is not None:
        # a custom model's factory that sets its batch: the field shows what its latest run measured
        window.config_panel.factory_batch.measured = lambda config: latest_factory_batch(
            [entry.listed for entry in window.history.entries()], config
        )
        window.config_panel.refresh_factory_fields()
        window.run_finished.connect(lambda *_: window.config_panel.refresh_factory_fields())

    window.main_splitter = QSplitter(Qt.Orientation.Horizontal)
    window.main_splitter.setObjectName("mainSplitter")
    window.main_splitter.addWidget(left)
    window.main_splitter.addWidget(window.centre_splitter)
    window.main_splitter.addWidget(window.history)
    # the form and the history keep their widths; the plots take what the window gains or loses
    window.main_splitter.setStretchFactor(0, 0)
    window.main_splitter.setStretchFactor(1, 1)
    window.main_splitter.setStretchFactor(2, 0)
    window.main_splitter.setCollapsible(1, False)
    window._form_scroll = scroll
    form_width = window._form_width()
    window.main_splitter.setSizes([form_width, 1500 - form_width - HISTORY_WIDTH, HISTORY_WIDTH])
    #: whether the panes keep the widths the window chose (until the user drags a handle)
    window._auto_widths = True
    window.main_splitter.splitterMoved.connect(window._splitter_dragged)
    window.main_splitter.installEventFilter(window)
    # the answer, one sentence per compiled variant, across the window above the plots and
    # the table (which keeps the details): read at any window size without scrolling sideways
    window.verdict_lines = VerdictLines(window.table_model)
    central = QWidget()
    central_layout = QVBoxLayout(central)
    central_layout.setContentsMargins(0, 0, 0, 0)
    central_layout.setSpacing(0)
    central_layout.addWidget(window.verdict_lines)
    central_layout.addWidget(window.main_splitter, 1)
    window.setCentralWidget(central)

    window.env_label = window.machine.label
    window.phase_label = QLabel()
    window.progress_bar = QProgressBar()
    window.progress_bar.setRange(0, 1000)
    window.progress_bar.setMaximumWidth(220)
    window.progress_bar.setTextVisible(False)
    window.progress_bar.hide()
    bar = window.statusBar()
    bar.addPermanentWidget(window.phase_label)
    bar.addPermanentWidget(window.progress_bar)
    bar.addPermanentWidget(window.env_label)
    follow_trials(window)
    window.resize(1500, 900)


def form_width(window: MainWindow) -> int:
    """The left pane's width that shows the form whole beside its vertical scroll bar."""
    scroll = window._form_scroll
    left = scroll.parentWidget()
    layout = left.layout() if left is not None else None
    margins = layout.contentsMargins() if layout is not None else None
    return (
        max(window.config_panel.sizeHint().width(), window.config_panel.minimumSizeHint().width())
        + scroll.verticalScrollBar().sizeHint().width() + 2 * scroll.frameWidth()
        + (margins.left() + margins.right() if margins is not None else 0) + 2
    )


def form_least_width(window: MainWindow) -> int:
    """The left pane's least width that shows the form without a horizontal scroll bar (its
    long captions and names cut with "…")."""
    scroll = window._form_scroll
    left = scroll.parentWidget()
    layout = left.layout() if left is not None else None
    margins = layout.contentsMargins() if layout is not None else None
    return (
        window.config_panel.minimumSizeHint().width()
        + scroll.verticalScrollBar().sizeHint().width() + 2 * scroll.frameWidth()
        + (margins.left() + margins.right() if margins is not None else 0) + 2
    )


def centre_least_width(window: MainWindow) -> int:
    """The least width of the plots and the tabs under them."""
    return max(window.plots.minimumWidth(), window.centre_splitter.minimumSizeHint().width())


def fit_form_width(window: MainWindow) -> None:
    """Keep the form whole and the history at its width, the plots taking the difference:
    when the form grows (the worker names its compile variants) or the window shrinks
    (the splitter takes a little from every pane). Where that leaves the plots less than
    their least width (a small window, the Sweep dock open), the history gives up to its
    least width, then the form down to the width that needs no horizontal scroll bar.
    Not after the user set the widths."""
    if not window._auto_widths:
        return
    form, centre, history = window.main_splitter.sizes()
    total = form + centre + history
    plots_least = centre_least_width(window)
    want_form, want_history = max(form, window._form_width()), max(history, HISTORY_WIDTH)
    if total - want_form - want_history < plots_least:
        want_history = max(window.history.minimumWidth(), total - want_form - plots_least)
    if total - want_form - want_history < plots_least:
        want_form = max(form_least_width(window), total - want_history - plots_least)
    want_centre = total - want_form - want_history
    if [want_form, want_centre, want_history] != [form, centre, history] and want_centre >= plots_least:
        window.main_splitter.setSizes([want_form, want_centre, want_history])


def bottom_tab_changed(window: MainWindow, index: int) -> None:
    """The Why tab chosen in a pane lower than its evidence needs: the pane grows (the
    plots keep at least a third of the height). Another tab chosen after it: the panes
    get back the heights they had before (unless the user dragged the handle meanwhile)."""
    if window.bottom_tabs.widget(index) is not window.why_view:
        restore_centre_sizes(window)
        return
    top, bottom = window.centre_splitter.sizes()
    tab_bar = window.bottom_tabs.tabBar().sizeHint().height()
    want = window.why_view.needed_height() + tab_bar + 8
    if bottom < want:
        total = top + bottom
        grown = min(want, total - total // 3)
        if grown > bottom:
            if window._sizes_before_why is None:
                window._sizes_before_why = [top, bottom]
            window.centre_splitter.setSizes([total - grown, grown])


def restore_centre_sizes(window: MainWindow) -> None:
    """Give the plots and the bottom pane the heights they had before the Why tab grew it
    (the bottom pane's height, the plots the rest when the window was resized meanwhile)."""
    before, window._sizes_before_why = window._sizes_before_why, None
    if before is None:
        return
    top = window.centre_splitter.widget(0)
    total = sum(window.centre_splitter.sizes())
    bottom = min(before[1], total - (top.minimumSizeHint().height() if top is not None else 0))
    window.centre_splitter.setSizes([total - bottom, bottom])


def centre_state(window: MainWindow) -> QByteArray:
    """The centre splitter's state to keep: the heights before the Why tab grew its pane, if it did."""
    splitter = window.centre_splitter
    before = window._sizes_before_why
    if before is None:
        return splitter.saveState()
    now = splitter.sizes()
    splitter.setSizes(before)
    state = splitter.saveState()
    splitter.setSizes(now)
    return state


def keep_on_screen(window: MainWindow) -> None:
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
