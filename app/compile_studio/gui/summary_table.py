"""The summary table: one row per variant (of one or several runs), copyable as TSV.

The run and variant columns stay in place while the others scroll (a second
view laid over the first, as in Qt's frozen-column example); any other column
can be hidden from the header's context menu, and the window keeps that choice.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    Qt,
    Signal,
)
from PySide6.QtGui import QAction, QBrush, QColor, QGuiApplication, QKeySequence, QResizeEvent
from PySide6.QtWidgets import QAbstractItemView, QFrame, QHeaderView, QMenu, QTableView, QWidget

from ..results import SummaryRow
from ..results.analysis.verdict import CAUSE_WORDS, VerdictCause, cause_of
from ..results.report.formatting import HEADER_HELP, SUMMARY_HEADERS, plural, summary_cells

_FAILED = QColor("#F8D7DA")
_WRONG = QColor("#FFE0B2")
_NOISY = QColor("#FFF8C5")
_ERROR_TEXT = QColor("#B00020")

_Index = QModelIndex | QPersistentModelIndex

#: The columns that stay in place while the others scroll (those the model shows).
FROZEN_COLUMNS = ("run", "variant")
#: Widest a column gets when fitted to its contents (px); its tooltip holds the whole text.
MAX_COLUMN_WIDTH = 240


def verdict_tooltip(row: SummaryRow) -> str:
    """The verdict cell's tooltip: its sentence, which leads with the part of the rule that decided it.

    A sentence kept from an older summary that leads with something else (a
    check named where the interval includes 1.00) is preceded by the cause.
    """
    cause = cause_of(row.verdict, row.verdict_reason, row.speedup_lo, row.speedup_hi)
    if cause is VerdictCause.INTERVAL_INCLUDES_ONE and "includes 1.00" not in row.verdict_reason:
        return f"{row.verdict}: decided by {CAUSE_WORDS[cause]}.\n\n{row.verdict_reason}"
    return row.verdict_text


@dataclass(frozen=True)
class TableRow:
    """One row of the table: the run it belongs to and its summary row."""

    run_name: str
    row: SummaryRow
    #: why the variant is as fast as it is (from the run's diagnostics), when known
    why: str | None = None


class SummaryTableModel(QAbstractTableModel):
    """Rows of :class:`SummaryRow` for one run or several (then a ``run`` column is shown).

    Noisy variants (IQR/median > 10 % or a recompile in the timed window) are
    tinted yellow, wrong outputs orange, failed variants red with the error
    as text and tooltip. The verdict column shows the verdict's kind and its
    sentence as tooltip; "cannot tell" and failed checks are tinted yellow.
    """

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._rows: list[TableRow] = []
        self._cells: list[list[str]] = []
        self._show_run = False

    # -- content -------------------------------------------------------------------
    def set_runs(
        self, runs: list[tuple[str, list[SummaryRow]]], why: dict[tuple[str, str], str] | None = None
    ) -> None:
        """Show the rows of each ``(run name, rows)``; a run column appears for two or more runs.

        ``why`` maps (run name, variant) to the diagnostics' sentence, shown with the verdict.
        """
        self.beginResetModel()
        self._show_run = len(runs) > 1
        why = why or {}
        self._rows = [TableRow(name, row, why.get((name, row.name))) for name, rows in runs for row in rows]
        self._cells = [self._row_cells(r) for r in self._rows]
        self.endResetModel()

    def clear(self) -> None:
        self.set_runs([])

    def rows(self) -> list[TableRow]:
        return list(self._rows)

    def headers(self) -> list[str]:
        return (["run"] if self._show_run else []) + list(SUMMARY_HEADERS)

    def _row_cells(self, table_row: TableRow) -> list[str]:
        row = table_row.row
        cells = summary_cells(row)
        if row.error and row.status in ("failed", "stopped"):
            # the failure says more than the missing numbers
            cells[1] = f"{row.status}: {row.error}"
        return ([table_row.run_name] if self._show_run else []) + cells

    def cell_text(self, row: int, column_name: str) -> str:
        """The text shown at ``row`` in the column with header ``column_name``."""
        return self._cells[row][self.headers().index(column_name)]

    # -- Qt model ---------------------------------------------------------------------
    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.headers())

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            headers = self.headers()
            return headers[section] if 0 <= section < len(headers) else None
        if role == Qt.ItemDataRole.ToolTipRole and orientation == Qt.Orientation.Horizontal:
            headers = self.headers()
            return HEADER_HELP.get(headers[section]) if 0 <= section < len(headers) else None
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        r, c = index.row(), index.column()
        row = self._rows[r].row
        column = self.headers()[c]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._cells[r][c]
        if role == Qt.ItemDataRole.ToolTipRole:
            tip = self._tooltip(row, column)
            because = self._rows[r].why
            if column == "verdict" and tip and because:
                tip += f"\n\nWhy: {because}"
            return tip
        if role == Qt.ItemDataRole.BackgroundRole:
            if row.status == "failed":
                return QBrush(_FAILED)
            if row.allclose is False and column in ("correct", "max rel err", "variant"):
                return QBrush(_WRONG)
            if (row.noisy or row.recompiles_in_window) and column in ("status", "IQR %", "variant"):
                return QBrush(_NOISY)
            if row.verdict == "cannot tell" and column == "verdict":
                return QBrush(_NOISY)
            if row.checks and column == "checks":
                return QBrush(_NOISY)
            return None
        if role == Qt.ItemDataRole.ForegroundRole:
            if row.status == "failed" and column == "status":
                return QBrush(_ERROR_TEXT)
            if row.allclose is False and column == "correct":
                return QBrush(_ERROR_TEXT)
            return None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            if column in ("run", "variant", "status", "verdict", "checks"):
                return int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def _tooltip(self, row: SummaryRow, column: str) -> str | None:
        if column == "verdict" and row.verdict:
            return verdict_tooltip(row)
        if column == "checks" and row.n:
            return (row.checks + "\n\n" if row.checks else "") + (
                "Checks of this variant's timed calls: drift (its per-round medians move by more "
                "than 10 % across the run), two levels (the calls fall into a fast and a slow "
                "group), heavy tail (p99 more than twice the median). Where the speedup's "
                "interval is clear of 1.00, drift and two levels block a verdict unless the "
                "whole interval lies farther from 1.00 than they could move a median; a heavy "
                "tail is only reported."
            )
        if column == "round spread %" and row.round_spread_pct is not None:
            return "How far this variant's per-round medians lie apart: max / min − 1."
        notes = []
        if row.error:
            notes.append(f"{row.status}: {row.error}")
        if row.noisy and row.n:
            notes.append(
                "Noisy: the interquartile range is more than 10 % of the median; "
                "the median is less certain than usual."
            )
        if row.recompiles_in_window:
            notes.append(
                f"{plural(row.recompiles_in_window, 'recompile')} inside the timed window: "
                "not steady state."
            )
        if row.allclose is False:
            notes.append(
                "Incorrect: the output, gradients or parameters differ from the reference beyond "
                f"tolerance (the verdict names which; output max abs {row.max_abs_error}, "
                f"max rel {row.max_rel_error})."
            )
        if column == "speedup [95% CI]" and row.speedup is not None:
            notes.append(
                "eager median / this variant's median, round by round, with a 95 % interval "
                "from the spread of the per-round ratios."
            )
        if column == "break-even calls":
            notes.append("Calls after which the compile time has paid for itself.")
        return "\n".join(notes) if notes else None

    # -- copying ----------------------------------------------------------------------
    def to_tsv(self, indexes: list[QModelIndex] | None = None) -> str:
        """The table (or the cells of ``indexes``, as their bounding rows/columns) as TSV."""
        if indexes:
            rows = sorted({i.row() for i in indexes})
            cols = sorted({i.column() for i in indexes})
        else:
            rows = list(range(len(self._rows)))
            cols = list(range(len(self.headers())))
        headers = self.headers()
        lines = ["\t".join(headers[c] for c in cols)]
        for r in rows:
            lines.append("\t".join(self._cells[r][c].replace("\t", " ") for c in cols))
        return "\n".join(lines) + "\n"


class SummaryTableView(QTableView):
    """The view of a :class:`SummaryTableModel`: Ctrl+C copies the selection, a menu copies all.

    The run and variant columns are frozen (:attr:`frozen_view` shows them over
    the left edge while the rest scrolls); the header's context menu hides or
    shows the other columns (:attr:`hidden_columns_changed` says which are hidden).
    """

    #: the names of the hidden columns, after the user changed them
    hidden_columns_changed = Signal(list)

    def __init__(self, model: SummaryTableModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.setModel(model)
        self._hidden: set[str] = set()
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setAlternatingRowColors(True)
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.verticalHeader().hide()
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._header_menu)
        header.sectionResized.connect(self._on_section_resized)
        self.frozen_view = self._make_frozen_view(model)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)
        self.copy_action = QAction("Copy", self)
        self.copy_action.setShortcut(QKeySequence.StandardKey.Copy)
        self.copy_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.copy_action.setProperty("shortcut_scope", "the summary table")  # Help → Keyboard shortcuts
        self.copy_action.triggered.connect(self.copy_selection)
        self.addAction(self.copy_action)
        self.copy_all_action = QAction("Copy whole table", self)
        self.copy_all_action.triggered.connect(self.copy_all)
        self.show_all_action = QAction("Show all columns", self)
        self.show_all_action.triggered.connect(lambda: self.set_hidden_columns([], user=True))
        self.fit_action = QAction("Fit columns to their contents", self)
        self.fit_action.triggered.connect(self.fit_columns)
        model.modelReset.connect(self._after_reset)
        self._after_reset()

    # -- the frozen columns --------------------------------------------------------------
    def _make_frozen_view(self, model: SummaryTableModel) -> QTableView:
        view = QTableView(self)
        view.setObjectName("frozenColumns")
        view.setModel(model)
        view.setSelectionModel(self.selectionModel())
        view.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        view.verticalHeader().hide()
        view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        view.horizontalHeader().setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.horizontalHeader().customContextMenuRequested.connect(self._header_menu)
        view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        view.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        view.setVerticalScrollMode(self.verticalScrollMode())
        view.setAlternatingRowColors(True)
        view.setFrameShape(QFrame.Shape.NoFrame)
        view.setStyleSheet("QTableView#frozenColumns { border-right: 1px solid #9A9A9A; }")
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.customContextMenuRequested.connect(lambda pos: self._menu(view.viewport().mapTo(self.viewport(), pos)))
        self.viewport().stackUnder(view)
        self.verticalScrollBar().valueChanged.connect(view.verticalScrollBar().setValue)
        view.verticalScrollBar().valueChanged.connect(self.verticalScrollBar().setValue)
        view.show()
        return view

    def frozen_columns(self) -> list[int]:
        """The model columns kept in place (run, variant)."""
        headers = self.summary_model().headers()
        return [i for i, h in enumerate(headers) if h in FROZEN_COLUMNS]

    def _sync_frozen(self) -> None:
        frozen = set(self.frozen_columns())
        view = self.frozen_view
        for c in range(self.summary_model().columnCount()):
            view.setColumnHidden(c, c not in frozen)
            if c in frozen:
                view.setColumnWidth(c, self.columnWidth(c))
        self._place_frozen()

    def _place_frozen(self) -> None:
        width = sum(self.columnWidth(c) for c in self.frozen_columns())
        frame = self.frameWidth()
        self.frozen_view.setVisible(width > 0)
        self.frozen_view.setGeometry(
            frame, frame, width, self.viewport().height() + self.horizontalHeader().height()
        )

    def _on_section_resized(self, column: int, _old: int, new: int) -> None:
        if column in self.frozen_columns():
            self.frozen_view.setColumnWidth(column, new)
            self._place_frozen()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._place_frozen()

    def scrollTo(self, index: _Index, hint: QAbstractItemView.ScrollHint = QAbstractItemView.ScrollHint.EnsureVisible) -> None:  # noqa: N802
        if index.column() not in self.frozen_columns():
            super().scrollTo(index, hint)

    # -- columns shown ---------------------------------------------------------------------
    def _after_reset(self) -> None:
        self._apply_hidden()
        self.fit_columns()

    def fit_columns(self) -> None:
        """Each shown column as wide as its contents, at most :data:`MAX_COLUMN_WIDTH`."""
        self.resizeColumnsToContents()
        frozen = set(self.frozen_columns())
        for c in range(self.summary_model().columnCount()):
            if c not in frozen and self.columnWidth(c) > MAX_COLUMN_WIDTH:
                self.setColumnWidth(c, MAX_COLUMN_WIDTH)
        self._sync_frozen()

    def hidden_columns(self) -> list[str]:
        """The names of the columns hidden by the user (in table order)."""
        order = ["run", *SUMMARY_HEADERS]
        return [h for h in order if h in self._hidden]

    def set_hidden_columns(self, names: list[str], user: bool = False) -> None:
        """Hide the columns named ``names`` (unknown names and the frozen columns are ignored).

        ``user``: the choice came from the menu, so :attr:`hidden_columns_changed` is emitted.
        """
        known = set(SUMMARY_HEADERS) - set(FROZEN_COLUMNS)
        hidden = {n for n in names if n in known}
        changed = hidden != self._hidden
        self._hidden = hidden
        self._apply_hidden()
        self._sync_frozen()
        if user and changed:
            self.hidden_columns_changed.emit(self.hidden_columns())

    def _apply_hidden(self) -> None:
        for c, name in enumerate(self.summary_model().headers()):
            self.setColumnHidden(c, name in self._hidden)

    def column_menu(self) -> QMenu:
        """The header's context menu: a check box per column, show all, fit widths."""
        menu = QMenu(self)
        for name in SUMMARY_HEADERS:
            if name in FROZEN_COLUMNS:
                continue
            act = menu.addAction(name)
            act.setCheckable(True)
            act.setChecked(name not in self._hidden)
            act.setToolTip(HEADER_HELP.get(name, ""))
            act.toggled.connect(lambda on, n=name: self._toggle_column(n, on))
        menu.setToolTipsVisible(True)
        menu.addSeparator()
        menu.addAction(self.show_all_action)
        menu.addAction(self.fit_action)
        return menu

    def _toggle_column(self, name: str, shown: bool) -> None:
        hidden = (self._hidden - {name}) if shown else (self._hidden | {name})
        self.set_hidden_columns(sorted(hidden), user=True)

    def _header_menu(self, pos: QPoint) -> None:
        sender = self.sender()
        header = sender if isinstance(sender, QHeaderView) else self.horizontalHeader()
        self.column_menu().exec(header.mapToGlobal(pos))

    def summary_model(self) -> SummaryTableModel:
        model = self.model()
        assert isinstance(model, SummaryTableModel)
        return model

    def copy_selection(self) -> str:
        """Copy the selected cells (or the whole table when none) as TSV; returns the text."""
        indexes = self.selectionModel().selectedIndexes()
        text = self.summary_model().to_tsv(indexes or None)
        QGuiApplication.clipboard().setText(text)
        return text

    def copy_all(self) -> str:
        text = self.summary_model().to_tsv()
        QGuiApplication.clipboard().setText(text)
        return text

    def _menu(self, pos) -> None:
        menu = QMenu(self)
        menu.addAction(self.copy_action)
        menu.addAction(self.copy_all_action)
        menu.exec(self.viewport().mapToGlobal(pos))
