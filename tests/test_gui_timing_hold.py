"""While a worker on this machine times calls, the window's plots wait (unless View asks for redraws)."""

from __future__ import annotations

import pytest

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui import main_window
from gui_helpers import live_key, open_window, run_and_wait

HELD_NOTE = "plots drawn when the timed calls end"


def _drawn_measured_calls(window, variant: str) -> int:
    """How many timed calls of ``variant`` the latency curve draws now."""
    curves = window.plots.latency.curves.get(live_key(window, variant))
    if curves is None:
        return 0
    xs, _ = curves.measure_curve.getData()
    return 0 if xs is None else len(xs)


def _watch(window, config: BenchmarkConfig) -> list[tuple[bool, int, str]]:
    """At each batch of timed calls: (plots held, that variant's timed calls drawn so far, status text)."""
    seen: list[tuple[bool, int, str]] = []

    def on_samples(variant: str, _iterations, _wall_ms, phase: str, _round_index: int) -> None:
        if phase == "measure":
            seen.append((window.plots_held(), _drawn_measured_calls(window, variant), window.phase_label.text()))

    window.live.samples.connect(on_samples)
    return seen


@pytest.fixture
def frequent_refresh(monkeypatch):
    """A run's plots would be redrawn every 20 ms (once a second in the app): a held plot shows it."""
    monkeypatch.setattr(main_window, "LIVE_REFRESH_INTERVAL_MS", 20)


@pytest.fixture(params=[2, 1], ids=["rounds", "one-variant-after-another"])
def timed_for_a_while(request, tiny_config) -> BenchmarkConfig:
    """Enough timed calls to span many refreshes: in two rounds, or each variant's in one go
    (the next variant's compile and warm-up come between: the plots are drawn then)."""
    return BenchmarkConfig(**{**tiny_config, "iterations": 6000, "rounds": request.param})


def test_the_plots_wait_while_calls_are_timed_here_and_show_every_call_after(qtbot, frequent_refresh,
                                                                             timed_for_a_while):
    window = open_window(qtbot)
    assert not window.redraw_while_timing_action.isChecked(), "off unless the user turns it on"
    seen = _watch(window, timed_for_a_while)
    run = run_and_wait(qtbot, window, timed_for_a_while)
    assert run.status == "complete", run.message
    assert len(seen) > 2, "timed calls arrived in several batches"
    assert all(held for held, _, _ in seen), "held while calls are timed"
    assert all(drawn == 0 for _, drawn, _ in seen), "no timed call of a variant drawn while it is timed"
    assert all(HELD_NOTE in text for _, _, text in seen), "the status bar says why the plot waits"
    assert not window.plots_held()
    qtbot.waitUntil(
        lambda: all(_drawn_measured_calls(window, v) == run.variants[v].samples.count("measure")
                    for v in timed_for_a_while.variants),
        timeout=5000,
    )
    assert HELD_NOTE not in window.phase_label.text()


def test_redraws_while_timing_when_the_view_asks_for_them(qtbot, frequent_refresh, timed_for_a_while):
    window = open_window(qtbot)
    window.redraw_while_timing_action.setChecked(True)
    assert window.settings.redraw_plots_while_timing(), "the choice is kept in the settings"
    seen = _watch(window, timed_for_a_while)
    run = run_and_wait(qtbot, window, timed_for_a_while)
    assert run.status == "complete", run.message
    assert not any(held for held, _, _ in seen)
    assert any(drawn > 0 for _, drawn, _ in seen), "timed calls were drawn before the run ended"
    assert not any(HELD_NOTE in text for _, _, text in seen)
