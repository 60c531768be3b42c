"""The plot panel with real widgets (offscreen): buffers, warm-up shading, medians, log scale,
crosshair, histograms, summary bars, whole runs."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from PySide6.QtCore import Qt

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.plots import PlotPanel, SummaryBar, format_speedup
from compile_studio.results import RunResult, VariantResult
from support.gui_helpers import (
    distribution_note,
    histogram_data,
    hover_text,
    is_log_scale,
    is_series_failed,
    legend_labels,
    median_line_value,
    series_color,
    series_data,
    summary_texts,
    warmup_region,
)


@pytest.fixture
def panel(qtbot) -> PlotPanel:
    p = PlotPanel()
    qtbot.addWidget(p)
    p.resize(800, 480)
    p.show()
    qtbot.waitExposed(p)
    return p


def _fill(p: PlotPanel, key: str, warm: np.ndarray, meas: np.ndarray) -> None:
    p.add_series(key, key)
    p.append(key, np.arange(len(warm)), warm, "warmup")
    p.append(key, np.arange(len(warm), len(warm) + len(meas)), meas, "measure")


def test_series_data_is_exactly_what_was_appended_across_buffer_growth(panel):
    rng = np.random.default_rng(1)
    panel.add_series("eager", "eager")
    xs, ys = [], []
    start = 0
    for i in range(400):  # ~10k points: the 1024-point buffers double several times
        m = int(rng.integers(0, 50))
        x = np.arange(start, start + m)
        y = rng.gamma(2.0, 0.3, m)
        panel.append("eager", x, y, "warmup" if i < 5 else "measure")
        xs.append(x)
        ys.append(y)
        start += m
        if i % 37 == 0:
            panel.refresh()  # drawing in between must not disturb the buffers
    got_x, got_y = series_data(panel, "eager")
    assert np.array_equal(got_x, np.concatenate(xs))
    assert np.array_equal(got_y, np.concatenate(ys))  # bit-exact, arrival order
    assert len(got_x) > 4 * 1024


def test_series_data_keeps_arrival_order_of_mixed_phases(panel):
    panel.add_series("a", "a")
    panel.append("a", np.array([0, 1]), np.array([5.0, 4.0]), "warmup")
    panel.append("a", np.array([2, 3]), np.array([1.0, 1.5]), "measure")
    panel.append("a", np.array([4]), np.array([3.0]), "warmup")  # an interleaved block
    x, y = series_data(panel, "a")
    assert x.tolist() == [0, 1, 2, 3, 4]
    assert y.tolist() == [5.0, 4.0, 1.0, 1.5, 3.0]
    # the copy handed out is not the buffer
    y[0] = -1
    assert series_data(panel, "a")[1][0] == 5.0


def test_append_rejects_bad_input(panel):
    panel.add_series("a", "a")
    with pytest.raises(ValueError, match="phase"):
        panel.append("a", np.arange(3), np.ones(3), "compile")
    with pytest.raises(ValueError, match="3 iterations but 2"):
        panel.append("a", np.arange(3), np.ones(2), "measure")
    with pytest.raises(KeyError):
        panel.append("nope", np.arange(3), np.ones(3), "measure")


def test_append_alone_draws_nothing_refresh_does(panel):
    panel.add_series("a", "a")
    panel.append("a", np.arange(10), np.linspace(1, 2, 10), "measure")
    curve = panel.latency.curves["a"].measure_curve
    assert curve.xData is None or len(curve.xData) == 0
    panel.refresh()
    assert len(curve.xData) == 10


def test_warmup_is_shaded_and_median_line_is_median_of_measure_only(panel):
    rng = np.random.default_rng(2)
    warm = np.full(5, 50.0)  # slow warm-up calls must not move the median
    meas = rng.gamma(2.0, 0.5, 31)
    _fill(panel, "eager", warm, meas)
    panel.refresh()
    assert warmup_region(panel, "eager") == (-0.5, 4.5)
    region = panel.latency.curves["eager"].region
    # folded away by default: no shading, no legend entry, until asked for
    assert not region.isVisible() and "warm-up" not in legend_labels(panel)
    panel.latency.set_warmup_shown(True)
    assert region in panel.latency_plot.getPlotItem().items and region.isVisible()
    assert "warm-up" in legend_labels(panel)
    assert median_line_value(panel, "eager") == float(np.median(meas))
    assert panel.latency.curves["eager"].median_line.value() == pytest.approx(np.median(meas))

    more = rng.gamma(2.0, 0.5, 20) + 3
    panel.append("eager", np.arange(36, 56), more, "measure")
    panel.refresh()
    assert median_line_value(panel, "eager") == float(np.median(np.concatenate([meas, more])))


def test_series_without_warmup_has_no_shading_and_one_span_is_shaded_once(panel):
    panel.add_series("a", "a")
    panel.append("a", np.arange(10), np.ones(10), "measure")
    _fill(panel, "b", np.ones(3), np.ones(10))
    _fill(panel, "c", np.ones(3), np.ones(10))
    panel.latency.set_warmup_shown(True)
    panel.refresh()
    assert warmup_region(panel, "a") is None
    assert median_line_value(panel, "a") == 1.0
    assert warmup_region(panel, "b") == warmup_region(panel, "c") == (-0.5, 2.5)
    visible = [panel.latency.curves[k].region.isVisible() for k in ("a", "b", "c")]
    assert visible == [False, True, False]


def test_no_measured_samples_no_median_line(panel):
    _fill(panel, "a", np.ones(5), np.array([]))
    panel.refresh()
    assert median_line_value(panel, "a") is None


def test_log_scale_toggles_axis_checkbox_and_median_line(panel):
    meas = np.array([0.5, 1.0, 2.0, 4.0, 8.0])
    _fill(panel, "a", np.array([20.0]), meas)
    panel.refresh()
    item = panel.latency_plot.getPlotItem()
    line = panel.latency.curves["a"].median_line
    assert not is_log_scale(panel) and line.value() == pytest.approx(2.0)

    panel.set_log_scale(True)
    assert is_log_scale(panel)
    assert panel.latency.log_scale_checkbox.isChecked()
    assert item.ctrl.logYCheck.isChecked()
    assert panel.latency.curves["a"].measure_curve.opts["logMode"][1] is True
    assert line.value() == pytest.approx(math.log10(2.0))
    assert median_line_value(panel, "a") == 2.0  # still reported in ms

    panel.latency.log_scale_checkbox.setChecked(False)  # the toggle in the panel
    assert not is_log_scale(panel)
    assert not item.ctrl.logYCheck.isChecked()
    assert line.value() == pytest.approx(2.0)

    item.ctrl.logYCheck.setChecked(True)  # the plot's own context menu stays in sync
    assert is_log_scale(panel) and panel.latency.log_scale_checkbox.isChecked()


def test_crosshair_snaps_to_nearest_sample_of_nearest_series(panel):
    _fill(panel, "eager", np.full(3, 9.0), np.full(20, 2.0))
    _fill(panel, "default", np.full(3, 6.0), np.full(20, 1.0))
    panel.refresh()
    text = panel.latency.crosshair_at(10.2, 1.1)
    assert text == "default\niteration 10\n1 ms"
    assert hover_text(panel) == text
    # warm-up calls folded away are not snapped to; shown, they are
    assert panel.latency.crosshair_at(1.0, 8.0) == "eager\niteration 3\n2 ms"
    panel.latency.set_warmup_shown(True)
    assert panel.latency.crosshair_at(1.0, 8.0) == "eager\niteration 1 (warm-up)\n9 ms"
    panel.set_log_scale(True)
    assert panel.latency.crosshair_at(15, 2.1).startswith("eager\niteration 15")
    panel.latency.hide_crosshair()
    assert hover_text(panel) == ""


def test_crosshair_follows_the_mouse(panel, qtbot):
    _fill(panel, "eager", np.full(3, 2.0), np.linspace(1.0, 2.0, 40))
    panel.refresh()
    qtbot.wait(50)
    vb = panel.latency_plot.getPlotItem().getViewBox()
    scene_pos = vb.mapViewToScene(vb.mapToView(vb.boundingRect().center()))
    panel.latency._on_mouse_moved((scene_pos,))
    assert hover_text(panel).startswith("eager\niteration ")


def test_failed_series_is_dashed_and_marked_in_legend(panel):
    _fill(panel, "eager", np.ones(2), np.ones(5))
    _fill(panel, "max-autotune", np.ones(2), np.ones(1))
    panel.set_series_failed("max-autotune", True)
    assert is_series_failed(panel, "max-autotune")
    assert "max-autotune (failed)" in legend_labels(panel)
    assert "eager" in legend_labels(panel)
    pen = panel.latency.curves["max-autotune"].measure_curve.opts["pen"]
    assert pen.style() == Qt.PenStyle.DashDotLine
    panel.set_series_failed("max-autotune", False)
    assert "max-autotune" in legend_labels(panel)
    assert panel.latency.curves["max-autotune"].measure_curve.opts["pen"].style() == Qt.PenStyle.SolidLine


def test_series_get_distinct_colours_and_legend_names(panel):
    for k in ("eager", "default", "reduce-overhead", "max-autotune", "aot_eager"):
        panel.add_series(k, f"run1 · {k}")
    names = {series_color(panel, k).name() for k in panel.series_keys()}
    assert len(names) == 5
    assert legend_labels(panel)[:5] == [f"run1 · {k}" for k in panel.series_keys()]
    assert panel.latency.curves["eager"].measure_curve.name() == "run1 · eager"


def test_distribution_uses_measure_only_shared_bins(panel, qtbot):
    rng = np.random.default_rng(3)
    a = rng.normal(2.0, 0.1, 500)
    b = rng.normal(1.2, 0.05, 300)
    _fill(panel, "eager", np.full(10, 100.0), a)
    _fill(panel, "default", np.full(10, 100.0), b)
    panel.setCurrentIndex(1)
    panel.refresh()
    qtbot.waitUntil(lambda: histogram_data(panel, "default") is not None, timeout=2000)
    ea, fa = histogram_data(panel, "eager")
    eb, fb = histogram_data(panel, "default")
    assert np.array_equal(ea, eb)  # shared bins
    assert ea[-1] < 100.0  # warm-up calls are not in the distribution
    assert ea[0] == pytest.approx(min(a.min(), b.min()))
    assert fa.sum() == pytest.approx(100.0, abs=1.0)  # % of measured calls (≤ 0.5 % beyond p99.5)
    assert fb.sum() == pytest.approx(100.0, abs=1.0)
    assert panel.distribution.curves["eager"].opts["stepMode"] == "center"


def test_distribution_notes_outliers_beyond_range(panel, qtbot):
    meas = np.concatenate([np.ones(1000), [500.0]])
    _fill(panel, "a", np.ones(1), meas)
    panel.refresh()
    qtbot.waitUntil(lambda: histogram_data(panel, "a") is not None, timeout=2000)
    assert distribution_note(panel) == "1 call above 1 ms not shown"


def test_summary_bars_show_speedup_text(panel):
    panel.set_summary(
        [
            SummaryBar("eager", "eager", 2.0, 1.9, 2.3, 1.0),
            SummaryBar("default", "default", 2.0 / 1.42, 1.3, 1.5, 1.42),
            SummaryBar("cudagraphs", "cudagraphs", 1.9, 1.8, 2.0, None),
        ]
    )
    assert summary_texts(panel) == ["1.00×", "1.42×", ""]
    items = panel.summary_plot.getPlotItem().items
    texts = [t for t in panel.summary.bar_texts if t in items]
    assert len(texts) == 3
    ticks = panel.summary_plot.getPlotItem().getAxis("bottom")._tickLevels
    assert [label for _, label in ticks[0]] == ["eager", "default", "cudagraphs"]
    panel.set_summary([])
    assert summary_texts(panel) == []
    assert format_speedup(float("nan")) == "" and format_speedup(12.345) == "12.35×"


def test_current_plot_follows_tab(panel):
    assert panel.current_plot() is panel.latency_plot
    panel.setCurrentIndex(1)
    assert panel.current_plot() is panel.distribution_plot
    panel.setCurrentIndex(2)
    assert panel.current_plot() is panel.summary_plot
    assert [panel.tabText(i) for i in range(3)] == ["Latency", "Distribution", "Summary"]


def _hand_built_run() -> RunResult:
    run = RunResult(run_id="r1", created="2025-01-01T00:00:00", config=BenchmarkConfig(layers="32,32,8", batch_size=4))
    rng = np.random.default_rng(4)
    for name, base, status in (("eager", 2.0, "done"), ("aot_eager", 1.0, "done"), ("max-autotune", 1.0, "failed")):
        v = VariantResult(name=name, status=status)
        n_meas = 40 if status == "done" else 0
        v.samples.extend(0, "warmup", list(rng.normal(base * 3, 0.1, 5)), None)
        v.samples.extend(5, "measure", list(rng.normal(base, 0.05, n_meas)), None)
        run.variants[name] = v
    return run


def test_load_run_adds_every_variant_and_summary(panel):
    run = _hand_built_run()
    panel.load_run(run, key_prefix="r1/", label_prefix="run 1 · ")
    assert panel.series_keys() == ["r1/eager", "r1/aot_eager", "r1/max-autotune"]
    for name, v in run.variants.items():
        x, y = series_data(panel, f"r1/{name}")
        assert x.tolist() == v.samples.iteration
        assert y.tolist() == v.samples.wall_ms
    assert warmup_region(panel, "r1/eager") == (-0.5, 4.5)
    assert is_series_failed(panel, "r1/max-autotune")
    assert "run 1 · max-autotune (failed)" in legend_labels(panel)
    bars = panel.summary_bars()
    assert [b.key for b in bars] == ["r1/eager", "r1/aot_eager"]  # no bar without samples
    assert bars[1].speedup == pytest.approx(2.0, rel=0.1)
    assert summary_texts(panel)[0] == "1.00×"
    eager_meas = np.array(run.variants["eager"].samples.wall_ms[5:])
    assert median_line_value(panel, "r1/eager") == float(np.median(eager_meas))

    # a second run overlays: its bars join the first run's
    panel.load_run(run, key_prefix="r2/", label_prefix="run 2 · ")
    assert len(panel.series_keys()) == 6
    assert [b.key for b in panel.summary_bars()] == ["r1/eager", "r1/aot_eager", "r2/eager", "r2/aot_eager"]

    panel.clear()
    assert panel.series_keys() == []
    assert summary_texts(panel) == []
    assert legend_labels(panel) == []
    assert not [i for i in panel.latency_plot.getPlotItem().items if i.isVisible() and hasattr(i, "xData")]


def test_100k_points_on_three_series_refresh(panel, qtbot):
    rng = np.random.default_rng(5)
    n = 100_000
    keys = ("eager", "default", "reduce-overhead")
    for k in keys:
        panel.add_series(k, k)
        panel.append(k, np.arange(50), rng.gamma(2, 1, 50) + 5, "warmup")
    t0 = time.perf_counter()
    for start in range(50, n, 5_000):
        for k in keys:
            panel.append(k, np.arange(start, start + 5_000), rng.gamma(2, 0.2, 5_000) + 1, "measure")
    t_append = time.perf_counter() - t0
    t0 = time.perf_counter()
    panel.refresh()
    panel.latency_plot.viewport().repaint()
    t_first = time.perf_counter() - t0
    for k in keys:
        panel.append(k, np.arange(n + 50, n + 100), np.ones(50), "measure")
    t0 = time.perf_counter()
    panel.refresh()
    panel.latency_plot.viewport().repaint()
    t_next = time.perf_counter() - t0
    print(
        f"\n3 × {n} points: append {t_append * 1000:.0f} ms, first refresh+paint "
        f"{t_first * 1000:.0f} ms, next {t_next * 1000:.0f} ms"
    )
    for k in keys:
        assert len(series_data(panel, k)[0]) == n + 100
        drawn = panel.latency.curves[k].measure_curve.curve.xData
        assert 0 < len(drawn) < n / 4  # peak downsampling is on: far fewer points drawn



def test_load_run_of_100k_calls_times_4_variants_keeps_phases_and_rounds(panel):
    """A large stored run: every call plotted in order, warm-up apart, each later round marked;
    the load time is printed (read with -s), not asserted."""
    n, rounds = 100_000, 5
    rng = np.random.default_rng(11)
    run = RunResult(run_id="big", created="2025-01-01T00:00:00",
                    config=BenchmarkConfig(variants=["eager", "a", "b", "c"]), status="complete")
    per = n // rounds
    for name in ("eager", "a", "b", "c"):
        v = VariantResult(name=name, status="done")
        v.samples.extend(0, "warmup", rng.normal(3.0, 0.1, 100), None)
        for r in range(rounds):
            v.samples.extend(100 + r * per, "measure", rng.normal(1.0, 0.05, per), None, r)
        run.variants[name] = v
    t0 = time.perf_counter()
    panel.load_run(run, key_prefix="big/")
    took = time.perf_counter() - t0
    print(f"\nload_run of 4 × {n:,} calls: {took * 1000:.0f} ms")
    for name, v in run.variants.items():
        s = panel.series[f"big/{name}"]
        x, y = series_data(panel, f"big/{name}")
        assert np.array_equal(x, v.samples.iteration_array()) and np.array_equal(y, v.samples.wall_array())
        assert s.round_starts == [float(100 + r * per) for r in range(1, rounds)]
        assert warmup_region(panel, f"big/{name}") == (-0.5, 99.5)
        assert len(s.measured_values()) == n

def test_legend_shown_only_when_it_lists_something(qtbot):
    panel = PlotPanel()
    qtbot.addWidget(panel)
    assert not panel.latency.legend.isVisible() and not panel.distribution.legend.isVisible()
    panel.add_series("r/eager", "eager")
    panel.refresh()
    assert panel.latency.legend.isVisibleTo(panel.latency_plot.getPlotItem())
    panel.clear()
    assert not panel.latency.legend.isVisible()
