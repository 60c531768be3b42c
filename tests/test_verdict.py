"""Rounds, checks and the verdict: intervals that stay honest when the machine is not."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import time

import numpy as np
import pytest

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.core.variants import AA_CONTROL, is_eager
from compile_studio.results import RunStore, load_run, summarize
from compile_studio.results.analysis.stats import (
    SpeedupInterval,
    block_bootstrap_speedup_interval,
    bootstrap_speedup_interval,
    floor_subtracted_speedup,
    round_ratio_interval,
    sample_checks,
)
from compile_studio.results.analysis.verdict import VerdictKind, harness_note, judge, noise_floor
from compile_studio.results.report.run_export import markdown_report
from compile_studio.results.storage.recorder import RunRecorder
from compile_studio.results.storage.run_files import summary_to_csv

# -- synthetic runs measured in rounds ------------------------------------------------------


def round_events(rounds: dict[str, list[np.ndarray]], allclose: dict[str, bool] | None = None):
    """Events of a run whose variants were measured in rounds, A B A B …, in that order."""
    names = list(rounds)
    yield {"type": "hello", "environment": {"torch": "x", "devices": ["cpu"]}}
    for name in names:
        yield {"type": "phase", "variant": name, "phase": "build", "iterations": 0}
        if not is_eager(name):
            yield {"type": "compiled", "variant": name, "compile_s": 2.0, "first_call_ms": 2000.0,
                   "graphs": 1, "graph_breaks": 0, "break_reasons": [], "recompiles": 0}
        yield {"type": "samples", "variant": name, "phase": "warmup", "first_iteration": 0,
               "wall_ms": [9.0] * 3, "device_ms": None}
    first = dict.fromkeys(names, 3)
    for r in range(len(rounds[names[0]])):
        for name in names:
            block = [float(v) for v in rounds[name][r]]
            yield {"type": "samples", "variant": name, "phase": "measure",
                   "first_iteration": first[name], "wall_ms": block, "device_ms": None, "round": r}
            first[name] += len(block)
    for name in names:
        ok = True if allclose is None else allclose.get(name, True)
        yield {"type": "variant_done", "variant": name, "status": "done", "allclose": ok,
               "max_abs_error": 1e-7, "max_rel_error": 1e-7, "peak_memory_bytes": 1024,
               "memory_kind": "rss_peak_growth", "recompiles_in_window": 0,
               "checks": {"problems": [] if ok else ["first call: max rel error 5e-02"]}}
    yield {"type": "done", "status": "completed"}


def record(tmp_path, events, variants):
    store = RunStore(tmp_path)
    config = {"layers": "8,8", "batch_size": 2, "variants": list(variants), "rounds": 5}
    rec = RunRecorder.in_store(store, config, "t")
    for e in events:
        rec.handle(protocol.from_dict(e))
    return rec


def steady(rng, median, rounds=5, n=40, sigma=0.02):
    """Per-round samples around ``median`` with small i.i.d. noise and no drift."""
    return [median * np.exp(rng.normal(0.0, sigma, n)) for _ in range(rounds)]


def rows_of(run):
    return {r.name: r for r in summarize(run)}


# -- rounds ---------------------------------------------------------------------------------


def test_rounds_alternate_in_the_recorded_order(tmp_path):
    rng = np.random.default_rng(0)
    rounds = {"eager": steady(rng, 2.0), AA_CONTROL: steady(rng, 2.0), "default": steady(rng, 1.0)}
    rec = record(tmp_path, round_events(rounds), rounds)
    with open(rec.folder / "samples.csv", newline="") as fh:
        measured = [(r["variant"], int(r["round"])) for r in csv.DictReader(fh) if r["phase"] == "measure"]
    blocks = [key for i, key in enumerate(measured) if i == 0 or measured[i - 1] != key]
    assert blocks == [(name, r) for r in range(5) for name in rounds]
    loaded = load_run(rec.folder)
    for name, per_round in rounds.items():
        got = loaded.variants[name].samples.measured_rounds()
        assert [g.tolist() for g in got] == [pytest.approx(p.tolist()) for p in per_round]
    row = rows_of(loaded)["default"]
    assert row.rounds == 5 and row.interval_method == "rounds"
    assert row.speedup == pytest.approx(2.0, rel=0.02)
    assert row.speedup_lo < row.speedup < row.speedup_hi


def test_real_run_alternates_rounds_and_states_the_noise_floor(tmp_path, tiny_config):
    if "rounds" not in BenchmarkConfig.__dataclass_fields__:
        pytest.skip("the engine measures without rounds")
    cmd = [sys.executable, "-m", "compile_studio.cli", "run", "--quiet", "--out", str(tmp_path),
           "--layers", tiny_config["layers"], "--batch-size", str(tiny_config["batch_size"]),
           "--device", "cpu", "--iterations", "30", "--warmup", "3", "--rounds", "3",
           "--variants", f"eager,{AA_CONTROL}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    (folder,) = tmp_path.iterdir()
    with open(folder / "samples.csv", newline="") as fh:
        measured = [(r["variant"], r["round"]) for r in csv.DictReader(fh) if r["phase"] == "measure"]
    blocks = [key for i, key in enumerate(measured) if i == 0 or measured[i - 1] != key]
    assert blocks == [(name, str(r)) for r in range(3) for name in ("eager", AA_CONTROL)]
    assert f"= {AA_CONTROL}: " in p.stdout and "A/A control" in p.stdout
    assert "are not resolvable on this machine now" in p.stdout


# -- checks ---------------------------------------------------------------------------------


def test_two_level_samples_are_flagged():
    rng = np.random.default_rng(1)
    n = 200
    levels = np.where(rng.random(n) < 0.3, 55.0, 5.0) * np.exp(rng.normal(0, 0.05, n))
    checks = sample_checks(np.array_split(levels, 5))
    assert checks.two_levelled and checks.blocking
    assert checks.two_level.low_ms == pytest.approx(5.0, rel=0.05)
    assert checks.two_level.high_ms == pytest.approx(55.0, rel=0.05)
    assert any(p.startswith("two levels") for p in checks.problems())


def test_drifting_samples_are_flagged():
    rng = np.random.default_rng(2)
    per_round = [1.0 * (1.06**r) * np.exp(rng.normal(0, 0.02, 40)) for r in range(5)]
    checks = sample_checks(per_round)
    assert checks.drifting and checks.blocking
    assert checks.drift.change == pytest.approx(1.06**4 - 1, abs=0.03)
    assert checks.spread_pct > 20
    assert any(p.startswith("drift +") for p in checks.problems())


def test_drift_within_one_round_is_flagged_from_blocks():
    rng = np.random.default_rng(3)
    one = np.linspace(1.0, 1.4, 200) * np.exp(rng.normal(0, 0.02, 200))
    checks = sample_checks([one])
    assert checks.groups_are == "blocks" and checks.drifting


def test_iid_samples_are_not_flagged():
    rng = np.random.default_rng(4)
    flagged = 0
    for _ in range(50):
        checks = sample_checks([np.exp(rng.normal(0.0, 0.1, 40)) for _ in range(5)])
        flagged += checks.drifting or checks.two_levelled or checks.heavy_tail
    assert flagged <= 3


def test_heavy_tail_is_reported_but_does_not_decide():
    rng = np.random.default_rng(5)
    per_round = [np.r_[np.exp(rng.normal(0, 0.02, 39)), 5.0] for _ in range(5)]
    checks = sample_checks(per_round)
    assert checks.heavy_tail and not checks.blocking
    assert any(p.startswith("heavy tail") for p in checks.problems())


# -- the interval from rounds -----------------------------------------------------------------


def abab(rng, ratio, rounds=5, n=40, drift=0.0, load=0.0, sequential=False):
    """Eager and a variant ``ratio``× faster, measured A B A B … (or A A … B B … when
    ``sequential``) on a machine whose speed drifts by ``drift`` per block of calls and
    jumps by a random factor (log sd ``load``) per block."""
    eager: list[np.ndarray] = []
    variant: list[np.ndarray] = []
    order = [(eager, 2.0), (variant, 2.0 / ratio)]
    schedule = (
        [pair for pair in order for _ in range(rounds)] if sequential else order * rounds
    )
    level = 1.0
    for out, base in schedule:
        level *= 1.0 + drift
        jump = np.exp(rng.normal(0.0, load))
        out.append(base * level * jump * np.exp(rng.normal(0.0, 0.03, n)))
    return eager, variant


def test_interval_from_rounds_widens_under_drift_instead_of_biasing():
    rng = np.random.default_rng(6)
    quiet = round_ratio_interval(*abab(rng, 2.0))
    drifting = round_ratio_interval(*abab(rng, 2.0, drift=0.03, load=0.05))
    assert quiet.covers(2.0) and drifting.covers(2.0)
    assert np.log(drifting.hi / drifting.lo) > 2 * np.log(quiet.hi / quiet.lo)
    # the same machine measured one variant after the other: confidently wrong
    eager, variant = abab(rng, 2.0, drift=0.03, load=0.05, sequential=True)
    one_round = block_bootstrap_speedup_interval(np.concatenate(eager), np.concatenate(variant))
    assert not one_round.covers(2.0) and one_round.point < 1.9
    assert sample_checks(variant).drifting


def test_interval_from_rounds_stays_calibrated_under_load():
    rng = np.random.default_rng(7)
    covered_rounds = covered_iid = 0
    runs = 60
    for _ in range(runs):
        eager, variant = abab(rng, 1.0, load=0.08)
        covered_rounds += round_ratio_interval(eager, variant).covers(1.0)
        lo, hi = bootstrap_speedup_interval(np.concatenate(eager), np.concatenate(variant), resamples=300)
        covered_iid += lo <= 1.0 <= hi
    assert covered_rounds >= 0.88 * runs
    assert covered_iid < 0.7 * runs


def test_one_round_falls_back_to_a_block_bootstrap():
    rng = np.random.default_rng(8)
    eager = 2.0 * np.exp(rng.normal(0, 0.03, 200))
    variant = 1.0 * np.exp(rng.normal(0, 0.03, 200))
    interval = round_ratio_interval([eager], [variant])
    assert interval.method == "block bootstrap" and interval.rounds == 1
    assert interval.lo <= interval.point <= interval.hi
    assert interval.covers(2.0)
    assert block_bootstrap_speedup_interval(eager, variant) == interval


# -- the verdict ------------------------------------------------------------------------------


def print_run_text(run) -> str:
    from compile_studio.cli.commands import print_run

    out = io.StringIO()
    print_run(run, out)
    return out.getvalue()


def test_clear_difference_is_faster_with_break_even(tmp_path):
    rng = np.random.default_rng(9)
    rounds = {"eager": steady(rng, 2.0), "default": steady(rng, 1.0), "slow": steady(rng, 4.0)}
    rec = record(tmp_path, round_events(rounds), rounds)
    rows = rows_of(rec.run)
    assert rows["default"].verdict == "faster"
    assert rows["default"].break_even_calls == pytest.approx(2000.0 / 1.0, rel=0.05)
    assert rows["slow"].verdict == "slower" and rows["slow"].break_even_calls is None
    text = print_run_text(rec.run)
    assert "= default: faster: 2.00× [" in text and "pays off after" in text
    assert "= slow: slower: " in text and "never pays off" in text


def test_cannot_tell_when_the_interval_straddles_one(tmp_path):
    rng = np.random.default_rng(10)
    eager, variant = abab(rng, 1.0, load=0.15)
    rounds = {"eager": eager, "default": variant}
    rec = record(tmp_path, round_events(rounds), rounds)
    row = rows_of(rec.run)["default"]
    assert row.speedup_lo < 1.0 < row.speedup_hi
    assert row.verdict == "cannot tell" and row.break_even_calls is None
    assert "includes 1.00: not resolvable on this machine now: eager differs by up to" in row.verdict_reason
    assert "close other programs or raise rounds" in row.verdict_reason
    text = print_run_text(rec.run)
    assert "= default: cannot tell: " in text and "pays off" not in text
    report = markdown_report(rec.run)
    assert "### Verdict" in report and "- **default**: cannot tell: " in report
    with io.StringIO(summary_to_csv(rec.run)) as fh:
        csv_rows = {r["name"]: r for r in csv.DictReader(fh)}
    assert csv_rows["default"]["verdict"] == "cannot tell"
    assert csv_rows["default"]["verdict_reason"] == row.verdict_reason


def test_cannot_tell_when_a_check_fails_on_eager(tmp_path):
    rng = np.random.default_rng(11)
    eager = [np.where(rng.random(40) < 0.3, 55.0, 5.0) * np.exp(rng.normal(0, 0.05, 40)) for _ in range(5)]
    rounds = {"eager": eager, "aot_eager": steady(rng, 1.0)}
    rec = record(tmp_path, round_events(rounds), rounds)
    rows = rows_of(rec.run)
    assert rows["eager"].two_level and "two levels" in rows["eager"].checks
    row = rows["aot_eager"]
    assert row.verdict == "cannot tell" and row.break_even_calls is None
    assert "eager's calls fall into two levels" in row.verdict_reason
    assert "cannot tell" in print_run_text(rec.run) and "cannot tell" in markdown_report(rec.run)


def test_a_difference_larger_than_what_the_checks_saw_still_stands(tmp_path):
    """Two levels 50 % apart cannot hide a variant three times as slow: "slower", checks named."""
    rng = np.random.default_rng(21)
    eager = [np.where(rng.random(40) < 0.3, 7.5, 5.0) * np.exp(rng.normal(0, 0.01, 40)) for _ in range(5)]
    rounds = {"eager": eager, "slow": steady(rng, 16.0)}
    rec = record(tmp_path, round_events(rounds), rounds)
    rows = rows_of(rec.run)
    assert rows["eager"].two_level
    row = rows["slow"]
    assert row.verdict == "slower"
    assert "the whole interval lies beyond what the checks saw" in row.verdict_reason
    assert "eager's calls fall into two levels" in row.verdict_reason
    # the same two levels against a variant only 30 % slower: cannot tell
    rounds = {"eager": eager, "slow": steady(rng, 5.0 * 1.3)}
    rec = record(tmp_path / "b", round_events(rounds), rounds)
    assert rows_of(rec.run)["slow"].verdict == "cannot tell"


def test_a_few_stalled_calls_do_not_hide_a_clear_difference(tmp_path):
    """One call in eight stalled 600× (a busy machine's preemptions): the medians stand."""
    rng = np.random.default_rng(22)

    def stalled(median):
        return [np.where(rng.random(40) < 0.12, 15.0, median) * np.exp(rng.normal(0, 0.02, 40)) for _ in range(5)]

    rounds = {"eager": stalled(0.025), "slow": stalled(0.08)}
    rec = record(tmp_path, round_events(rounds), rounds)
    rows = rows_of(rec.run)
    assert rows["eager"].two_level and rows["slow"].two_level
    assert rows["slow"].verdict == "slower"
    assert "two levels" in rows["slow"].verdict_reason


def test_aa_control_gives_the_noise_floor(tmp_path):
    rng = np.random.default_rng(12)
    eager, aa = abab(rng, 1.0, load=0.04)
    _, small = abab(rng, 1.02, load=0.0)
    rounds = {"eager": eager, AA_CONTROL: aa, "default": [s * 1.0 for s in small]}
    rec = record(tmp_path, round_events(rounds), rounds)
    rows = rows_of(rec.run)
    aa_row = rows[AA_CONTROL]
    assert aa_row.verdict == "cannot tell"
    floor_pct = aa_row.noise_floor_pct
    assert floor_pct == pytest.approx(
        100 * noise_floor(round_ratio_interval(eager, aa)), rel=1e-9
    )
    assert f"differences smaller than {floor_pct:.0f} % are not resolvable" in aa_row.verdict_reason
    assert rows["default"].noise_floor_pct == floor_pct
    text = print_run_text(rec.run)
    assert f"= {AA_CONTROL}: cannot tell: A/A control" in text
    assert "not resolvable on this machine now" in markdown_report(rec.run)
    # the A/A control is not a compiled variant: it is no candidate for the best speedup
    assert rec.run.best_speedup() == pytest.approx(rows["default"].speedup)


def test_difference_inside_the_noise_floor_cannot_be_told(tmp_path):
    rng = np.random.default_rng(13)
    eager = steady(rng, 2.0, sigma=0.01)
    aa = [e * f for e, f in zip(steady(rng, 1.0, sigma=0.01), (1.0, 1.12, 0.9, 1.1, 0.92))]
    default = steady(rng, 2.0 / 1.05, sigma=0.01)
    rounds = {"eager": eager, AA_CONTROL: aa, "default": default}
    rec = record(tmp_path, round_events(rounds), rounds)
    rows = rows_of(rec.run)
    assert rows["default"].speedup_lo > 1.0
    assert rows[AA_CONTROL].noise_floor_pct > 5.0
    assert rows["default"].verdict == "cannot tell"
    assert "inside the A/A noise floor" in rows["default"].verdict_reason
    assert rows["default"].break_even_calls is None


def test_incorrect_whatever_its_speed(tmp_path):
    rng = np.random.default_rng(14)
    rounds = {"eager": steady(rng, 2.0), "default": steady(rng, 0.5)}
    rec = record(tmp_path, round_events(rounds, allclose={"default": False}), rounds)
    row = rows_of(rec.run)["default"]
    assert row.verdict == str(VerdictKind.INCORRECT) == "incorrect"
    assert "fp64 reference" in row.verdict_reason and "max rel error 5e-02" in row.verdict_reason
    assert row.break_even_calls is None
    assert rec.run.best_speedup() is None


def test_failed_variant(tmp_path):
    rng = np.random.default_rng(15)
    rounds = {"eager": steady(rng, 2.0)}
    events = list(round_events(rounds))
    events.insert(-1, {"type": "error", "variant": "default", "kind": "compile_failed",
                       "message": "no C++ compiler"})
    rec = record(tmp_path, events, ["eager", "default"])
    row = rows_of(rec.run)["default"]
    assert row.verdict == "failed"


def test_device_speedup_and_pipelined_pass_through(tmp_path):
    rng = np.random.default_rng(16)
    rounds = {"eager": steady(rng, 2.0), "default": steady(rng, 1.0)}
    events = []
    for e in round_events(rounds):
        if e["type"] == "samples" and e["phase"] == "measure":
            e = dict(e, device_ms=[v / 2 for v in e["wall_ms"]] if e["variant"] == "eager" else list(e["wall_ms"]))
        if e["type"] == "variant_done":
            e = dict(e, pipelined_ms=0.8 if e["variant"] == "default" else 1.9)
        events.append(e)
    rec = record(tmp_path, events, rounds)
    row = rows_of(rec.run)["default"]
    assert row.device_speedup == pytest.approx(1.0, rel=0.03)
    assert row.device_speedup_lo <= row.device_speedup <= row.device_speedup_hi
    assert row.speedup == pytest.approx(2.0, rel=0.03)
    assert row.pipelined_ms == 0.8


# -- the harness floor -----------------------------------------------------------------------


def test_harness_note_names_the_floor_only_where_it_is_a_sizeable_share():
    assert harness_note(0.2, 0.1, 0.03, 2.43) == " (wall time, which includes the timer's 30 µs per call; without it: 2.43×)"
    assert harness_note(0.2, 0.1, 0.0099, 2.2) == ""  # under 10 % of both medians
    # a slower variant: eager's is the smaller median, and the floor is a sizeable share of it
    assert "without it: 0.40×" in harness_note(0.1, 0.2, 0.02, 0.4)
    assert harness_note(0.05, 0.04, 0.03, None).endswith("; too close to it to take it out)")
    assert harness_note(0.04, 0.02, 0.0025, 2.2).startswith(" (wall time, which includes the timer's 2.5 µs")
    assert harness_note(None, 0.1, 0.03, None) == harness_note(0.2, 0.1, None, None) == ""
    assert harness_note(0.2, 0.0, 0.03, None) == harness_note(0.2, 0.1, float("nan"), None) == ""


def test_the_verdict_judges_wall_time_and_says_so_beside_the_interval():
    interval = SpeedupInterval(point=2.0, lo=1.9, hi=2.1, method="rounds", rounds=5, spread_pct=None)
    note = harness_note(0.2, 0.1, 0.03, floor_subtracted_speedup(0.2, 0.1, 0.03))
    kw = dict(status="done", error=None, allclose=True, correctness_problems=[], interval=interval,
              checks=None, baseline_checks=None, floor=None)
    plain = judge("default", **kw)
    noted = judge("default", harness=note, **kw)
    assert plain is not None and noted is not None
    assert noted.kind is plain.kind is VerdictKind.FASTER  # the wall-time interval decides
    assert noted.reason == plain.reason.replace("2.00× [1.90–2.10]", "2.00× [1.90–2.10]" + note)
    assert "(wall time, which includes the timer's 30 µs per call; without it: 2.43×)" in noted.reason
    aa = judge(AA_CONTROL, harness=note, **kw)
    assert aa is not None and "wall time" not in aa.reason


def test_a_run_reports_the_floor_subtracted_speedup_and_names_the_floor(tmp_path):
    rng = np.random.default_rng(30)
    rounds = {"eager": steady(rng, 0.2), "default": steady(rng, 0.1), "slow": steady(rng, 4.0)}
    events = list(round_events(rounds))
    events.insert(1, {"type": "run_info", "harness_floor_ms": 0.03})
    rec = record(tmp_path, events, rounds)
    rows = rows_of(rec.run)
    fast = rows["default"]
    assert fast.verdict == "faster" and fast.speedup == pytest.approx(2.0, rel=0.03)
    expected = (rows["eager"].median_ms - 0.03) / (fast.median_ms - 0.03)
    assert fast.floor_speedup == pytest.approx(expected) and expected > 2.2
    assert f"(wall time, which includes the timer's 30 µs per call; without it: {expected:.2f}×)" in fast.verdict_reason
    assert rows["eager"].floor_speedup == pytest.approx(1.0)
    # the floor is 15 % of eager's median: named for the slow variant too, whose verdict stands
    assert rows["slow"].verdict == "slower" and "without it: " in rows["slow"].verdict_reason
    assert "timer's 30 µs per call" in print_run_text(rec.run)
    assert "timer's 30 µs per call" in markdown_report(rec.run)
    with io.StringIO(summary_to_csv(rec.run)) as fh:
        csv_rows = {r["name"]: r for r in csv.DictReader(fh)}
    assert float(csv_rows["default"]["floor_speedup"]) == pytest.approx(expected)
    loaded = load_run(rec.folder)
    assert rows_of(loaded)["default"].floor_speedup == pytest.approx(expected)


def test_a_floor_far_below_the_medians_is_not_named(tmp_path):
    rng = np.random.default_rng(31)
    rounds = {"eager": steady(rng, 2.0), "default": steady(rng, 1.0)}
    events = list(round_events(rounds))
    events.insert(1, {"type": "run_info", "harness_floor_ms": 0.01})
    rec = record(tmp_path, events, rounds)
    row = rows_of(rec.run)["default"]
    assert row.floor_speedup == pytest.approx((rows_of(rec.run)["eager"].median_ms - 0.01) / (row.median_ms - 0.01))
    assert "wall time" not in row.verdict_reason
    # a run without a recorded floor (an older one) has none
    bare = record(tmp_path / "bare", round_events(rounds), rounds)
    assert rows_of(bare.run)["default"].floor_speedup is None


def test_summary_table_shows_the_verdict_with_its_sentence(qtbot, tmp_path):
    from PySide6.QtCore import Qt

    from compile_studio.gui.summary_table import SummaryTableModel

    rng = np.random.default_rng(17)
    eager, variant = abab(rng, 1.0, load=0.15)
    rounds = {"eager": eager, "default": variant}
    rec = record(tmp_path, round_events(rounds), rounds)
    rows = summarize(rec.run)
    model = SummaryTableModel()
    model.set_runs([("run", rows)])
    assert "verdict" in model.headers() and "speedup [95% CI]" in model.headers()
    i = [r.name for r in rows].index("default")
    assert model.cell_text(i, "verdict") == "cannot tell"
    col = model.headers().index("verdict")
    tip = model.data(model.index(i, col), Qt.ItemDataRole.ToolTipRole)
    assert tip == rows[i].verdict_text and "not resolvable" in tip


# -- machine load ---------------------------------------------------------------------------


def test_machine_load_names_a_busy_process():
    psutil = pytest.importorskip("psutil")
    from compile_studio.results.analysis.machine_load import machine_load

    busy = subprocess.Popen(
        [sys.executable, "-c", "import time\nt = time.time() + 20\nwhile time.time() < t: pass"]
    )
    try:
        time.sleep(0.3)
        load = machine_load(top=50, sample_s=0.5)
        assert load.cpu_count == psutil.cpu_count()
        assert load.cpu_percent is not None and 0.0 <= load.cpu_percent <= 100.0
        pids = [p.pid for p in load.busiest]
        assert busy.pid in pids
        assert next(p for p in load.busiest if p.pid == busy.pid).cpu_percent > 20.0
        assert [p.cpu_percent for p in load.busiest] == sorted((p.cpu_percent for p in load.busiest), reverse=True)
        assert busy.pid not in [p.pid for p in machine_load(exclude_pids=[busy.pid], top=50, sample_s=0.1).busiest]
        assert load.to_dict()["cpu_count"] == load.cpu_count
        assert "CPUs" in load.summary()
    finally:
        busy.kill()
        busy.wait()


def test_a_difference_beyond_the_checks_but_inside_the_aa_floor_is_cannot_tell():
    """Two levels in the baseline, a variant three times as fast: beyond what the checks could
    move — but when the A/A control itself moved by more than that, nothing is claimed."""
    rng = np.random.default_rng(23)
    levels = sample_checks([np.where(rng.random(40) < 0.3, 7.5, 5.0) for _ in range(5)])
    steady_checks = sample_checks([np.full(40, 1.7) * np.exp(rng.normal(0, 0.01, 40)) for _ in range(5)])
    assert levels is not None and levels.two_levelled
    interval = SpeedupInterval(point=3.0, lo=2.8, hi=3.2, method="rounds", rounds=5, spread_pct=5.0)
    common = dict(status="done", error=None, allclose=True, correctness_problems=None, interval=interval,
                  checks=steady_checks, baseline_checks=levels)
    clear = judge("default", floor=0.10, **common)
    assert clear is not None and clear.kind == VerdictKind.FASTER
    assert "beyond what the checks saw" in clear.reason
    inside = judge("default", floor=2.5, **common)  # the A/A control moved by up to 250 %
    assert inside is not None and inside.kind == VerdictKind.CANNOT_TELL
    assert "inside the A/A noise floor" in inside.reason
