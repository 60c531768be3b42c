"""The Why tab in the window, with real widgets at the sizes users have: the compile-phase legend
never over a bar, "cache load" in a colour of its own with its label, axis texts that fit, the
operator table readable at 1280×760, the panes' heights given back when the tab is left, and a
sweep point opened from the sweep chart showing its own diagnostics (a real sweep)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QFontMetricsF

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.colors import SERIES_COLORS
from compile_studio.gui.paths import runs_dir
from compile_studio.gui.why_evidence import CACHE_LOAD, NAME_MIN_WIDTH
from compile_studio.jobs.sweep_spec import SweepSpec
from compile_studio.results import load_run
from compile_studio.results.explain.why_files import load_why
from support.gui_helpers import open_window
from support.untrusted_helpers import saved_run

#: A compiled variant with a long name: the chart's left axis must show it whole.
LONG = "max-autotune-no-cudagraphs"
#: Operators and kernels as a profile names them, some far longer than a narrow column.
OPS = [
    ("(Python and framework, outside any operator)", 0.204, 1, 0.336),
    ("aten::addmm", 0.0992, 3, 0.163),
    ("## Call CompiledFxGraph fq4tq7iktct643bqxq5o5pqbiofy ##", 0.0853, 1, 0.141),
    ("triton_per_fused__native_layer_norm_add_mul_rsqrt_view_0", 0.0731, 2, 0.121),
    ("AOTDispatcher Runtime Wrapper Prologue", 0.0107, 1, 0.018),
    ("aten::resolve_conj", 0.0017, 6, 0.003),
]
#: A warm compile (its backend loaded the cached graph) and a cold one.
WARM = {"Dynamo tracing": 0.49, "AOT autograd": 0.0, "C++/Triton build": 0.0, CACHE_LOAD: 1.83}
COLD = {"Dynamo tracing": 0.45, "AOT autograd": 1.74, "Inductor lowering": 0.5, "C++/Triton build": 11.96}


def _profile() -> dict:
    return {
        "calls": 5, "wall_ms_per_call": 0.6067,
        "ops": [{"name": n, "self_ms_per_call": ms, "calls_per_call": c, "share": s} for n, ms, c, s in OPS],
    }


def write_why(folder: Path) -> None:
    """A why.json of eager, a warm-compiled default and a cold-compiled variant with a long name."""
    variants = {"eager": {"compiled": False, "profile": _profile()}}
    for name, phases in (("default", WARM), (LONG, COLD)):
        variants[name] = {
            "compiled": True, "profile": _profile(),
            "compile": {"graphs": 1, "first_call_ms": sum(phases.values()) * 1000 + 60, "phases": phases},
        }
    (folder / "why.json").write_text(json.dumps({"variants": variants}))


@pytest.fixture
def why_run() -> Path:
    folder = saved_run(runs_dir(), label="why", variants=("eager", "default", LONG))
    write_why(folder)
    return folder


def why_window(qtbot, folder: Path, size: tuple[int, int], why: bool = True):
    """A window of ``size`` showing the run in ``folder`` (on its Why tab when ``why``)."""
    window = open_window(qtbot)
    window.resize(*size)
    qtbot.waitExposed(window)
    assert window.show_run(load_run(folder), alone=True)
    if why:
        window.bottom_tabs.setCurrentWidget(window.why_view)
        qtbot.waitUntil(lambda: window.why_view.phases.bars and window.why_view.phases.isVisible(), timeout=5000)
    return window


def shown_chart(qtbot, window):
    """The Why tab's phase chart, scrolled into view (pyqtgraph places its items when it paints)."""
    view = window.why_view
    view.scroll_area.ensureWidgetVisible(view.phases)
    qtbot.waitUntil(lambda: not view.phases.viewport().visibleRegion().isEmpty(), timeout=5000)
    return view.phases


def _phase_bars(chart) -> dict[str, object]:
    """Each phase named in the legend → its bar item."""
    return {label.text: sample.item for sample, label in chart.legend.items}


def _luminance(color: QColor) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(color.redF()) + 0.7152 * channel(color.greenF()) + 0.0722 * channel(color.blueF())


def _contrast(a: QColor, b: QColor) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


# -- (a) the legend ---------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(1280, 760), (1920, 1080)])
def test_the_phase_legend_lies_outside_every_bar(qtbot, why_run, size):
    chart = shown_chart(qtbot, why_window(qtbot, why_run, size))

    def apart():
        legend = chart.legend.sceneBoundingRect()
        assert chart.legend.isVisible() and legend.height() > 0
        assert QRectF(chart.viewport().rect()).contains(legend)  # and not cut off either
        for bar in chart.bars:
            assert not legend.intersects(bar.sceneBoundingRect()), (legend, bar.sceneBoundingRect())

    qtbot.waitUntil(apart, timeout=5000)
    assert set(_phase_bars(chart)) >= {"Dynamo tracing", "AOT autograd", CACHE_LOAD, "first call"}


# -- (b) cache load ------------------------------------------------------------------------------------
def test_cache_load_is_a_readable_colour_of_its_own_and_says_what_it_is(qtbot, why_run):
    chart = shown_chart(qtbot, why_window(qtbot, why_run, (1920, 1080)))
    bars = {name: item for name, item in _phase_bars(chart).items() if item in chart.bars}
    colours = {name: QColor(bar.opts["brush"]).name().upper() for name, bar in bars.items()}
    assert len(set(colours.values())) == len(colours)  # a colour per phase
    assert set(colours.values()) <= set(SERIES_COLORS)  # from gui/colors.py
    assert not set(colours.values()) & {"#000000", "#F0E442"}  # never black (nor yellow)
    (label,) = chart.cache_labels
    assert label.toPlainText() == "cache load 1.8 s"
    assert _contrast(QColor(colours[CACHE_LOAD]), label.color) >= 4.5  # its text reads on it

    def inside():
        assert chart.item.getViewBox().sceneBoundingRect().contains(label.sceneBoundingRect())

    qtbot.waitUntil(inside, timeout=5000)


# -- (c) the axes -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(1280, 760), (1920, 1080)])
def test_the_charts_axis_texts_fit_inside_it(qtbot, why_run, size):
    chart = shown_chart(qtbot, why_window(qtbot, why_run, size))
    left = chart.item.getAxis("left")
    bottom = chart.item.getAxis("bottom")
    names = [text for _, text in left._tickLevels[0]]
    assert names == ["default", LONG]  # whole, the first variant on top
    view = QRectF(chart.viewport().rect())

    def fitting():
        metrics = QFontMetricsF(left.style["tickFont"] or chart.font())
        for name in names:
            assert metrics.horizontalAdvance(name) + left.style["tickTextOffset"][0] <= left.width()
        assert left.sceneBoundingRect().left() >= 0
        # the axis label's text (inside its box's 4 px margin) below the tick texts and inside the chart
        label = bottom.label
        text = label.mapRectToScene(label.boundingRect().adjusted(4, 4, -4, -4))
        assert view.contains(text), (text, view)
        assert text.top() >= bottom.sceneBoundingRect().top() + metrics.height()
        assert chart.title.sceneBoundingRect().width() <= view.width()

    qtbot.waitUntil(fitting, timeout=5000)


# -- (d) the operator table -------------------------------------------------------------------------------
def test_the_operator_table_is_readable_at_1280x760(qtbot, why_run):
    view = why_window(qtbot, why_run, (1280, 760)).why_view
    table = view.ops
    view.scroll_area.ensureWidgetVisible(table)
    assert table.rowCount() == len(OPS)
    metrics = table.fontMetrics()
    pad = 2 * table.style().pixelMetric(table.style().PixelMetric.PM_FocusFrameHMargin) + 2

    def readable():
        assert table.columnWidth(0) >= NAME_MIN_WIDTH
        for j in range(1, table.columnCount()):
            width = table.columnWidth(j)
            assert metrics.horizontalAdvance(table.horizontalHeaderItem(j).text()) <= width
            for i in range(table.rowCount()):
                assert metrics.horizontalAdvance(table.item(i, j).text()) + pad <= width  # figures whole
        for i, (name, *_rest) in enumerate(OPS):
            item = table.item(i, 0)
            fits = metrics.horizontalAdvance(name) + pad <= table.columnWidth(0)
            assert fits or item.toolTip() == name  # else elided, the whole name in its tooltip
        assert table.viewport().height() >= 4 * table.rowHeight(0)  # rows to read, not a sliver
        total = sum(table.columnWidth(j) for j in range(table.columnCount()))
        if total > table.viewport().width():
            assert table.horizontalScrollBar().maximum() > 0  # scrolled sideways, not squashed

    qtbot.waitUntil(readable, timeout=5000)
    assert any(metrics.horizontalAdvance(n) > table.columnWidth(0) for n, *_ in OPS)  # some elided at 1280


# -- (e) the panes ------------------------------------------------------------------------------------------
def test_leaving_the_why_tab_gives_the_plots_their_height_back(qtbot, why_run):
    window = why_window(qtbot, why_run, (1280, 760), why=False)
    plot = window.plots.latency_plot
    qtbot.waitUntil(lambda: plot.height() > 0, timeout=5000)
    height, sizes = plot.height(), window.centre_splitter.sizes()
    window.bottom_tabs.setCurrentWidget(window.why_view)
    qtbot.waitUntil(lambda: plot.height() < height, timeout=5000)  # the Why tab was given room
    window.bottom_tabs.setCurrentWidget(window.log)
    qtbot.waitUntil(lambda: plot.height() == height, timeout=5000)
    assert window.centre_splitter.sizes() == sizes
    # closed on the Why tab: the heights kept are those from before it grew its pane
    window.bottom_tabs.setCurrentWidget(window.why_view)
    qtbot.waitUntil(lambda: plot.height() < height, timeout=5000)
    window.save_settings()
    again = open_window(qtbot)
    again.resize(1280, 760)
    qtbot.waitExposed(again)
    qtbot.waitUntil(lambda: again.centre_splitter.sizes() == sizes, timeout=5000)
    # a height the user dragged to on the Why tab stays theirs
    window.centre_splitter.moveSplitter(sum(sizes) // 2, 1)
    dragged = window.centre_splitter.sizes()
    window.bottom_tabs.setCurrentWidget(window.table_view)
    assert window.centre_splitter.sizes() == dragged


# -- (f) a sweep point ---------------------------------------------------------------------------------------
def test_a_sweep_point_opened_from_the_chart_shows_its_own_diagnostics(qtbot):
    window = open_window(qtbot)
    view = window.sweep_view
    base = BenchmarkConfig.from_dict(
        {"layers": "32,32,8", "device": "cpu", "iterations": 10, "warmup": 2, "rounds": 1, "warmup_min_ms": 0,
         "variants": ["eager", "aot_eager"], "compile_timing": "in_run", "diagnostics": True}
    )
    assert view.start(SweepSpec.parse("batch_size", "2,4"), base)
    qtbot.waitUntil(lambda: not view.is_running(), timeout=180_000)
    assert [p.status for p in view.record.points] == ["complete", "complete"], view.record.message
    point = view.record.points[1]
    folder = view.folder.path / point.run
    assert folder.parent == view.folder.path and (folder / "why.json").is_file()
    marker = next(m for m in view.plot.markers if m.index == point.index)
    window.bottom_tabs.setCurrentWidget(window.why_view)
    assert view.plot.activate_at(view.plot.marker_scene_pos(marker)) == point.index  # the double-click
    assert window.current_run is not None and window.current_run.source == folder
    why = window.why_view
    assert why.folder == folder
    assert not why.sentence.text().startswith("No diagnostics"), why.sentence.text()
    expected = load_why(folder)
    assert [why.variant_box.itemText(k) for k in range(why.variant_box.count())] == list(expected.variants)
    assert why.variant_box.currentText() == "aot_eager" and why.ops.rowCount() > 0
    assert why.phases.names == ["aot_eager"]
