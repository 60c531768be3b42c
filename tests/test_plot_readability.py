"""Plots a noisy run would make unreadable, with real widgets (offscreen): the summary's boxes set its
scale (whiskers cut and marked, log by itself when the boxes span more than 10×), the latency tab
folds warm-up calls away and ranges over p1–p99 with spikes marked; exports show what the screen does."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QImage

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.image_export import render_widget_image, save_plot_svg
from compile_studio.gui.plots import PlotPanel, SummaryBar
from compile_studio.results import RunResult, VariantResult

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def panel(qtbot) -> PlotPanel:
    p = PlotPanel()
    qtbot.addWidget(p)
    p.resize(800, 480)
    p.show()
    qtbot.waitExposed(p)
    return p


def _y_pixels(plot, y_view: float) -> float:
    """Scene y (pixels, down) of the view value ``y_view`` on ``plot``."""
    vb = plot.getPlotItem().getViewBox()
    return vb.mapViewToScene(QPointF(0.0, y_view)).y()


def _pixels(image: QImage) -> np.ndarray:
    img = image.convertToFormat(QImage.Format.Format_RGBA8888)
    w, h = img.width(), img.height()
    raw = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes())
    return raw.reshape(h, img.bytesPerLine())[:, : w * 4].reshape(h, w, 4).copy()


def _svg_texts(path) -> str:
    root = ET.parse(path).getroot()
    return " ".join(t.text or "" for t in root.iter(f"{SVG}text"))


# -- the summary tab --------------------------------------------------------------------------------
def _noisy_bars() -> list[SummaryBar]:
    """Two fast variants whose p95 is 300× their median (a noisy machine)."""
    return [
        SummaryBar("eager", "eager", 0.07, 0.05, 21.0, 1.0, p25_ms=0.065, p75_ms=0.08),
        SummaryBar("aot_eager", "aot_eager", 0.06, 0.045, 18.0, 1.17, p25_ms=0.055, p75_ms=0.07),
    ]


def test_a_300x_whisker_does_not_squash_the_median(panel):
    panel.setCurrentIndex(2)
    panel.set_summary(_noisy_bars())
    tab = panel.summary
    plot = panel.summary_plot
    plot.getPlotItem().layout.activate()
    (_, _), (y0, y1) = plot.getPlotItem().getViewBox().viewRange()
    assert not tab.log_scale()  # the boxes span 0.045–0.08 ms: linear
    assert y1 < 1.0 < 18.0  # the whiskers (18 and 21 ms) do not set the scale
    # the 0.06 ms median stands well above the axis, its box many pixels tall
    median_px = _y_pixels(plot, y0) - _y_pixels(plot, 0.06)
    box_px = _y_pixels(plot, 0.055) - _y_pixels(plot, 0.07)
    assert median_px > 150, median_px
    assert box_px > 25, box_px
    # each cut whisker is marked at the top edge with its value
    assert [(c.index, c.end) for c in tab.clipped] == [(0, "p95"), (1, "p95")]
    assert [t.toPlainText() for t in tab.clip_texts] == ["▲ p95 21 ms", "▲ p95 18 ms"]
    assert [t.toPlainText() for t in tab.bar_texts] == ["1.00×", "1.17×"]
    for text in tab.bar_texts + tab.clip_texts:
        assert y0 <= text.pos().y() <= y1


def test_whiskers_that_fit_are_drawn_whole(panel):
    panel.set_summary([SummaryBar("eager", "eager", 2.0, 1.9, 2.3, 1.0, 1.95, 2.1),
                       SummaryBar("default", "default", 1.4, 1.3, 1.5, 1.42, 1.35, 1.45)])
    tab = panel.summary
    (_, _), (_, y1) = panel.summary_plot.getPlotItem().getViewBox().viewRange()
    assert tab.whiskers_whole and tab.clipped == [] and y1 > 2.3


def test_boxes_spanning_more_than_10x_turn_the_axis_log_and_the_toggle_wins(panel):
    bars = [
        SummaryBar("eager", "eager", 2.0, 1.8, 24.0, 1.0, 1.9, 2.2),
        SummaryBar("reduce-overhead", "reduce-overhead", 0.06, 0.05, 20.0, 33.3, 0.055, 0.07),
    ]
    panel.setCurrentIndex(2)
    panel.set_summary(bars)
    tab = panel.summary
    plot = panel.summary_plot
    assert tab.log_scale() and tab.log_scale_checkbox.isChecked()
    assert plot.getPlotItem().getAxis("left").logMode
    (_, _), (y0, y1) = plot.getPlotItem().getViewBox().viewRange()
    # log10 units: on a log axis the whiskers fit whole beside both boxes
    assert y0 < math.log10(0.045) and y1 > math.log10(24.0) and tab.whiskers_whole
    box_px = _y_pixels(plot, math.log10(0.055)) - _y_pixels(plot, math.log10(0.07))
    assert box_px > 10, box_px
    # the user's choice sticks across new bars
    tab.log_scale_checkbox.setChecked(False)
    assert not tab.log_scale() and not plot.getPlotItem().getAxis("left").logMode
    panel.set_summary(bars)
    assert not tab.log_scale()
    tab.set_log_scale(None)  # back to the automatic choice
    assert tab.log_scale()


def test_a_loaded_run_fills_each_box_from_its_measured_calls(panel):
    rng = np.random.default_rng(3)
    run = RunResult(run_id="r", created="2025-01-01T00:00:00", config=BenchmarkConfig(layers="8,8"))
    calls = {}
    for name, base in (("eager", 0.07), ("aot_eager", 0.06)):
        v = VariantResult(name=name, status="done")
        meas = rng.normal(base, 0.004, 400)
        meas[::10] = 20.0  # one call in ten a 20 ms spike: p95 far above the box
        calls[name] = meas
        v.samples.extend(0, "warmup", list(np.full(5, 5.0)), None)
        v.samples.extend(5, "measure", list(meas), None)
        run.variants[name] = v
    panel.load_run(run, key_prefix="r/")
    bars = panel.summary_bars()
    for bar, name in zip(bars, ("eager", "aot_eager")):
        p25, p75 = np.percentile(calls[name], [25, 75])
        assert bar.p25_ms == pytest.approx(p25) and bar.p75_ms == pytest.approx(p75)
        assert bar.p95_ms == pytest.approx(20.0)
    (_, _), (_, y1) = panel.summary_plot.getPlotItem().getViewBox().viewRange()
    assert y1 < 1.0  # not set by the 20 ms whiskers
    assert len(panel.summary.clipped) == 2


def test_summary_svg_export_shows_the_cut_whiskers_like_the_screen(panel, tmp_path):
    panel.setCurrentIndex(2)
    panel.set_summary(_noisy_bars())
    before = panel.summary_plot.getPlotItem().getViewBox().viewRange()
    out = save_plot_svg(panel.summary_plot, tmp_path / "summary.svg", caption="<b>Median latency per variant</b>")
    texts = _svg_texts(out)
    assert "▲ p95 21 ms" in texts and "▲ p95 18 ms" in texts and "1.17×" in texts
    assert panel.summary_plot.getPlotItem().getViewBox().viewRange() == before
    plot = panel.summary_plot
    assert np.array_equal(_pixels(render_widget_image(plot, 1)), _pixels(plot.grab().toImage()))


# -- the latency tab --------------------------------------------------------------------------------
def _rounds_run(warm: int = 3000, per_round: int = 400, rounds: int = 3, seed: int = 5) -> RunResult:
    """A rounds run of a tiny model: thousands of slow warm-up calls, then spiky measured rounds."""
    rng = np.random.default_rng(seed)
    run = RunResult(run_id="big", created="2025-01-01T00:00:00",
                    config=BenchmarkConfig(layers="8,8", rounds=rounds), status="complete")
    for name, base in (("eager", 0.08), ("aot_eager", 0.06)):
        v = VariantResult(name=name, status="done")
        v.samples.extend(0, "warmup", list(rng.normal(0.5, 0.05, warm) + np.linspace(3.0, 0.0, warm)), None)
        for r in range(rounds):
            meas = rng.normal(base, 0.002, per_round)
            meas[17::200] = 25.0  # spikes: 0.5 % of the calls
            v.samples.extend(warm + r * per_round, "measure", list(meas), None, r)
        run.variants[name] = v
    return run


def test_warm_up_is_folded_away_until_asked_for(panel):
    warm = 3000
    panel.load_run(_rounds_run(warm=warm), key_prefix="big/")
    tab = panel.latency
    vb = panel.latency_plot.getPlotItem().getViewBox()
    (x0, x1), _ = vb.viewRange()
    assert x0 > warm - 1  # no warm-up call in the range
    assert x1 >= warm + 1200 - 1
    assert not tab.warmup_shown() and not tab.curves["big/eager"].warmup_curve.isVisible()
    assert not any(c.region.isVisible() for c in tab.curves.values())
    assert "6,000 warm-up calls folded away" in tab.note_text()
    assert "right-click" in tab.caption.text()
    assert tab.warmup_action.text() == "Show warm-up calls" and tab.warmup_action in vb.menu.actions()

    tab.warmup_action.trigger()  # the context-menu item
    assert tab.warmup_shown() and tab.curves["big/eager"].warmup_curve.isVisible()
    (x0, _), (_, y1) = vb.viewRange()
    assert x0 <= 0
    assert tab.curves["big/eager"].region.isVisible()
    assert "folded" not in tab.note_text()
    tab.warmup_action.trigger()
    (x0, _), _ = vb.viewRange()
    assert x0 > warm - 1 and not tab.warmup_shown()


def test_y_range_is_p1_to_p99_with_spikes_marked_at_the_edge(panel):
    run = _rounds_run()
    panel.load_run(run, key_prefix="big/")
    tab = panel.latency
    vb = panel.latency_plot.getPlotItem().getViewBox()
    (_, _), (y0, y1) = vb.viewRange()
    measured = [np.array(v.samples.wall_ms[3000:]) for v in run.variants.values()]
    assert y1 < 1.0  # the 25 ms spikes do not set the scale (the old range went to 25)
    assert y1 >= max(np.percentile(m, 99) for m in measured) or y1 > 0.1
    assert y0 <= min(np.percentile(m, 1) for m in measured)
    spikes = sum(int(np.count_nonzero(m > y1)) for m in measured)
    assert spikes == 2 * 3 * 2  # 2 per round, 3 rounds, 2 variants
    assert tab.beyond == (spikes, 0)
    marks = tab.curves["big/eager"].marks_above
    mx, my = marks.getData()
    assert len(mx) == 6 and np.all((my > y0) & (my <= y1))
    assert f"▲ {spikes} calls above" in tab.note_text()
    # the median still reads: many pixels between 0.06 and 0.08 ms
    px = vb.mapViewToScene(QPointF(0, 0.06)).y() - vb.mapViewToScene(QPointF(0, 0.08)).y()
    assert px > 50, px


def test_range_follows_live_calls_until_zoomed_by_hand(panel, qtbot):
    rng = np.random.default_rng(9)
    panel.add_series("live/eager", "eager")
    panel.append("live/eager", np.arange(2000), rng.normal(1.0, 0.1, 2000) + 4.0, "warmup")
    panel.refresh()
    vb = panel.latency_plot.getPlotItem().getViewBox()
    tab = panel.latency
    # only warm-up so far: it is what there is to see
    (x0, _), (_, y1) = vb.viewRange()
    assert x0 <= 0 and y1 > 4.0 and tab.curves["live/eager"].warmup_curve.isVisible()
    start = 2000
    for _ in range(5):
        panel.append("live/eager", np.arange(start, start + 100), rng.normal(0.2, 0.01, 100), "measure")
        start += 100
        panel.refresh()
    (x0, x1), (y0, y1) = vb.viewRange()
    assert x0 > 1999 and x1 >= start - 1 and y1 < 1.0
    assert not tab.curves["live/eager"].warmup_curve.isVisible()
    # more calls arrive: the range grows with them
    panel.append("live/eager", np.arange(start, start + 500), rng.normal(0.2, 0.01, 500), "measure")
    panel.refresh()
    assert vb.viewRange()[0][1] >= start + 499
    # a zoom by hand is kept while calls arrive, until "Fit measured calls"
    vb.scaleBy((0.5, 0.5))
    vb.sigRangeChangedManually.emit(vb.state["mouseEnabled"])
    kept = vb.viewRange()
    panel.append("live/eager", np.arange(start + 500, start + 900), rng.normal(0.2, 0.01, 400), "measure")
    panel.refresh()
    assert not tab.fits_calls() and vb.viewRange() == kept
    tab.fit_action.trigger()
    assert tab.fits_calls() and vb.viewRange()[0][1] >= start + 899


def test_log_scale_ranges_over_the_percentiles_in_log_units(panel):
    panel.load_run(_rounds_run(), key_prefix="big/")
    panel.set_log_scale(True)
    vb = panel.latency_plot.getPlotItem().getViewBox()
    (_, _), (y0, y1) = vb.viewRange()
    assert math.log10(0.05) < y1 < math.log10(1.0) and y0 < math.log10(0.06)
    assert panel.latency.beyond[0] == 12


def test_latency_export_shows_the_fold_and_the_spikes_like_the_screen(panel, tmp_path):
    panel.load_run(_rounds_run(), key_prefix="big/")
    plot = panel.latency_plot
    before = plot.getPlotItem().getViewBox().viewRange()
    out = save_plot_svg(plot, tmp_path / "latency.svg", caption="<b>Latency per call</b>")
    texts = _svg_texts(out)
    assert "6,000 warm-up calls folded away" in texts and "12 calls above" in texts
    assert plot.getPlotItem().getViewBox().viewRange() == before
    # the PNG is the screen: the same pixels as the widget grabbed from it
    assert np.array_equal(_pixels(render_widget_image(plot, 1)), _pixels(plot.grab().toImage()))


def _spiky_run(spike_share: float, factor: float, n: int = 4000, seed: int = 3) -> RunResult:
    """One variant's measured calls around 0.036 ms with ``spike_share`` of them ``factor`` × slower."""
    rng = np.random.default_rng(seed)
    run = RunResult(run_id="spiky", created="2025-01-01T00:00:00",
                    config=BenchmarkConfig(layers="8,8"), status="complete")
    v = VariantResult(name="eager", status="done")
    calls = rng.normal(0.036, 0.002, n)
    spikes = rng.choice(n, int(n * spike_share), replace=False)
    calls[spikes] = 0.036 * factor * rng.uniform(0.9, 1.1, spikes.size)
    v.samples.extend(0, "measure", list(calls), None, 0)
    run.variants["eager"] = v
    return run


def _share_above_bottom_fifth(panel, calls: np.ndarray) -> float:
    (_, _), (y0, y1) = panel.latency_plot.getPlotItem().getViewBox().viewRange()
    return float(np.mean(calls > y0 + 0.2 * (y1 - y0)))


@pytest.mark.parametrize("share", [0.01, 0.04])
def test_spikes_400x_the_median_do_not_flatten_the_calls(panel, share, tmp_path):
    run = _spiky_run(share, 400.0)
    panel.load_run(run, key_prefix="s/")
    calls = np.array(run.variants["eager"].samples.wall_ms)
    assert _share_above_bottom_fifth(panel, calls) >= 0.95
    (_, _), (y0, y1) = panel.latency_plot.getPlotItem().getViewBox().viewRange()
    assert y0 == 0.0 and y1 < 1.0, (y0, y1)
    spikes = int(np.count_nonzero(calls > y1))
    assert spikes == int(len(calls) * share) and panel.latency.beyond == (spikes, 0)
    assert f"▲ {spikes} calls above" in panel.latency.note_text()
    # the export draws the same range and says the same
    out = save_plot_svg(panel.latency_plot, tmp_path / "latency.svg", caption="<b>Latency per call</b>")
    assert f"{spikes} calls above" in _svg_texts(out)


def test_calls_in_two_levels_turn_the_axis_logarithmic_unless_the_user_chose(panel):
    run = _spiky_run(0.3, 400.0)  # 30 % slow: no linear range shows both levels
    panel.load_run(run, key_prefix="s/")
    tab = panel.latency
    assert tab.log_scale() and tab.log_scale_checkbox.isChecked()
    assert "log scale: the calls lie in levels too far apart for a linear axis" in tab.note_text()
    (_, _), (y0, y1) = panel.latency_plot.getPlotItem().getViewBox().viewRange()
    assert y0 < math.log10(0.036) < y1 and math.log10(0.036 * 400) < y1 + 0.1
    tab.log_scale_checkbox.setChecked(False)  # the user's choice is kept, and the note says why
    assert not tab.log_scale()
    assert "Log scale shows every call" in tab.note_text()
    panel.clear()
    panel.load_run(_spiky_run(0.3, 400.0), key_prefix="t/")
    assert not tab.log_scale(), "chosen by the user: kept for the next run shown"
    tab.set_log_scale(None)
    assert tab.log_scale()
    panel.clear()
    panel.load_run(_spiky_run(0.01, 400.0), key_prefix="u/")
    assert not tab.log_scale(), "chosen by the calls: linear again for calls a linear range shows"
