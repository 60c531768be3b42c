"""The summary table: one row per variant (of one or several runs), copyable as TSV."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QAction, QBrush, QColor, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QMenu, QTableView, QWidget

from ..results import SummaryRow
from ..results.formatting import HEADER_HELP, SUMMARY_HEADERS, summary_cells

_FAILED = QColor("#F8D7DA")
_WRONG = QColor("#FFE0B2")
_NOISY = QColor("#FFF8C5")
_ERROR_TEXT = QColor("#B00020")

_Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class TableRow:
    """One row of the table: the run it belongs to and its summary row."""

    run_name: str
    row: SummaryRow


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
    def set_runs(self, runs: list[tuple[str, list[SummaryRow]]]) -> None:
        """Show the rows of each ``(run name, rows)``; a run column appears for two or more runs."""
        self.beginResetModel()
        self._show_run = len(runs) > 1
        self._rows = [TableRow(name, row) for name, rows in runs for row in rows]
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
            return self._tooltip(row, column)
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
            return row.verdict_text
        if column == "checks" and row.n:
            return (row.checks + "\n\n" if row.checks else "") + (
                "Checks of this variant's timed calls: drift (its per-round medians move by more "
                "than 10 % across the run), two levels (the calls fall into a fast and a slow "
                "group), heavy tail (p99 more than twice the median). Drift and two levels "
                "make a verdict impossible; a heavy tail is only reported."
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
                f"{row.recompiles_in_window} recompile(s) inside the timed window: "
                "not steady state."
            )
        if row.allclose is False:
            notes.append(
                f"Output differs from the fp64 reference beyond tolerance "
                f"(max abs {row.max_abs_error}, max rel {row.max_rel_error})."
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
    """The view of a :class:`SummaryTableModel`: Ctrl+C copies the selection, a menu copies all."""

    def __init__(self, model: SummaryTableModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.setModel(model)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setAlternatingRowColors(True)
        self.verticalHeader().hide()
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.horizontalHeader().setStretchLastSection(True)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)
        self.copy_action = QAction("Copy", self)
        self.copy_action.setShortcut(QKeySequence.StandardKey.Copy)
        self.copy_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.copy_action.triggered.connect(self.copy_selection)
        self.addAction(self.copy_action)
        self.copy_all_action = QAction("Copy whole table", self)
        self.copy_all_action.triggered.connect(self.copy_all)
        model.modelReset.connect(self.resizeColumnsToContents)

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
