"""Runs told apart (real runs, real widgets, offscreen): two runs that differ only in when
they ran have short distinct names, the same in the history, the legends, the summary's axis,
the table, the answer and an exported plot's caption; the median line looks like no run's curve."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.run_names import distinct_names
from support.gui_helpers import legend_labels, run_and_wait
from test_gui_history import headless_run


def _names_of_history(window: MainWindow) -> dict[str, str]:
    return {e.listed.run_id: window.history.names.of(e.listed) for e in window.history.entries() if e.listed}


def test_two_runs_that_differ_only_in_time_are_named_apart_everywhere(qtbot, tiny_config):
    config = BenchmarkConfig(**tiny_config)
    first, second = headless_run(config, "same"), headless_run(config, "same")
    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.resize(1280, 760)
    window.show()
    names = _names_of_history(window)
    assert len(set(names.values())) == 2 and all(n.startswith("same") for n in names.values()), names

    # the history's line starts with the name: what tells them apart is not cut off
    tree = window.history.tree
    lines = [tree.topLevelItem(i).text(1) for i in range(tree.topLevelItemCount())]
    assert sorted(line.split(" · b")[0] for line in lines) == sorted(names.values()), lines

    window.history.set_checked(first.run_id, True)
    window.history.set_checked(second.run_id, True)
    QApplication.processEvents()
    legend = legend_labels(window.plots)
    assert sorted(legend) == sorted(f"{n} · {v}" for n in names.values() for v in ("eager", "aot_eager"))
    bars = [b.label for b in window.plots.summary_bars()]
    assert len(set(bars)) == len(bars) and {b.split(" · aot")[0].split(" · eager")[0] for b in bars} == set(
        names.values()
    )
    # the summary's axis: the variant under each bar, each run's name once under its bars
    ticks = window.plots.summary_plot.getPlotItem().getAxis("bottom")._tickLevels[0]
    firsts, seconds = zip(*(text.split("\n") for _, text in ticks))
    assert sorted(firsts) == sorted(["eager", "aot_eager"] * 2)
    assert sorted(s for s in seconds if s) == sorted(names.values())
    assert {r.run_name for r in window.table_model.rows()} == set(names.values())
    answers = window.verdict_lines.texts()
    assert sorted(t.split(" · aot_eager")[0] for t in answers) == sorted(names.values()), answers

    # an exported plot's caption: both runs by name, a configuration line for each
    lines = window.exports.plot_caption_lines()
    for name in names.values():
        assert f"{name} (" in lines[0], lines[0]
        assert any(line.startswith(f"{name}: MLP 32,32,8 · batch 4") for line in lines[1:-1]), lines
    assert len(lines) == 4

    # a third run of that label, from the window beside them: named apart while it runs and after
    seen_live: list[str] = []
    window.live.samples.connect(lambda *_: seen_live.append(window.views.live_name()))
    third = run_and_wait(qtbot, window, BenchmarkConfig(**{**tiny_config, "label": "same"}))
    assert third.status == "complete", third.message
    assert seen_live and seen_live[0] not in names.values() and seen_live[0].startswith("same")
    names = _names_of_history(window)
    assert len(set(names.values())) == 3
    legend = legend_labels(window.plots)
    assert sorted(legend) == sorted(f"{n} · {v}" for n in names.values() for v in ("eager", "aot_eager")), legend
    assert len({r.run_name for r in window.table_model.rows()}) == 3

    # the median line is drawn as no run's curve is: "dashed" is the second run's alone
    latency = window.plots.latency
    median = latency.curves[f"{first.run_id}/eager"].median_line.pen
    second_key = next(k for k in latency.curves if window.plots.run_style_of(k) == 1)
    second_pen = latency.curves[second_key].measure_curve.opts["pen"]
    assert second_pen.style() == Qt.PenStyle.CustomDashLine
    assert median.style() == Qt.PenStyle.SolidLine and median.widthF() >= 2 * second_pen.widthF()
    from compile_studio.gui.plots import latency as latency_module

    assert not [t for t in vars(latency_module).values() if isinstance(t, str) and "dashed: median" in t]


def test_distinct_names_use_the_time_then_the_date_then_a_number():
    from datetime import datetime

    a, b = datetime(2026, 12, 6, 14, 2, 31), datetime(2026, 12, 7, 14, 2, 31)
    assert distinct_names([("x", a, "r1"), ("y", a, "r2")]) == ["x", "y"]
    assert distinct_names([("x", a, "r1"), ("x", a.replace(second=40), "r2")]) == ["x · 14:02:31", "x · 14:02:40"]
    assert distinct_names([("x", a, "r1"), ("x", b, "r2")]) == ["x · 12-06 14:02:31", "x · 12-07 14:02:31"]
    assert distinct_names([("x", a, "r1"), ("x", a, "r2")]) == ["x · 12-06 14:02:31", "x · 12-06 14:02:31 #2"]
    assert distinct_names([("", a, "r1"), ("", b, "r2")]) == ["12-06 14:02:31", "12-07 14:02:31"]
