"""What the latency tab paints does not grow with the calls (real widgets, offscreen): a curve of
100,000 calls is drawn as two peak-kept stretches per pixel column, a dense curve without edge
smoothing, one ▲ per pixel column while the note still counts every call above the range, and
the calls' highest peak stays in the picture."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication

from compile_studio.gui.plots import PlotPanel
from compile_studio.gui.plots.latency_curves import one_per_column


@pytest.fixture
def panel(qtbot) -> PlotPanel:
    p = PlotPanel()
    qtbot.addWidget(p)
    p.resize(800, 480)
    p.show()
    qtbot.waitExposed(p)
    return p


def _spiky(n: int, seed: int = 11) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ys = 0.03 + rng.exponential(0.005, n)
    ys[rng.random(n) < 0.01] *= 400
    return ys


def test_a_long_curve_is_drawn_per_pixel_column_and_keeps_its_peaks(panel, qtbot):
    n = 100_000
    ys = _spiky(n)
    panel.add_series("eager", "eager")
    panel.append("eager", np.arange(n, dtype=float), ys, "measure", 0)
    panel.refresh()
    panel.repaint()
    QCoreApplication.processEvents()
    tab = panel.latency
    curve = tab.curves["eager"].measure_curve
    columns = tab.plot.getPlotItem().getViewBox().width()
    drawn_x, drawn_y = curve.getData()
    assert drawn_x is not None
    # peak downsampling: about 2 stretches per column (whole calls per stretch), each drawn
    # as its low and high
    assert len(drawn_x) <= 5 * columns, (len(drawn_x), columns)
    assert float(np.max(drawn_y)) == pytest.approx(float(ys.max()))  # the highest call is drawn
    assert curve.opts["antialias"] is False  # a band of strokes: no edge smoothing
    marks = tab.curves["eager"].marks_above.getData()[0]
    above, _below = tab.beyond
    assert above >= 0.005 * n  # every call above the range is counted …
    assert len(marks) <= columns + 1  # … and marked once per pixel column at most


def test_a_short_curve_keeps_every_call_and_its_smooth_edges(panel):
    panel.add_series("eager", "eager")
    ys = _spiky(200)
    panel.append("eager", np.arange(200, dtype=float), ys, "measure", 0)
    panel.refresh()
    curve = panel.latency.curves["eager"].measure_curve
    assert len(curve.getData()[0]) == 200
    assert curve.opts["antialias"] is True


def test_one_mark_per_column_keeps_the_first_call_of_each():
    xs = np.array([0.0, 0.1, 0.9, 1.2, 5.5, 5.6, 9.99])
    assert one_per_column(xs, 0.0, 10.0, 10).tolist() == [0.0, 1.2, 5.5, 9.99]
    assert one_per_column(xs, 0.0, 10.0, 1000).tolist() == xs.tolist()


def test_a_pause_paints_the_plot_once_when_its_range_moves(panel, qtbot):
    """pyqtgraph moves a view's items to a new range only as the view starts painting, which
    marks them changed again: without bringing the views to their range first (paint_now does),
    a pause whose calls moved the range painted the whole plot twice, the same picture."""
    from compile_studio.gui.draw_turns import PaintTimes

    paints = PaintTimes(panel)
    panel.add_series("eager", "eager")
    vb = panel.latency.plot.getPlotItem().getViewBox()
    panel.append("eager", np.arange(1_000, dtype=float), _spiky(1_000), "measure", 0)
    panel.refresh()
    paints.paint_all()  # the first paint lays the legend and the note out
    start = 1_000
    for n in (2_000, 6_000, 20_000):  # each batch moves the range (the calls span more iterations)
        before = vb.viewRange()
        panel.append("eager", np.arange(start, start + n, dtype=float), _spiky(n, seed=n), "measure", 0)
        start += n
        panel.refresh()
        count = paints.count
        paints.paint_all()  # a second round would paint what the first asked for
        assert vb.viewRange() != before
        assert paints.count - count == 1, "one repaint per pause"
