"""A window that holds still and answers in full (real widgets, real runs, offscreen): the
answer's pane keeps one height, so the panes below it do not move when a run starts or
ends or runs are ticked in the history; the answer after a run is the saved run's."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QApplication, QWidget

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.verdict_lines import ROWS
from compile_studio.results import load_run
from support.gui_helpers import RUN_TIMEOUT_MS, run_and_wait

#: how far (px) a pane below the answer may move
SLACK = 2


def _open(qtbot, size: tuple[int, int]) -> MainWindow:
    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    return window


def _below_the_answer(window: MainWindow) -> dict[str, QWidget]:
    return {
        "form": window.form.scroll_area,
        "run button": window.run_button,
        "plots": window.plots,
        "plot tab": window.plots.currentWidget(),
        "bottom tabs": window.bottom_tabs,
        "table": window.table_view,
        "history": window.history,
        "history list": window.history.tree,
    }


def _geometry(window: MainWindow) -> dict[str, QRect]:
    QApplication.processEvents()
    return {
        name: QRect(w.mapTo(window, QPoint(0, 0)), w.size()) for name, w in _below_the_answer(window).items()
    }


def _moved(before: dict[str, QRect], now: dict[str, QRect]) -> list[str]:
    out = []
    for name, a in before.items():
        b = now[name]
        if max(abs(a.x() - b.x()), abs(a.y() - b.y()), abs(a.width() - b.width()), abs(a.height() - b.height())) > SLACK:
            out.append(f"{name}: {a.getRect()} -> {b.getRect()}")
    return out


def _holds(qtbot, window: MainWindow, base: dict[str, QRect], when: str) -> None:
    try:
        qtbot.waitUntil(lambda: not _moved(base, _geometry(window)), timeout=3000)
    except AssertionError:
        raise AssertionError(f"{when}: " + "; ".join(_moved(base, _geometry(window)))) from None


def _plain(html: str) -> str:
    doc = QTextDocument()
    doc.setHtml(html)
    return doc.toPlainText()


def test_panes_below_the_answer_hold_still_across_runs_and_ticks(qtbot, tiny_config):
    window = _open(qtbot, (1280, 760))
    pane = window.verdict_lines
    height = pane.pane_height()
    assert pane.height() == height and pane.empty_note.isVisible()
    base = _geometry(window)

    first = BenchmarkConfig(**{**tiny_config, "label": "first"})
    seen_running: list[dict[str, QRect]] = []
    window.live.samples.connect(lambda *_: seen_running.append(_geometry(window)) if len(seen_running) < 3 else None)
    run_a = run_and_wait(qtbot, window, first)
    assert run_a.status == "complete", run_a.message
    assert seen_running, "no samples came while the run went on"
    for during in seen_running:
        assert not _moved(base, during), _moved(base, during)
    _holds(qtbot, window, base, "after the first run")
    assert pane.height() == height and pane.texts() and not pane.empty_note.isVisible()

    run_b = run_and_wait(qtbot, window, BenchmarkConfig(**{**tiny_config, "label": "second"}))
    assert run_b.status == "complete", run_b.message
    _holds(qtbot, window, base, "after the second run")

    # ticking runs in the history: more sentences (they scroll), the panes stay put
    window.history.set_checked(run_a.run_id, True)
    window.history.set_checked(run_b.run_id, True)
    qtbot.waitUntil(lambda: len(pane.texts()) >= 2, timeout=5000)
    _holds(qtbot, window, base, "two runs ticked")
    assert pane.height() == height
    window.history.set_checked(run_a.run_id, False)
    window.history.set_checked(run_b.run_id, False)
    _holds(qtbot, window, base, "runs unticked")
    window.table_model.clear()
    _holds(qtbot, window, base, "no answer")
    assert pane.height() == height and pane.empty_note.isVisible()


def test_the_answer_after_a_run_is_the_saved_runs(qtbot, tiny_config):
    window = _open(qtbot, (1500, 950))
    config = BenchmarkConfig(**{**tiny_config, "variants": ["eager", "aot_eager", "eager-aa"], "rounds": 3})
    run = run_and_wait(qtbot, window, config)
    assert run.status == "complete", run.message
    QApplication.processEvents()
    after_run = window.verdict_lines.texts()
    table_after_run = [window.table_model.cell_text(r, "verdict") for r in range(window.table_model.rowCount())]
    assert after_run and any(" — why: " in t for t in after_run), after_run

    saved = load_run(run.source)
    window.history.refresh()
    entry = window.history.entry_for_run(run.run_id)
    assert entry is not None
    window.show_run(saved, alone=True)
    qtbot.waitUntil(lambda: window.current_run is saved, timeout=RUN_TIMEOUT_MS)
    QApplication.processEvents()
    assert window.verdict_lines.texts() == after_run
    assert [window.table_model.cell_text(r, "verdict") for r in range(window.table_model.rowCount())] == (
        table_after_run
    )

    # a sentence longer than the line ends in "…": whole in its tooltip and in Full text
    pane = window.verdict_lines
    long_ones = [t for t in after_run if " — why: " in t]
    variant = long_ones[0].split(":")[0]
    label = pane.label_for(variant)
    assert label is not None and label.sentence == long_ones[0]
    qtbot.waitUntil(lambda: label.elided, timeout=3000)
    assert _plain(label.text()).endswith("…") and label.height() == pane.row_height
    assert long_ones[0] in _plain(label.toolTip())
    before = _geometry(window)
    popup = pane.show_full_text()
    qtbot.waitUntil(popup.isVisible, timeout=3000)
    shown = " ".join(_plain(popup.text()).split())
    for text in after_run:
        assert " ".join(text.split()) in shown
    assert not _moved(before, _geometry(window))
    popup.hide()
    assert ROWS >= 2 and pane.height() == pane.pane_height()
