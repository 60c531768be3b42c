"""The run history: saved runs of the run store (and runs opened from elsewhere).

Click a run to show it; tick runs to overlay them on the plots and in the
summary table; a context menu shows a run alone, overlays it, loads its
configuration into the form, opens its folder, exports it or deletes it. Runs
are listed newest first, runs opened from elsewhere among them by date.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..results import RunDamaged, RunResult, RunStore, load_run
from ..results.storage.summary_cache import summary_of
from .history_entry import (
    PENDING_SPEEDUP,
    HistoryEntry,
    best_verdict_text,
    best_verdict_tip,
    date_text,
    date_text_of_folder,
    entry_date,
    run_device,
    run_line,
    samples_bytes,
)
from .history_entry import run_display_name as run_display_name  # the window's too
from .history_menu import confirm_with_dialog, history_menu
from .run_names import RunNames

COLUMNS = ["date", "model", "device", "variants", "status", "best speedup"]
#: The header of each column (the best speedup column holds the best verdict: "faster 1.40×",
#: "cannot tell", "slower 0.82×", "incorrect", "failed").
HEADERS = {"best speedup": "best verdict", "model": "run"}
#: The columns left to right as shown: what a run is, how it did, then the rest.
VISUAL_ORDER = ["model", "best speedup", "status", "date", "device", "variants"]
#: Widest the model column starts (px): the column takes what the best speedup and the
#: status leave of the list's width, within these bounds (the user may drag it).
MODEL_COLUMN_WIDTH = 190
#: Narrowest the model column is made to fit; its text is elided, its tooltip has it all.
MODEL_COLUMN_MIN_WIDTH = 90
_ROLE = Qt.ItemDataRole.UserRole
_MODEL = COLUMNS.index("model")
#: The column holding a run's tick (overlay on/off): the first one shown.
CHECK_COLUMN = _MODEL


def _open_with_desktop(path: Path) -> bool:
    return QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))


class HistoryPanel(QWidget):
    """Lists saved runs; ticked runs are offered for overlay (``overlay_changed``).

    A click (or Enter, or a double-click) on a run asks to show it
    (``show_requested``); the context menu (:meth:`menu_for`) offers the rest.
    ``confirm_delete(parent, text) -> bool`` asks before a deletion and
    ``open_folder(path) -> bool`` opens a folder in the file manager; replace
    them to answer without a dialog. ``message`` carries problems (a run that
    cannot be opened or deleted) for the window to show.
    """

    overlay_changed = Signal()
    message = Signal(str)
    #: show this run (a RunResult) in the plots and the table; the bool: alone (no overlays)
    show_requested = Signal(object, bool)
    #: load this configuration (a BenchmarkConfig) into the form; the Path: the run it came from
    load_config_requested = Signal(object, object)
    #: export this run (a RunResult)
    export_requested = Signal(object)
    #: a summary computed in the background: (entry key, rows, counts), or (key, None, why)
    _summary_ready = Signal(str, object, object)
    #: a run's samples were read in the background: (entry key, alone)
    _loaded = Signal(str, bool)

    def __init__(self, store: RunStore, parent: QWidget | None = None):
        super().__init__(parent)
        self.store = store
        #: the folder of the run in progress (the window sets it): that run cannot be deleted
        self.running_folder: Callable[[], Path | None] = lambda: None
        self.confirm_delete: Callable[[QWidget, str], bool] = confirm_with_dialog
        self.open_folder: Callable[[Path], bool] = _open_with_desktop
        self._toggled = False
        self._entries: list[HistoryEntry] = []
        #: the runs' short distinct names (the window's legends, table and exports use them too)
        self.names = RunNames()
        self._external: list[HistoryEntry] = []
        self._checked: set[str] = set()
        self._updating = False

        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels([HEADERS.get(c, c) for c in COLUMNS])
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(True)
        self.tree.setToolTip(
            "Click a run to show it; tick runs to overlay them on the plots and in the table; "
            "right-click for more."
        )
        header = self.tree.header()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        for visual, name in enumerate(VISUAL_ORDER):
            header.moveSection(header.visualIndex(COLUMNS.index(name)), visual)
        header.setSectionResizeMode(_MODEL, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(_MODEL, MODEL_COLUMN_WIDTH)
        self._fitting = False
        #: whether the model column is fitted to the width (until the user drags it)
        self._model_width_fitted = True
        header.sectionResized.connect(self._section_resized)
        # "label · model …": what a run is reads from the left; the tooltip has it all
        self.tree.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.tree.viewport().installEventFilter(self)
        self._summary_ready.connect(self._on_summary_ready)
        self._loaded.connect(self._on_loaded)
        self._loading: set[str] = set()
        self._summarizing: set[str] = set()
        self.tree.itemChanged.connect(self._item_changed)
        self.tree.itemClicked.connect(self._item_clicked)
        self.tree.itemActivated.connect(self._item_activated)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._context_menu)
        self.tree.itemSelectionChanged.connect(self._update_buttons)

        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh)
        self.open_button = QPushButton("Open…")
        self.open_button.setToolTip("Open a run folder, its run.json, or a samples.csv")
        self.open_button.clicked.connect(self.open_dialog)
        self.delete_button = QPushButton("Delete")
        self.delete_button.clicked.connect(self.delete_selected)
        self.count_label = QLabel()

        # the count on its own line: beside the buttons a narrow panel clipped it
        self.count_label.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addWidget(self.refresh_button)
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.delete_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.count_label)
        layout.addWidget(self.tree)
        layout.addLayout(buttons)
        self._update_buttons()

    # -- listing -----------------------------------------------------------------
    def refresh(self) -> None:
        """Read the run store again (ticks are kept for runs still there).

        Each run is listed from its run.json (its stored summary): no
        samples are read here. A run of an older version, with no summary
        stored or cached, shows PENDING_SPEEDUP until its summary, computed
        once in the background and cached, arrives.
        """
        listings = self.store.list_runs(samples=False)
        self._entries = [HistoryEntry(x.folder, x.run, x.problem) for x in listings]
        self._entries += [e for e in self._external if e.path.exists()]
        self._entries.sort(key=entry_date, reverse=True)
        self.names.update(e.listed for e in self._entries if e.listed is not None)
        known = {self._key(e) for e in self._entries}
        before = set(self._checked)
        self._checked &= known
        self._fill()
        if self._checked != before:
            self.overlay_changed.emit()

    @staticmethod
    def _key(entry: HistoryEntry) -> str:
        return str(entry.path)

    def _summarize_in_background(self, entries: list[HistoryEntry]) -> None:
        """Summaries of runs of older versions, computed (and cached) off the GUI thread.

        Each is computed on a run read anew in that thread; only the rows
        come back (:meth:`_on_summary_ready`).
        """
        todo = [(self._key(e), e.path) for e in entries if self._key(e) not in self._summarizing]
        if not todo:
            return
        self._summarizing.update(key for key, _ in todo)
        ready = self._summary_ready

        def work() -> None:
            for key, path in todo:
                try:
                    run = load_run(path, samples=False)
                    rows = summary_of(run)
                    ready.emit(key, rows, dict(run.summary_counts))
                except Exception as exc:  # noqa: BLE001 - shown on its line, never raised
                    ready.emit(key, None, str(exc) or type(exc).__name__)

        threading.Thread(target=work, name="history-summaries", daemon=True).start()

    def _on_summary_ready(self, key: str, rows: object, counts: object) -> None:
        self._summarizing.discard(key)
        entry = next((e for e in self._entries if self._key(e) == key), None)
        if entry is None or entry.listed is None:
            return
        run = entry.listed
        if isinstance(rows, list) and isinstance(counts, dict) and run.known_summary() is None:
            if run.samples_loaded:
                if counts == {n: len(v.samples) for n, v in run.variants.items()}:
                    run.set_summary(rows, counts)
            else:
                run.set_summary(rows, counts)
        item = self.item_for(entry)
        if item is not None:
            text = best_verdict_text(run)
            item.setText(_SPEEDUP, "–" if text == PENDING_SPEEDUP else text)
            if not isinstance(rows, list):
                item.setToolTip(_SPEEDUP, f"No summary: {counts}")
            else:
                item.setToolTip(_SPEEDUP, "\n".join(filter(None, [best_verdict_tip(run), item.toolTip(_MODEL)])))

    def _fill(self) -> None:
        self._updating = True
        pending = []
        try:
            self.tree.clear()
            items = [self._item(entry) for entry in self._entries]
            self.tree.addTopLevelItems(items)
            for entry, item in zip(self._entries, items):
                if item.text(_SPEEDUP) == PENDING_SPEEDUP:
                    pending.append(entry)
        finally:
            self._updating = False
        if pending:
            self._summarize_in_background(pending)
        runs = sum(1 for e in self._entries if not e.damaged)
        damaged = len(self._entries) - runs
        self.count_label.setText(
            f"{runs} run{'s' if runs != 1 else ''}" + (f", {damaged} damaged" if damaged else "")
        )
        self._update_buttons()
        self.fit_columns()

    # -- column widths -------------------------------------------------------------
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        """Fit the columns whenever the list's viewport changes width."""
        if watched is self.tree.viewport() and event.type() == QEvent.Type.Resize:
            self.fit_columns()
        return super().eventFilter(watched, event)

    def _section_resized(self, logical: int, old: int, new: int) -> None:
        if self._fitting:
            return
        if logical == _MODEL:
            self._model_width_fitted = False  # the user dragged it: keep their width
        elif COLUMNS[logical] in VISUAL_ORDER[1:3]:
            self.fit_columns()  # the best speedup or the status changed width with its texts

    def fit_columns(self) -> None:
        """Give the model column what the best speedup and the status leave of the list's
        width, so that the three are seen without scrolling sideways (the model's text is
        elided, never the status; the other columns follow to the right)."""
        if not self._model_width_fitted:
            return
        header = self.tree.header()
        others = sum(
            header.sectionSize(COLUMNS.index(name))
            for name in VISUAL_ORDER[1:3]
            if not header.isSectionHidden(COLUMNS.index(name))
        )
        room = self.tree.viewport().width() - others - 2
        width = max(MODEL_COLUMN_MIN_WIDTH, min(MODEL_COLUMN_WIDTH, room))
        if header.sectionSize(_MODEL) != width:
            self._fitting = True
            try:
                header.resizeSection(_MODEL, width)
            finally:
                self._fitting = False

    def _item(self, entry: HistoryEntry) -> QTreeWidgetItem:
        run = entry.listed
        if run is None:
            texts = [
                date_text_of_folder(entry.path),
                entry.path.name,
                "",
                "",
                "damaged",
                "",
            ]
            item = QTreeWidgetItem(texts)
            tip = f"{entry.path}\nCannot be read: {entry.problem}"
            for c in range(len(COLUMNS)):
                item.setToolTip(c, tip)
            item.setForeground(4, Qt.GlobalColor.darkRed)
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsUserCheckable)
        else:
            config = run.config
            texts = [
                date_text(run.created),
                run_line(run, self.names.of(run)),
                run_device(run) if config is not None else "",
                ", ".join(run.variants),
                run.status + (" (opened)" if entry.external else ""),
                best_verdict_text(run),
            ]
            item = QTreeWidgetItem(texts)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(
                CHECK_COLUMN,
                Qt.CheckState.Checked
                if self._key(entry) in self._checked
                else Qt.CheckState.Unchecked,
            )
            tip = "\n".join([texts[1], str(entry.path)] + ([run.message] if run.message else []))
            for c in range(len(COLUMNS)):
                item.setToolTip(c, tip)
            best = best_verdict_tip(run) if texts[-1] != PENDING_SPEEDUP else ""
            if best:
                item.setToolTip(_SPEEDUP, f"{best}\n{tip}")
        item.setData(0, _ROLE, self._key(entry))
        return item

    # -- ticking ---------------------------------------------------------------------
    def _item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if self._updating or column != CHECK_COLUMN:
            return
        key = item.data(0, _ROLE)
        checked = item.checkState(CHECK_COLUMN) == Qt.CheckState.Checked
        if checked == (key in self._checked):
            return
        self._toggled = True
        if checked:
            self._checked.add(key)
        else:
            self._checked.discard(key)
        self.overlay_changed.emit()

    def entries(self) -> list[HistoryEntry]:
        return list(self._entries)

    def _entry_of(self, item: QTreeWidgetItem | None) -> HistoryEntry | None:
        if item is None:
            return None
        key = item.data(0, _ROLE)
        return next((e for e in self._entries if self._key(e) == key), None)

    def item_for(self, entry: HistoryEntry) -> QTreeWidgetItem | None:
        key = self._key(entry)
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            if item is not None and item.data(0, _ROLE) == key:
                return item
        return None

    def is_checked(self, entry: HistoryEntry) -> bool:
        return self._key(entry) in self._checked

    def uncheck_all(self, keep: HistoryEntry | None = None) -> None:
        """Untick every run (but ``keep``)."""
        kept = {self._key(keep)} if keep is not None else set()
        if self._checked <= kept:
            return
        self._checked &= kept
        self._fill()
        self.overlay_changed.emit()

    # -- clicks and the context menu ------------------------------------------------------
    def _item_clicked(self, item: QTreeWidgetItem, column: int) -> None:
        toggled, self._toggled = self._toggled, False
        if not toggled:
            self._item_activated(item, column)

    def _item_activated(self, item: QTreeWidgetItem, column: int) -> None:
        entry = self._entry_of(item)
        if entry is not None:
            self.show_entry(entry)

    def show_entry(self, entry: HistoryEntry, alone: bool = False) -> None:
        """Ask to show ``entry``'s run; ``alone`` unticks every other run first.

        A large run whose samples are not read yet is read (and, when it has
        no summary of this version, summarised) off the GUI thread: its line
        says ``loading…`` until ``show_requested`` is emitted.
        """
        listed = entry.listed
        if listed is None:
            return
        if alone:
            self.uncheck_all()
        if listed.samples_loaded or samples_bytes(entry.path) < SYNC_LOAD_BYTES:
            run = entry.run
            if run is not None:
                self.show_requested.emit(run, alone)
            return
        self._load_in_background(entry, alone)

    def _load_in_background(self, entry: HistoryEntry, alone: bool) -> None:
        key = self._key(entry)
        if key in self._loading:
            return
        self._loading.add(key)
        item = self.item_for(entry)
        if item is not None:
            item.setText(_STATUS, "loading…")
        ready = self._loaded

        def work() -> None:
            run = entry.run  # reads the samples (under the entry's lock)
            if run is not None:
                try:
                    summary_of(run)
                except Exception:  # noqa: BLE001 - the window computes it again if need be
                    pass
            ready.emit(key, alone)

        threading.Thread(target=work, name="history-load", daemon=True).start()

    def _on_loaded(self, key: str, alone: bool) -> None:
        self._loading.discard(key)
        entry = next((e for e in self._entries if self._key(e) == key), None)
        if entry is None:
            return
        item = self.item_for(entry)
        if item is not None:
            self._fill_item_texts(entry, item)
        run = entry.run
        if run is None:
            self.message.emit(f"Cannot open {entry.path.name}: {entry.problem}")
            return
        self.show_requested.emit(run, alone)

    def _fill_item_texts(self, entry: HistoryEntry, item: QTreeWidgetItem) -> None:
        fresh = self._item(entry)
        for c in range(len(COLUMNS)):
            item.setText(c, fresh.text(c))
            item.setToolTip(c, fresh.toolTip(c))

    def export_entry(self, entry: HistoryEntry) -> None:
        """Ask for the export of ``entry``'s run (:attr:`export_requested`)."""
        self.export_requested.emit(entry.run)

    def load_config_of(self, entry: HistoryEntry) -> None:
        run = entry.listed
        if run is None or run.config is None:
            self.message.emit(f"{entry.path.name} has no configuration to load")
            return
        self.load_config_requested.emit(run.config, entry.path)

    def open_folder_of(self, entry: HistoryEntry) -> bool:
        folder = entry.path if entry.path.is_dir() else entry.path.parent
        if not self.open_folder(folder):
            self.message.emit(f"Cannot open the folder {folder}")
            return False
        return True

    def menu_for(self, entry: HistoryEntry) -> QMenu:
        """The context menu of ``entry`` (its actions are named as they read)."""
        return history_menu(self, self, entry)

    def _context_menu(self, pos: QPoint) -> None:
        entry = self._entry_of(self.tree.itemAt(pos))
        if entry is None:
            return
        self.select(entry)
        self.menu_for(entry).exec(self.tree.viewport().mapToGlobal(pos))

    def entry_for_run(self, run_id: str) -> HistoryEntry | None:
        for e in self._entries:
            if e.listed is not None and e.listed.run_id == run_id:
                return e
        return None

    def checked_runs(self) -> list[RunResult]:
        """The ticked runs, in list order."""
        return [
            run for e in self._entries if self._key(e) in self._checked and (run := e.run) is not None
        ]

    def set_checked(self, entry: HistoryEntry | str, checked: bool) -> None:
        """Tick or untick a run (by entry or run id)."""
        if isinstance(entry, str):
            found = self.entry_for_run(entry)
            if found is None:
                raise KeyError(entry)
            entry = found
        key = self._key(entry)
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            if item is not None and item.data(0, _ROLE) == key:
                item.setCheckState(CHECK_COLUMN, Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
                return
        raise KeyError(key)

    # -- open ------------------------------------------------------------------------
    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self,
            "Open run",
            str(self.store.root),
            "Runs (run.json *.csv);;All files (*)",
        )
        if path:
            self.open_run(Path(path))

    def open_run(self, path: str | Path) -> RunResult | None:
        """Open a run folder, run.json or samples.csv, list it and tick it for overlay."""
        path = Path(path)
        try:
            run = load_run(path)
        except RunDamaged as exc:
            self.message.emit(f"Cannot open {path.name}: {exc}")
            return None
        except OSError as exc:
            self.message.emit(f"Cannot open {path.name}: {exc.strerror or exc}")
            return None
        folder = path if path.is_dir() else path.parent
        in_store = folder.resolve().parent == self.store.root.resolve() and (
            path.is_dir() or path.name in ("run.json", "samples.csv")
        )
        entry_path = folder if in_store else path
        if not in_store and all(e.path != entry_path for e in self._external):
            self._external.append(HistoryEntry(entry_path, run, external=True))
        self._checked.add(str(entry_path))
        self.refresh()
        self.overlay_changed.emit()
        return run

    # -- delete ------------------------------------------------------------------------
    def _selected_entry(self) -> HistoryEntry | None:
        items = self.tree.selectedItems()
        return self._entry_of(items[0]) if items else None

    def select(self, entry: HistoryEntry) -> None:
        key = self._key(entry)
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            if item is not None:
                item.setSelected(item.data(0, _ROLE) == key)

    def _update_buttons(self) -> None:
        self.delete_button.setEnabled(self._selected_entry() is not None)

    def delete_selected(self) -> bool:
        entry = self._selected_entry()
        return self.delete_entry(entry) if entry is not None else False

    def is_running(self, entry: HistoryEntry) -> bool:
        folder = self.running_folder()
        try:
            return folder is not None and folder.resolve() == entry.path.resolve()
        except OSError:
            return False

    def delete_entry(self, entry: HistoryEntry) -> bool:
        """Delete a run folder of the store (an opened run is only removed from the list).

        Asks ``confirm_delete`` first; returns whether anything was removed.
        """
        if self.is_running(entry):
            self.message.emit(f"{entry.path.name} is the run in progress: stop it before deleting it")
            return False
        if entry.external:
            self._external = [e for e in self._external if e.path != entry.path]
            self._checked.discard(self._key(entry))
            self.refresh()
            self.overlay_changed.emit()
            return True
        name = entry.path.name
        if not self.confirm_delete(
            self, f"Delete the run {name}?\n\nIts folder and every file in it are removed."
        ):
            return False
        try:
            self.store.delete(entry.path)
        except (OSError, ValueError) as exc:
            self.message.emit(f"Cannot delete {name}: {exc}")
            return False
        was_checked = self._key(entry) in self._checked
        self._checked.discard(self._key(entry))
        self.refresh()
        if was_checked:
            self.overlay_changed.emit()
        return True


_SPEEDUP = COLUMNS.index("best speedup")
_STATUS = COLUMNS.index("status")
#: samples.csv smaller than this is read on the GUI thread when a run is shown (a few
#: thousand calls: milliseconds); a larger one off it.
SYNC_LOAD_BYTES = 2 * 1024 * 1024
