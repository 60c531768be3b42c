"""The window draws while its worker pauses between blocks of timed calls, and only then: the plot
moves during the timed calls, and no timed call meets a repaint (the run records both)."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.results.report.turns_text import turns_line
from support.gui_helpers import live_key, open_window, run_and_wait
from support.turn_thread import PausingThread


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
    # every pause taken: drawn, or reached past the cap, or left because its paint would end past it
    turns_taken = window.turns.drawn + window.turns.late + window.turns.overran
    assert turns_taken == len(pauses), "the window took every pause"
    assert not window.views.plots_held()
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


def test_a_pause_whose_update_outlasts_the_cap_paints_nothing_until_the_next_pause(qtbot):
    from PySide6.QtWidgets import QLabel

    from compile_studio.gui.draw_turns import DrawTurns

    window = QLabel("plots")
    qtbot.addWidget(window)
    window.show()
    slow = {"s": 0.0}

    def draw() -> None:
        window.setText(f"drawn at {time.monotonic()}")
        time.sleep(slow["s"])

    turns = DrawTurns(window, draw)
    thread = PausingThread()
    turns.follow(thread)

    def pause(block: int) -> protocol.TurnEvent:
        return protocol.TurnEvent(block=block, state="pause", variant="eager",
                                  sent_ns=time.monotonic_ns(), cap_ms=50.0)

    turns._on_turn(pause(0))  # a quick update: painted in the next turn, answered, then nothing painted
    qtbot.waitUntil(lambda: thread.answered == [0], timeout=5000)
    assert turns.drawn == 1
    assert turns.in_block and turns.paints.held
    slow["s"] = 0.08  # past the 50 ms cap: the worker has gone on
    turns._on_turn(pause(1))
    assert thread.answered == [0] and turns.overran == 1 and turns.drawn == 1
    assert turns.in_block and turns.paints.held, "nothing painted while the worker times"
    turns._on_turn(protocol.TurnEvent(block=1, state="end", variant="eager", sent_ns=time.monotonic_ns()))
    assert not turns.in_block and not turns.paints.held
    turns.release()
