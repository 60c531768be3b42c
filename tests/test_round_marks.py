"""The latency plot marks where each measurement round begins, live and for a saved run."""

from __future__ import annotations

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.plots import PlotPanel
from support.gui_helpers import live_key, open_window, run_and_wait


def _round_lines(panel: PlotPanel, key: str) -> list[float]:
    return sorted(line.value() + 0.5 for line in panel.latency.curves[key].round_lines)


def test_a_live_run_and_the_same_run_reopened_mark_the_same_round_starts(qtbot, tiny_config):
    window = open_window(qtbot)
    config = BenchmarkConfig.from_dict({**tiny_config, "iterations": 30, "rounds": 3})
    run = run_and_wait(qtbot, window, config)
    window.views.tick()  # the 5 Hz repaint, now
    for variant in config.variants:
        v = run.variants[variant]
        its, rounds = v.samples.iteration_array(), v.samples.round_array()
        expected = sorted(float(its[rounds == r].min()) for r in (1, 2))
        assert _round_lines(window.plots, live_key(window, variant)) == expected
        panel = PlotPanel()
        qtbot.addWidget(panel)
        panel.load_run(run)
        assert _round_lines(panel, variant) == expected
        assert panel.series[variant].round_starts == expected
