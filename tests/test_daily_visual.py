"""Daily-use visuals with real widgets (offscreen): frozen variant column, columns hidden and
remembered, run dash styles with variant colours, plain log ticks, a caption that wraps, the
distribution's clipped range, the empty-plot hint, captioned exports without embedded images."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QImage

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.image_export import _captioned, caption_html, save_plot_png
from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.plots import PlotPanel
from compile_studio.gui.plots.style import SideLegend, plain_number, run_dash
from compile_studio.gui.summary_table import SummaryTableModel, SummaryTableView
from compile_studio.results import RunResult, VariantResult, summarize
from support.gui_helpers import distribution_note, histogram_data, legend_labels, series_color

SVG = "{http://www.w3.org/2000/svg}"


def _run(run_id: str, label: str, slow: float = 1.0) -> RunResult:
    """A finished run built by hand: eager and aot_eager, 5 warm-up and 60 timed calls each."""
    config = BenchmarkConfig(layers="32,32,8", batch_size=4, device="cpu", variants=["eager", "aot_eager"], label=label)
    run = RunResult(run_id=run_id, created="2025-01-01T00:00:00", config=config, status="complete")
    rng = np.random.default_rng(len(run_id) + int(slow * 10))
    for name, base in (("eager", 2.0 * slow), ("aot_eager", 1.0 * slow)):
        v = VariantResult(name=name, status="done")
        v.samples.extend(0, "warmup", list(rng.normal(base * 3, 0.1, 5)), None)
        v.samples.extend(5, "measure", list(rng.normal(base, 0.05, 60)), None)
        run.variants[name] = v
    return run


@pytest.fixture
def window(qtbot) -> MainWindow:
    w = MainWindow(probe=False)
    qtbot.addWidget(w)
    w.resize(1280, 760)
    w.show()
    return w


def _panel(qtbot, width: int = 800, height: int = 480) -> PlotPanel:
    p = PlotPanel()
    qtbot.addWidget(p)
    p.resize(width, height)
    p.show()
    qtbot.waitExposed(p)
    return p


# -- the summary table ------------------------------------------------------------------------------
def test_frozen_variant_column_stays_visible_after_horizontal_scroll(qtbot):
    model = SummaryTableModel()
    view = SummaryTableView(model)
    qtbot.addWidget(view)
    view.resize(380, 200)
    view.show()
    qtbot.waitExposed(view)
    model.set_runs([("run A", summarize(_run("r1", "A"))), ("run B", summarize(_run("r2", "B")))])
    bar = view.horizontalScrollBar()
    assert bar.maximum() > 0  # 18 columns do not fit in 380 px
    bar.setValue(bar.maximum())
    headers = model.headers()
    run_col, variant_col = headers.index("run"), headers.index("variant")
    y = view.rowViewportPosition(0) + 3
    # the table itself has scrolled the run and variant columns away …
    assert view.indexAt(QPoint(5, y)).column() not in (run_col, variant_col)
    # … the frozen view over its left edge still shows them, row for row
    frozen = view.frozen_view
    assert frozen.isVisible()
    assert frozen.geometry().left() <= view.frameWidth()
    assert frozen.geometry().width() == view.columnWidth(run_col) + view.columnWidth(variant_col)
    shown = [c for c in range(model.columnCount()) if not frozen.isColumnHidden(c)]
    assert shown == [run_col, variant_col]
    x_variant = view.columnWidth(run_col) + 5
    index = frozen.indexAt(QPoint(x_variant, frozen.rowViewportPosition(1) + 3))
    assert index.column() == variant_col and index.data() == "aot_eager"
    # scrolling down moves both views together
    view.verticalScrollBar().setValue(view.verticalScrollBar().maximum())
    assert frozen.verticalScrollBar().value() == view.verticalScrollBar().value()


def test_hidden_columns_from_the_header_menu_are_remembered(qtbot, window):
    window.show_run(_run("r1", "A"))
    view = window.table_view
    menu = view.column_menu()
    names = [a.text() for a in menu.actions() if a.isCheckable()]
    assert "variant" not in names and "peak mem" in names  # the frozen column cannot be hidden
    for act in menu.actions():
        if act.text() in ("peak mem", "round spread %"):
            act.setChecked(False)
    headers = window.table_model.headers()
    assert view.isColumnHidden(headers.index("peak mem"))
    assert not view.isColumnHidden(headers.index("median ms"))
    assert window.settings.hidden_table_columns() == ["round spread %", "peak mem"]
    window.close()

    again = MainWindow(probe=False)
    qtbot.addWidget(again)
    assert again.table_view.hidden_columns() == ["round spread %", "peak mem"]
    again.show_run(_run("r2", "B"))  # after a model reset the same columns stay hidden
    headers = again.table_model.headers()
    assert again.table_view.isColumnHidden(headers.index("peak mem"))
    again.table_view.show_all_action.trigger()
    assert again.settings.hidden_table_columns() == []


# -- the latency plot ---------------------------------------------------------------------------------
def test_overlaid_runs_get_dash_styles_and_variants_keep_colours(qtbot):
    panel = _panel(qtbot)
    panel.load_run(_run("r1", "A"), key_prefix="r1/", label_prefix="A · ")
    panel.load_run(_run("r2", "B", slow=1.3), key_prefix="r2/", label_prefix="B · ")
    pens = {k: panel.latency.curves[k].measure_curve.opts["pen"] for k in panel.series_keys()}
    assert series_color(panel, "r1/eager") == series_color(panel, "r2/eager")
    assert series_color(panel, "r1/aot_eager") == series_color(panel, "r2/aot_eager")
    assert series_color(panel, "r1/eager") != series_color(panel, "r1/aot_eager")
    assert pens["r1/eager"].style() == Qt.PenStyle.SolidLine
    assert pens["r2/eager"].style() == Qt.PenStyle.CustomDashLine
    assert tuple(pens["r2/eager"].dashPattern()) == run_dash(1)
    hist_pen = panel.distribution.curves["r2/aot_eager"].opts["pen"]
    assert tuple(hist_pen.dashPattern()) == run_dash(1)
    runs = [t for t in legend_labels(panel) if t != "warm-up"]
    assert runs == ["A · eager", "A · aot_eager", "B · eager", "B · aot_eager"]
    assert [(name, style) for _, name, style in panel.runs_shown()] == [("A", 0), ("B", 1)]
    # sixteen variants, sixteen colours
    for i in range(14):
        panel.add_series(f"r1/v{i}", f"v{i}")
    colours = {series_color(panel, k).name() for k in panel.series_keys() if k.startswith("r1/")}
    assert len(colours) == 16


def test_legend_sits_beside_the_plot_and_can_be_hidden(qtbot):
    panel = _panel(qtbot)
    panel.load_run(_run("r1", "A"), key_prefix="r1/", label_prefix="A · ")
    qtbot.waitUntil(lambda: panel.latency.legend.isVisible(), timeout=1000)
    legend = panel.latency.legend
    assert isinstance(legend, SideLegend)
    plot_item = panel.latency_plot.getPlotItem()
    vb = plot_item.getViewBox().sceneBoundingRect()
    assert legend.sceneBoundingRect().left() >= vb.right() - 0.5  # never over the curves
    panel.latency.legend_checkbox.setChecked(False)
    assert not legend.isVisible()
    plot_item.layout.activate()
    assert plot_item.getViewBox().sceneBoundingRect().width() > vb.width()  # its room goes back


def test_log_axis_ticks_read_as_plain_numbers(qtbot):
    panel = _panel(qtbot)
    panel.add_series("a", "a")
    panel.append("a", np.arange(100), np.geomspace(0.05, 900, 100), "measure")
    panel.refresh()
    panel.set_log_scale(True)
    axis = panel.latency_plot.getPlotItem().getAxis("left")
    values = [math.log10(v) for v in (0.1, 0.5, 1, 70, 100, 1000)]
    strings = axis.tickStrings(values, 1.0, 1.0)
    assert [s for s in strings if s] and set(strings) <= {"0.1", "0.5", "1", "70", "100", "1000", ""}
    assert "1000" in strings and "0.1" in strings  # decades always keep their label
    assert plain_number(10 ** math.log10(70)) == "70" and plain_number(0.25) == "0.25"
    assert plain_number(12345) == "12300"


def test_caption_wraps_instead_of_running_into_the_check_boxes(qtbot):
    panel = _panel(qtbot, width=340, height=300)
    tab = panel.latency
    qtbot.waitUntil(lambda: tab.caption.width() > 0, timeout=1000)
    assert tab.caption.geometry().right() < tab.legend_checkbox.geometry().left()
    assert tab.legend_checkbox.geometry().right() < tab.log_scale_checkbox.geometry().left()
    line = tab.caption.fontMetrics().height()
    assert tab.caption.height() >= 2 * line  # wrapped onto a second line, all of it shown


# -- the distribution tab ----------------------------------------------------------------------------
def test_distribution_clips_to_quantiles_counts_outliers_marks_medians(qtbot):
    panel = _panel(qtbot)
    rng = np.random.default_rng(7)
    meas = np.concatenate([rng.normal(2.0, 0.05, 1000), [0.001, 0.002], [500.0, 600.0, 700.0]])
    panel.add_series("a", "a")
    panel.append("a", np.arange(len(meas)), meas, "measure")
    panel.setCurrentIndex(1)
    panel.refresh()
    qtbot.waitUntil(lambda: histogram_data(panel, "a") is not None, timeout=2000)
    dist = panel.distribution
    lo, hi = dist.shown_range
    assert np.percentile(meas, 0.4) <= lo <= np.percentile(meas, 0.6)
    assert hi == pytest.approx(np.percentile(meas, 99.5))
    below = int(np.count_nonzero(meas < lo))
    above = int(np.count_nonzero(meas > hi))
    assert below >= 2 and above >= 3
    assert distribution_note(panel) == f"{below:,} calls below {lo:.3g} ms and {above:,} above {hi:.3g} ms not shown"
    edges, _ = histogram_data(panel, "a")
    assert edges[0] == pytest.approx(lo) and edges[-1] == pytest.approx(hi)
    assert dist.median_lines["a"].isVisible()
    assert dist.median_lines["a"].value() == pytest.approx(np.median(meas))
    ecdf_x, ecdf_y = dist.ecdf_curves["a"].getOriginalDataset()
    assert ecdf_y[0] == 0 and ecdf_y[-1] == 100 and np.all(np.diff(ecdf_x) >= 0)

    dist.log_x_checkbox.setChecked(True)
    edges, _ = histogram_data(panel, "a")
    ratios = edges[1:] / edges[:-1]
    assert np.allclose(ratios, ratios[0])  # log-spaced bins
    assert dist.plot.hist.getAxis("bottom").logMode
    assert dist.median_lines["a"].value() == pytest.approx(math.log10(np.median(meas)))


# -- the empty plot --------------------------------------------------------------------------------------
def test_empty_plot_hint_says_what_run_will_do_and_goes_once_a_run_is_shown(window):
    tab = window.plots.latency
    assert tab.hint_shown() and not tab.plot.isVisible()
    config = window.config_panel.config()
    text = tab.hint_label.text()
    assert config.model_text() in text and f"batch {config.batch_size}" in text
    assert ", ".join(config.variants) in text and f"{config.iterations} timed calls" in text
    window.config_panel.set_config(BenchmarkConfig(batch_size=7, iterations=33, variants=["eager", "aot_eager"]))
    window.config_panel.changed.emit()
    assert "batch 7" in tab.hint_label.text() and "eager, aot_eager" in tab.hint_label.text()
    window.show_run(_run("r1", "A"))
    assert not tab.hint_shown() and tab.plot.isVisible()


# -- exports -------------------------------------------------------------------------------------------------
def test_svg_export_has_no_embedded_image_and_carries_the_caption(qtbot, window, tmp_path):
    window.show_run(_run("r1", "A"))
    out = tmp_path / "plot.svg"
    assert window.exports.save_plot(out)
    root = ET.parse(out).getroot()
    assert list(root.iter(f"{SVG}image")) == []  # no pixmap background, only vector shapes
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    for words in ("Latency per call", "MLP 32,32,8", "batch 4", "wide pale line = median"):
        assert words in texts, words
    # the caption is the export's only: the plot on screen has no title afterwards
    assert not window.plots.latency_plot.getPlotItem().titleLabel.isVisible()


def test_png_caption_keeps_the_size_and_marks_the_top(qtbot, tmp_path):
    panel = _panel(qtbot, 640, 400)
    panel.load_run(_run("r1", "A"), key_prefix="r1/")
    plot = panel.latency_plot
    plain = QImage(str(save_plot_png(plot, tmp_path / "a.png")))
    captioned = QImage(str(save_plot_png(plot, tmp_path / "b.png", caption=caption_html(["Title", "config"]))))
    assert (captioned.width(), captioned.height()) == (plain.width(), plain.height()) == (plot.width(), plot.height())
    top = [captioned.pixelColor(x, y).lightness() for x in range(captioned.width()) for y in range(0, 20)]
    assert min(top) < 150  # dark caption text at the top
    # a long caption wraps in the title row: the plot and its legend stay inside the image
    long_caption = caption_html(["Title", "configuration " * 30, "wide pale line = median"])
    item = plot.getPlotItem()
    with _captioned(plot, long_caption):
        assert item.titleLabel.isVisible() and item.titleLabel.height() > 40
        assert panel.latency.legend.sceneBoundingRect().right() <= plot.width() + 0.5
        assert item.getViewBox().sceneBoundingRect().right() <= plot.width()
    assert not item.titleLabel.isVisible()


def test_export_status_names_the_files_and_the_run_when_others_are_shown(window, tmp_path, monkeypatch):
    shown, other = _run("r1", "A"), _run("r2", "B", slow=1.2)
    monkeypatch.setattr(window.history, "checked_runs", lambda: [other])
    window.show_run(shown)
    written = window.exports.export_run_to(tmp_path)
    message = window.statusBar().currentMessage()
    assert written and all(p.name in message for p in written)
    assert "run A (r1)" in message and "other runs ticked" in message
    assert window.exports.save_plot(tmp_path / "plot.png", scale=1)
    message = window.statusBar().currentMessage()
    assert "plot.png" in message and "2 runs" in message
    lines = window.exports.plot_caption_lines()
    assert lines[0] == "Latency per call — runs: B (solid), A (dashed)"


# -- the window's layout at a small and a large size ------------------------------------------------
@pytest.mark.parametrize("size", [(1280, 760), (1500, 950)])
def test_history_columns_and_latency_plot_fit_the_window(qtbot, size):
    """After a run with one overlay: the history's model, best speedup and status are seen
    without scrolling sideways, its "N runs" line is whole, and the latency plot keeps its height."""
    from compile_studio.gui.history_panel import COLUMNS
    from compile_studio.results.storage.run_files import run_to_json, samples_to_csv

    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    runs = [_run("20250101-000001_a", "batch 32 with a long label"), _run("20250101-000002_b", "batch 256", 3.0)]
    for run in runs:
        folder = window.store.root / run.run_id
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(run_to_json(run))
        (folder / "samples.csv").write_text(samples_to_csv(run))
    window.history.refresh()
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    window.show_run(window.history.entry_for_run(runs[1].run_id).run)
    window.history.set_checked(runs[0].run_id, True)
    assert len(window.plots.runs_shown()) == 2
    tree = window.history.tree
    viewport = tree.viewport().rect()
    qtbot.waitUntil(lambda: window.plots.latency_plot.height() >= 250, timeout=2000)

    assert tree.horizontalScrollBar().value() == 0
    for i in range(tree.topLevelItemCount()):
        item = tree.topLevelItem(i)
        for name in ("model", "best speedup", "status"):
            rect = tree.visualRect(tree.indexFromItem(item, COLUMNS.index(name)))
            assert viewport.contains(rect), (name, rect, viewport)
        status = item.text(COLUMNS.index("status"))
        status_rect = tree.visualRect(tree.indexFromItem(item, COLUMNS.index("status")))
        assert tree.fontMetrics().horizontalAdvance(status) < status_rect.width()  # never elided
        model = item.text(COLUMNS.index("model"))
        assert model in item.toolTip(COLUMNS.index("model"))  # the whole text, however elided
    header = tree.header()
    assert [COLUMNS[header.logicalIndex(v)] for v in range(3)] == ["model", "best speedup", "status"]

    label = window.history.count_label
    assert label.text() == "2 runs" and label.isVisible()
    assert label.fontMetrics().horizontalAdvance(label.text()) <= label.contentsRect().width()
    assert label.visibleRegion().boundingRect() == label.rect()

    plot = window.plots.latency_plot
    assert plot.height() >= 250
    assert plot.getPlotItem().getViewBox().sceneBoundingRect().height() >= 200  # the curves' own room
    assert window.table_view.visibleRegion().boundingRect().height() >= 120  # the table keeps its rows
    form = window.config_panel  # the form is whole across (it scrolls only up and down)
    viewport = form.parentWidget()
    qtbot.waitUntil(lambda: form.width() <= viewport.width(), timeout=1000)
    assert form.x() == 0
    assert form.width() >= form.minimumSizeHint().width()


def test_why_tab_gets_the_room_its_evidence_needs(qtbot, window):
    window.show_run(_run("r1", "A"))
    top, bottom = window.centre_splitter.sizes()
    assert top > bottom  # the plots have most of the height while the table is shown
    window.bottom_tabs.setCurrentWidget(window.why_view)
    top, bottom = window.centre_splitter.sizes()
    assert window.why_view.height() >= window.why_view.layout().minimumSize().height()
    assert top >= (top + bottom) // 3 - 1
