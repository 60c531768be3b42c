"""The verdict as the window shows it: the summary table's tooltip names the cause that decided
it, and the history lists each run's best verdict with what tells runs of one model apart.

Runs are written through the recorder from protocol events with chosen samples (real summaries,
real widgets; no worker needed: what is under test is how a verdict reads).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from PySide6.QtCore import Qt

from compile_studio.core import protocol
from compile_studio.core.variants import AA_CONTROL, is_eager
from compile_studio.gui.history_panel import COLUMNS, HistoryPanel
from compile_studio.gui.summary_table import SummaryTableModel
from compile_studio.results import RunStore, summarize
from compile_studio.results.analysis.verdict import CAUSE_WORDS, VerdictCause, cause_of
from compile_studio.results.storage.recorder import RunRecorder


def _events(rounds: dict[str, list[np.ndarray]], failed: tuple[str, ...] = ()):
    """A run's events: each variant measured in rounds, A B A B …; ``failed`` variants fail."""
    names = list(rounds)
    yield {"type": "hello", "environment": {"torch": "x", "devices": ["cpu"]}}
    for name in names:
        yield {"type": "phase", "variant": name, "phase": "build", "iterations": 0}
        if not is_eager(name):
            yield {"type": "compiled", "variant": name, "compile_s": 2.0, "first_call_ms": 2000.0,
                   "graphs": 1, "graph_breaks": 0, "break_reasons": [], "recompiles": 0}
    first = dict.fromkeys(names, 0)
    for r in range(len(rounds[names[0]])):
        for name in names:
            block = [float(v) for v in rounds[name][r]]
            yield {"type": "samples", "variant": name, "phase": "measure",
                   "first_iteration": first[name], "wall_ms": block, "device_ms": None, "round": r}
            first[name] += len(block)
    for name in names:
        yield {"type": "variant_done", "variant": name, "status": "done", "allclose": True,
               "max_abs_error": 1e-7, "max_rel_error": 1e-7, "peak_memory_bytes": 1024,
               "recompiles_in_window": 0, "checks": {"problems": []}}
    for name in failed:
        yield {"type": "error", "variant": name, "kind": "compile_failed", "message": "no C++ compiler"}
    yield {"type": "done", "status": "completed"}


def _recorder(store: RunStore, rounds, failed=(), **config) -> RunRecorder:
    variants = [*rounds, *failed]
    base = {"layers": "8,8", "batch_size": 2, "variants": variants, "rounds": 5, **config}
    rec = RunRecorder.in_store(store, base, "t")
    for e in _events(rounds, tuple(failed)):
        rec.handle(protocol.from_dict(e))
    return rec


def _record(store: RunStore, rounds, failed=(), **config):
    return _recorder(store, rounds, failed, **config).run


def _steady(rng, median, rounds=5, n=40, sigma=0.02):
    return [median * np.exp(rng.normal(0.0, sigma, n)) for _ in range(rounds)]


def _two_level(rng, fast, slow, share, rounds=5, n=40, sigma=0.02):
    return [np.where(rng.random(n) < share, slow, fast) * np.exp(rng.normal(0, sigma, n)) for _ in range(rounds)]


def _rows(run):
    return {r.name: r for r in summarize(run)}


def _tooltip(rows, name: str) -> str:
    model = SummaryTableModel()
    model.set_runs([("run", list(rows.values()))])
    i = list(rows).index(name)
    return model.data(model.index(i, model.headers().index("verdict")), Qt.ItemDataRole.ToolTipRole)


def test_an_interval_including_one_is_named_as_the_cause_even_when_a_check_failed(tmp_path):
    """Both sides fall into two levels and lie together: the interval includes 1.00, and the
    tooltip says so first (it named the two-level check before)."""
    rng = np.random.default_rng(3)
    eager = _two_level(rng, 5.0, 9.0, 0.3, sigma=0.03)
    variant = _two_level(rng, 5.0, 9.0, 0.3, sigma=0.03)
    rows = _rows(_record(RunStore(tmp_path), {"eager": eager, "default": variant}))
    row = rows["default"]
    assert row.speedup_lo < 1.0 < row.speedup_hi
    assert rows["eager"].two_level and row.two_level  # the checks failed as well
    assert row.verdict == "cannot tell"
    assert cause_of(row.verdict, row.verdict_reason, row.speedup_lo, row.speedup_hi) is (
        VerdictCause.INTERVAL_INCLUDES_ONE
    )
    tip = _tooltip(rows, "default")
    assert tip.startswith("cannot tell: ") and "includes 1.00" in tip.split("\n")[0]
    # the check is named after the cause, as what the checks also saw
    assert tip.index("includes 1.00") < tip.index("two levels")
    assert "the checks also saw" in tip


def test_a_check_that_decides_is_named_and_no_interval_is_blamed(tmp_path):
    rng = np.random.default_rng(11)
    eager = _two_level(rng, 5.0, 55.0, 0.3, sigma=0.05)
    rows = _rows(_record(RunStore(tmp_path), {"eager": eager, "aot_eager": _steady(rng, 1.0)}))
    row = rows["aot_eager"]
    assert row.verdict == "cannot tell" and row.speedup_lo > 1.0
    assert cause_of(row.verdict, row.verdict_reason, row.speedup_lo, row.speedup_hi) is VerdictCause.CHECKS
    tip = _tooltip(rows, "aot_eager")
    assert "eager's calls fall into two levels" in tip and "includes 1.00" not in tip


def test_the_noise_floor_is_named_when_it_decides(tmp_path):
    rng = np.random.default_rng(13)
    eager = _steady(rng, 2.0, sigma=0.01)
    aa = [e * f for e, f in zip(_steady(rng, 1.0, sigma=0.01), (1.0, 1.12, 0.9, 1.1, 0.92))]
    rounds = {"eager": eager, AA_CONTROL: [a * 2.0 for a in aa], "default": _steady(rng, 2.0 / 1.05, sigma=0.01)}
    rows = _rows(_record(RunStore(tmp_path), rounds))
    row = rows["default"]
    assert row.verdict == "cannot tell" and row.speedup_lo > 1.0
    assert cause_of(row.verdict, row.verdict_reason, row.speedup_lo, row.speedup_hi) is VerdictCause.NOISE_FLOOR
    tip = _tooltip(rows, "default")
    assert "inside the A/A noise floor" in tip and "includes 1.00" not in tip


def test_clear_and_failed_verdicts_name_their_causes(tmp_path):
    rng = np.random.default_rng(9)
    rounds = {"eager": _steady(rng, 2.0), "fast": _steady(rng, 1.0)}
    rows = _rows(_record(RunStore(tmp_path), rounds, failed=("broken",)))
    fast, broken = rows["fast"], rows["broken"]
    assert fast.verdict == "faster"
    assert cause_of(fast.verdict, fast.verdict_reason, fast.speedup_lo, fast.speedup_hi) is (
        VerdictCause.INTERVAL_CLEAR
    )
    assert broken.verdict == "failed"
    assert cause_of(broken.verdict, broken.verdict_reason) is VerdictCause.FAILED
    assert "no C++ compiler" in _tooltip(rows, "broken")


def test_a_summary_kept_from_before_gets_the_cause_the_rule_used(tmp_path):
    """A stored row whose sentence names a check while its interval includes 1.00 (as summaries
    kept from before read): the tooltip leads with the interval, then the old sentence."""
    rng = np.random.default_rng(9)
    rows = _rows(_record(RunStore(tmp_path), {"eager": _steady(rng, 2.0), "default": _steady(rng, 1.0)}))
    old = dataclasses.replace(
        rows["default"], verdict="cannot tell", speedup=1.01, speedup_lo=0.9, speedup_hi=1.12,
        verdict_reason="1.01× [0.90–1.12], but not resolvable on this machine now: eager's calls fall "
        "into two levels (5 ms and 9 ms, 30 % slow); close other programs or raise rounds",
    )
    tip = _tooltip({"eager": rows["eager"], "default": old}, "default")
    first = tip.split("\n")[0]
    assert first.startswith("cannot tell: decided by ") and "includes 1.00" in first
    assert CAUSE_WORDS[VerdictCause.INTERVAL_INCLUDES_ONE] in first
    assert "two levels" in tip.split("\n", 1)[1]


# -- the history's best verdict -----------------------------------------------------------------


@pytest.fixture
def store():
    from compile_studio.gui.paths import runs_dir

    return RunStore(runs_dir())


def test_history_shows_each_runs_best_verdict_not_a_bare_speedup(qtbot, store):
    rng = np.random.default_rng(5)
    made = {
        "quick": _record(store, {"eager": _steady(rng, 2.0), "default": _steady(rng, 1.4),
                                 "aot_eager": _steady(rng, 2.5)}, label="quick"),
        "slow": _record(store, {"eager": _steady(rng, 2.0), "default": _steady(rng, 2.0 / 0.82)}, label="slow"),
        "even": _record(store, {"eager": _two_level(rng, 5.0, 9.0, 0.3, sigma=0.03),
                                "default": _two_level(rng, 5.0, 9.0, 0.3, sigma=0.03)}, label="even"),
        "broken": _record(store, {"eager": _steady(rng, 2.0)}, failed=("default",), label="broken"),
    }
    panel = HistoryPanel(store)
    qtbot.addWidget(panel)
    panel.refresh()
    best = COLUMNS.index("best speedup")
    texts = {}
    for i in range(panel.tree.topLevelItemCount()):
        item = panel.tree.topLevelItem(i)
        label = item.text(COLUMNS.index("model")).split(" · ")[0]
        texts[label] = (item.text(best), item.toolTip(best))
    assert set(texts) == set(made)
    quick = _rows(made["quick"])["default"]
    assert texts["quick"][0] == f"faster {quick.speedup:.2f}×"
    assert "best verdict: default: faster:" in texts["quick"][1]
    slow = _rows(made["slow"])["default"]
    assert slow.verdict == "slower" and texts["slow"][0] == f"slower {slow.speedup:.2f}×"
    assert texts["even"][0] == "cannot tell"
    assert texts["broken"][0] == "failed"
    header = panel.tree.headerItem()
    assert header.text(best) == "best verdict"


def test_runs_of_one_model_are_told_apart_without_hovering(qtbot, store):
    """Same model, different batch, dtype or time: the history's run column differs for each."""
    rng = np.random.default_rng(6)
    rounds = {"eager": _steady(rng, 2.0), "default": _steady(rng, 1.0)}
    runs = [
        _record(store, rounds, batch_size=2),
        _record(store, rounds, batch_size=64),
        _record(store, rounds, batch_size=64, dtype="bf16"),
    ]
    # the same batch and dtype an hour later
    later = _recorder(store, rounds, batch_size=2)
    later.run.created = "2030-01-02T15:04:00"
    from compile_studio.results.storage.run_files import run_to_json

    (later.folder / "run.json").write_text(run_to_json(later.run))
    panel = HistoryPanel(store)
    qtbot.addWidget(panel)
    panel.refresh()
    model = COLUMNS.index("model")
    lines = [panel.tree.topLevelItem(i).text(model) for i in range(panel.tree.topLevelItemCount())]
    assert len(lines) == len(runs) + 1 == len(set(lines))
    # each starts with the run's short name (no label: its date and time), the one it has everywhere
    assert any(" · b64 · bf16 · " in line for line in lines)
    assert "01-02 15:04:00 · b2 · fp32 · MLP 8,8" in lines
    for line in lines:
        assert re.match(r"\d\d-\d\d \d\d:\d\d:\d\d( #\d)? · b\d+ · \w+ · MLP 8,8$", line), line
