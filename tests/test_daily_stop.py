"""Stop says "stopping…" at once; variants that never started stay in the table and the files."""

from __future__ import annotations

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.paths import runs_dir
from compile_studio.results import load_run
from support.gui_helpers import RUN_TIMEOUT_MS, live_key, open_window, series_data


def test_stop_says_stopping_at_once_and_keeps_the_variant_not_run(qtbot, tiny_config):
    window = open_window(qtbot)
    config = BenchmarkConfig(
        **{**tiny_config, "iterations": 200_000, "rounds": 1, "variants": ["eager", "aot_eager"]}
    )
    window.start_run(config)
    assert [r.row.status for r in window.table_model.rows()] in ([], ["pending", "pending"])
    key = live_key(window, "eager")
    qtbot.waitUntil(
        lambda: key in window.plots.series_keys() and len(series_data(window.plots, key)[0]) >= 20,
        timeout=RUN_TIMEOUT_MS,
    )
    with qtbot.waitSignal(window.run_finished, timeout=10_000) as blocker:
        window.stop_run()
        assert window.phase_label.text().startswith("stopping…")
        assert not window.stop_button.isEnabled()
    run = blocker.args[0]
    assert run.status == "stopped"
    assert list(run.variants) == ["eager", "aot_eager"]
    assert run.variants["aot_eager"].status == "not_run"
    statuses = {r.row.name: window.table_model.cell_text(i, "status") for i, r in enumerate(window.table_model.rows())}
    assert statuses["aot_eager"] == "not run"
    assert statuses["eager"].startswith("stopped")
    saved = load_run(runs_dir() / run.run_id)
    assert saved.variants["aot_eager"].status == "not_run"
