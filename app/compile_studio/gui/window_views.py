"""What the plots and the summary table show: the ticked runs, then the running or last run."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from ..results import RunResult, SummaryRow
from ..results.report.formatting import why_sentence
from .plots import SummaryBar

if TYPE_CHECKING:
    from .main_window import MainWindow


def run_name(window: MainWindow, run: RunResult) -> str:
    """The short name ``run`` has everywhere in the window (see :mod:`run_names`)."""
    return window.history.names.of(run)


def live_name(window: MainWindow) -> str:
    """The short name of the running (or last live) run, apart from every listed run's."""
    live = window.live
    thread = live.benchmark_thread
    label = thread.config.label.strip() if thread is not None else live.name
    try:
        when = datetime.strptime(live.run_id[:15], "%Y%m%d-%H%M%S")
    except ValueError:
        when = None
    return window.history.names.live_name(live.run_key, label or live.name, when)


def rebuild_views(window: MainWindow) -> None:
    """Plots and table from scratch: ticked runs, then the running or last run."""
    window.plots.clear()
    overlays = window._overlay_runs()
    for run in overlays:
        window.plots.load_run(
            run, key_prefix=f"{window.run_keys.of(run)}/", label_prefix=f"{run_name(window, run)} · "
        )
    live = window.live
    prefix = f"{live_name(window)} · " if overlays else ""
    if window.is_running() or window.current_run is None:
        for variant in live.variants:
            key = live.key(variant)
            window.plots.add_series(key, prefix + variant)
            for iterations, wall_ms, phase in live.chunks.get(variant, []):
                window.plots.append(key, iterations, wall_ms, phase)
            if variant in live.failed:
                window.plots.set_series_failed(key, True)
        if live.gpu_rows:
            window.plots.append_gpu_state(live.run_key, live_name(window), live.gpu_rows)
        window._update_live_bars()
    else:
        window.plots.load_run(
            window.current_run,
            key_prefix=f"{window.run_keys.of(window.current_run)}/",
            # the run shown may be one picked in the history, not the last live run
            label_prefix=f"{run_name(window, window.current_run)} · " if overlays else "",
        )
    window._plots_dirty = True
    window._on_tick()
    window._update_table()
    window.why_view.set_run(None if window.is_running() else window.current_run)


def update_live_bars(window: MainWindow) -> None:
    live = window.live
    if not live.run_id and not live.running:
        return
    prefix = f"{live.run_key}/"
    bars = [b for b in window.plots.summary_bars() if not b.key.startswith(prefix)]
    label_prefix = f"{live_name(window)} · " if window._overlay_runs() else ""
    for row in live.rows:
        bar = SummaryBar.from_row(row, prefix + row.name, label_prefix + row.name)
        if bar is not None:
            bars.append(bar)
    window.plots.set_summary(bars)


def update_table(window: MainWindow) -> None:
    runs: list[tuple[str, list[SummaryRow]]] = []
    why: dict[tuple[str, str], str] = {}

    def add(run: RunResult) -> None:
        name, rows = run_name(window, run), window._rows_of(run)
        runs.append((name, rows))
        for r in rows:
            because = why_sentence(run, r.name) if r.name != "eager" else None
            if because:
                why[(name, r.name)] = because

    if window.is_running() or window.current_run is None:
        if window.live.rows or window.is_running():
            runs.append((live_name(window), window.live.rows))
    else:
        add(window.current_run)
    for run in window._overlay_runs():
        if window.current_run is not None and window.run_keys.of(run) == window.run_keys.of(window.current_run):
            continue
        add(run)
    window.table_model.set_runs(runs, why)
