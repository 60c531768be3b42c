"""The window draws while its worker pauses between blocks of timed calls, and only then: the plot
moves during the timed calls, and no timed call meets a repaint (the run records both)."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.results.turns_text import turns_line
from gui_helpers import live_key, open_window, run_and_wait


def _drawn_measured_calls(window, variants) -> int:
    """How many timed calls the latency curves draw now (all variants of the running run)."""
    total = 0
    for v in variants:
        curves = window.plots.latency.curves.get(live_key(window, v))
        if curves is not None:
            xs, _ = curves.measure_curve.getData()
            total += 0 if xs is None else len(xs)
    return total


def test_a_run_from_the_window_draws_in_the_pauses_and_no_timed_call_meets_a_repaint(qtbot, tiny_config):
    config = BenchmarkConfig.from_dict({**tiny_config, "iterations": 10_000, "rounds": 2, "diagnostics": False})
    window = open_window(qtbot)
    seen: list[tuple[float, str, int]] = []  # (when, state, calls drawn once the window took it)

    def look(state: str) -> None:
        seen.append((time.monotonic(), state, _drawn_measured_calls(window, config.variants)))

    def watch(event: protocol.TurnEvent) -> None:
        # once the window has handled the pause: what it left on screen
        QTimer.singleShot(0, lambda: look(event.state))

    def on_started() -> None:
        window.live.benchmark_thread.turn.connect(watch, Qt.ConnectionType.QueuedConnection)

    window.live.started.connect(on_started)
    run = run_and_wait(qtbot, window, config)
    assert run.status == "complete", run.message

    pauses = [s for s in seen if s[1] == "pause"]
    assert len(pauses) >= 2, "the timed calls came in several blocks"
    assert window.turns.drawn + window.turns.late == len(pauses), "the window took every pause"
    assert not window.plots_held()
    drawn = [n for _, _, n in seen]  # at each pause, and at the end of the timed calls
    updates = sum(1 for a, b in zip(drawn, drawn[1:]) if b > a)
    seconds = seen[-1][0] - pauses[0][0]
    assert updates / seconds >= 1.0, (updates, seconds, drawn)
    assert window.turns.drawn + 1 >= updates  # each pause drawn, and the end

    turns = run.measurement["turns"]
    for v in config.variants:
        assert turns[v]["overlapped_repaint"] == 0, turns[v]
        assert turns[v]["timed_calls_stamped"] == config.iterations
        assert turns[v]["paints"] and turns[v]["paints"] >= updates
    line = turns_line(run)
    assert line is not None and "met a repaint of the window: 0 of 20,000" in line
    # the Summary tab says it too, and says it again when the run is reopened
    assert window.plots.summary.run_note == line
    window.plots.summary.set_note("")
    assert window.show_run(run)
    assert window.plots.summary.run_note == line
