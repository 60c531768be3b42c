"""The window's answer and its keys (real widgets, offscreen): the one-line verdict of every
compiled variant seen without scrolling, the status bar naming the variant and round being
measured, window shortcuts with the focus in a form field, and the Help menu."""

from __future__ import annotations

import contextlib
import io
import shutil
from html import escape
from pathlib import Path

import pytest
from PySide6.QtCore import QEvent, QPoint, QRect, Qt
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence
from PySide6.QtWidgets import QApplication, QLabel, QLineEdit

from compile_studio.cli import commands as cli
from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui import export_menu
from compile_studio.gui.help_menu import ShortcutsDialog, WindowShortcutGuard, window_shortcuts
from compile_studio.gui.main_window import MainWindow
from compile_studio.results import load_run
from compile_studio.results.report.formatting import verdict_lines
from support.gui_helpers import RUN_TIMEOUT_MS, open_window, run_and_wait

#: compiled variants (and the A/A control) judged against eager in the saved run
JUDGED = ["aot_eager", "eager-aa"]


@pytest.fixture(scope="module")
def saved_run_folder(tmp_path_factory, worker_fork_server) -> Path:
    """A real tiny run of eager, aot_eager and the A/A control, three rounds, saved by the CLI
    (its main, in this process; its worker forks from the test server)."""
    from support import worker_zygote

    store = tmp_path_factory.mktemp("answer_runs")
    errors = io.StringIO()
    with worker_zygote.forked_workers(worker_fork_server), contextlib.redirect_stderr(errors):
        made = cli.main(
            ["run", "--layers", "32,32,8", "--batch-size", "4", "--device", "cpu",
             "--iterations", "30", "--warmup", "5", "--rounds", "3", "--warmup-min-ms", "0",
             "--variants", ",".join(["eager", *JUDGED]), "--compile-timing", "in_run",
             "--label", "answer", "--out", str(store), "--quiet"]
        )
    assert made == 0, errors.getvalue()[-2000:]
    [folder] = [p for p in store.iterdir() if p.is_dir()]
    return folder


def _window_with_run(qtbot, folder: Path, size: tuple[int, int]) -> MainWindow:
    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    shutil.copytree(folder, window.store.root / folder.name)
    window.history.refresh()
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    [entry] = window.history.entries()
    assert window.show_run(entry.run)
    return window


def _seen_whole(window: MainWindow, label: QLabel) -> bool:
    """Whether ``label`` is shown, not clipped by its parents, and inside the window's visible rect."""
    if not label.isVisible() or label.visibleRegion().boundingRect() != label.rect():
        return False
    top_left = label.mapTo(window, QPoint(0, 0))
    return window.rect().contains(QRect(top_left, label.size()))


def _text_fits(label: QLabel) -> bool:
    """The wrapped text needs no more height than the label has (nothing cut at the bottom)."""
    return label.heightForWidth(label.contentsRect().width()) <= label.height()


# -- the one-line answer ------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(1280, 760), (1500, 950)])
def test_verdict_sentence_of_every_compiled_variant_is_seen_without_scrolling(
    qtbot, saved_run_folder, size, tmp_path
):
    window = _window_with_run(qtbot, saved_run_folder, size)
    run = load_run(saved_run_folder)
    expected = verdict_lines(run)  # the CLI's "= …" lines, word for word
    assert [line.split(":")[0] for line in expected] == JUDGED
    qtbot.waitUntil(lambda: window.verdict_lines.texts() == expected, timeout=5000)
    for variant, line in zip(JUDGED, expected):
        label = window.verdict_lines.label_for(variant)
        assert label is not None
        qtbot.waitUntil(lambda label=label: _seen_whole(window, label) and _text_fits(label), timeout=5000)
        assert "×" in line and "[" in line and "–" in line  # the interval
        assert " — why: " in line  # and the why
        assert label.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse
        # one line each: whole, or cut with "…" and whole in its tooltip and in Full text
        assert label.sentence == line
        assert not label.elided or escape(line) in label.toolTip()
    assert (window.width(), window.height()) == size  # the sentences do not make the window taller
    # the table keeps the details, the plots their room
    assert window.table_model.rowCount() == 3
    assert window.plots.latency_plot.height() >= 250
    shot = tmp_path / f"window_{size[0]}x{size[1]}.png"
    assert window.grab().save(str(shot))


def test_verdict_sentences_follow_the_table_and_a_note_says_there_is_none_without_a_run(qtbot, saved_run_folder):
    window = _window_with_run(qtbot, saved_run_folder, (1280, 760))
    qtbot.waitUntil(lambda: len(window.verdict_lines.texts()) == 2, timeout=5000)
    window.table_model.clear()
    assert window.verdict_lines.texts() == [] and window.verdict_lines.empty_note.isVisible()
    assert window.verdict_lines.label_for("aot_eager") is None


def test_sentences_name_their_run_when_several_are_shown_and_never_render_markup(qtbot):
    from compile_studio.results import summarize
    from test_daily_visual import _run

    window = open_window(qtbot)
    runs = [_run("20250101-000001_a", "<b>A</b>"), _run("20250101-000002_b", "B", 2.0)]
    window.table_model.set_runs([(r.config.label, summarize(r)) for r in runs])
    texts = window.verdict_lines.texts()
    assert [t.split(" · ")[0] for t in texts] == ["<b>A</b>", "B"]
    label = window.verdict_lines.label_for("aot_eager", "<b>A</b>")
    assert label is not None and "&lt;b&gt;A&lt;/b&gt;" in label.text()


# -- the status bar ---------------------------------------------------------------------------------
def test_status_bar_names_the_variant_and_round_being_measured(qtbot, tiny_config):
    window = open_window(qtbot)
    seen: list[tuple[str, str, int, str]] = []

    def on_samples(variant: str, _iterations, _wall_ms, phase: str, round_index: int) -> None:
        seen.append((variant, phase, round_index, window.phase_label.text()))

    window.live.samples.connect(on_samples)
    config = BenchmarkConfig(**{**tiny_config, "rounds": 3})
    run = run_and_wait(qtbot, window, config)
    assert run.status == "complete", run.message
    measured = [s for s in seen if s[1] == "measure"]
    # every variant in every round was measured, in turn (eager, aot_eager, eager, …)
    assert {(v, r) for v, _, r, _ in measured} == {(v, r) for v in config.variants for r in range(3)}
    finishing = [i for i, s in enumerate(measured) if s[3].startswith("every call timed: checking outputs")]
    # once the last timed call is in, the status says what the run does next
    assert finishing == list(range(len(measured) - len(finishing), len(measured)))
    for variant, _, round_index, text in measured[: len(measured) - len(finishing)]:
        assert text.startswith(f"{variant}: measuring · round {round_index + 1} of 3"), (variant, text)
    for variant, _, _, text in (s for s in seen if s[1] == "warmup"):
        assert text.startswith(f"{variant}: warming up"), (variant, text)
    qtbot.waitUntil(lambda: window.phase_label.text() == "done", timeout=RUN_TIMEOUT_MS)


# -- shortcuts ------------------------------------------------------------------------------------------
def _activate(qtbot, window: MainWindow) -> None:
    window.activateWindow()
    window.raise_()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)


class _EndOfLineField(QLineEdit):
    """A field that claims Ctrl+E, as a line edit does on GNOME and KDE (end of line)."""

    def event(self, event) -> bool:
        if (
            event.type() == QEvent.Type.ShortcutOverride
            and event.key() == Qt.Key.Key_E
            and event.modifiers() == Qt.KeyboardModifier.ControlModifier
        ):
            event.accept()
            return True
        return super().event(event)


@pytest.mark.parametrize("field_kind", ["form field", "field claiming Ctrl+E"])
def test_ctrl_e_exports_with_the_focus_in_a_form_field(
    qtbot, saved_run_folder, tmp_path, monkeypatch, field_kind
):
    window = _window_with_run(qtbot, saved_run_folder, (1280, 760))
    asked: list[str] = []

    def choose_folder(_parent, title, _start):
        asked.append(title)
        return str(tmp_path)

    monkeypatch.setattr(export_menu.QFileDialog, "getExistingDirectory", staticmethod(choose_folder))
    if field_kind == "form field":
        field = next(f for f in window.config_panel.findChildren(QLineEdit) if f.isVisible() and f.isEnabled())
    else:
        field = _EndOfLineField(window.config_panel)
        window.config_panel.layout().addWidget(field)
        field.show()
    _activate(qtbot, window)
    field.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() in (field, field.parentWidget()), timeout=5000)
    before = field.text()
    with qtbot.waitSignal(window.exports.export_run_action.triggered, timeout=5000):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert len(asked) == 1  # the export asked where to
    run_id = saved_run_folder.name
    qtbot.waitUntil(lambda: (tmp_path / f"{run_id}_run.json").is_file(), timeout=5000)
    assert field.text() == before  # the field did not take the key


def test_every_window_shortcut_beats_a_focused_form_field(qtbot):
    window = open_window(qtbot)
    guard = window.shortcut_guard
    assert isinstance(guard, WindowShortcutGuard)
    field = next(f for f in window.config_panel.findChildren(QLineEdit) if f.isVisible() and f.isEnabled())
    _activate(qtbot, window)
    field.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() in (field, field.parentWidget()), timeout=5000)
    focused = QApplication.focusWidget()
    window_wide = [s for s in window_shortcuts(window) if s.scope == "window"]
    assert {"Ctrl+E", "Ctrl+R", "Ctrl+O", "Ctrl+Q"} <= {s.keys for s in window_wide}
    for act in window.actions():
        if act.shortcut().isEmpty() or not act.isEnabled():
            continue
        combo = act.shortcut()[0]
        event = QKeyEvent(QKeyEvent.Type.ShortcutOverride, combo.key(), combo.keyboardModifiers())
        event.setAccepted(False)
        QApplication.sendEvent(focused, event)
        assert not event.isAccepted(), act.shortcut().toString(QKeySequence.SequenceFormat.PortableText)
    # an ordinary key still belongs to the field
    typing = QKeyEvent(QKeyEvent.Type.ShortcutOverride, Qt.Key.Key_A, Qt.KeyboardModifier.NoModifier, "a")
    typing.setAccepted(False)
    QApplication.sendEvent(focused, typing)
    assert typing.isAccepted()


# -- the Help menu -----------------------------------------------------------------------------------
def test_help_menu_has_docs_shortcuts_and_about(qtbot, monkeypatch):
    window = open_window(qtbot)
    menus = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}
    assert "Help" in menus
    entries = [a.text() for a in menus["Help"].actions() if not a.isSeparator()]
    assert entries == ["README and documentation", "Keyboard shortcuts", "About Compile Studio"]

    opened = []
    from compile_studio.gui import help_menu

    monkeypatch.setattr(
        help_menu.QDesktopServices, "openUrl", staticmethod(lambda url: opened.append(url) or True)
    )
    window.help_menu.docs_action.trigger()
    assert len(opened) == 1 and opened[0].toLocalFile().endswith("README.md")
    # no README anywhere and no online docs: said in the status bar, nothing opened
    monkeypatch.setattr(help_menu, "readme_path", lambda: None)
    monkeypatch.setattr(help_menu, "docs_url", lambda: None)
    assert window.help_menu.open_docs() is False
    assert len(opened) == 1 and "No README" in window.statusBar().currentMessage()

    window.help_menu.shortcuts_action.trigger()
    dialog = window.help_menu.shortcuts_dialog
    assert isinstance(dialog, ShortcutsDialog) and dialog.isVisible()
    keys = dialog.keys()
    assert "Ctrl+E" in keys
    # built from the actions that define the shortcuts: each one is listed once
    defined = [a for a in window.findChildren(QAction) if not a.shortcut().isEmpty()]
    assert len(keys) == len(set(map(id, defined)))
    row = keys.index("Ctrl+E")
    assert dialog.table.item(row, 1).text() == "Export run…"
    assert dialog.table.item(keys.index("Ctrl+C"), 2).text() == "in the summary table only"

    window.help_menu.about_action.trigger()
    about = window.help_menu.about_dialog
    assert about is not None and about.isVisible()
    text = about.label.text()
    from compile_studio import __version__

    for part in (f"Compile Studio {__version__}", "Qt ", "PySide6 ", "pyqtgraph ", "Data folder:", "Settings:"):
        assert part in text, part
    assert "Licence: MIT" in text
    assert "torch: not known yet" in text


def test_about_names_the_torch_the_worker_reported(qtbot):
    from compile_studio.core.protocol import HelloEvent

    window = open_window(qtbot)
    window.machine.hello = HelloEvent(protocol=1, environment={"torch": "9.9.9+test"})
    about = window.help_menu.show_about()
    assert "torch 9.9.9+test (as the worker reported)" in about.label.text()
