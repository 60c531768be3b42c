"""Statistics against numpy on known data."""

from __future__ import annotations

import numpy as np
import pytest

from compile_studio.results.analysis.stats import (
    bootstrap_speedup_interval,
    break_even_calls,
    latency_stats,
)


def test_stats_match_numpy():
    rng = np.random.default_rng(3)
    x = rng.lognormal(0.0, 0.3, size=1001)
    s = latency_stats(x)
    assert s is not None
    assert s.n == 1001
    assert s.mean == pytest.approx(x.mean())
    assert s.median == pytest.approx(np.median(x))
    assert s.std == pytest.approx(x.std(ddof=1))
    assert s.min == x.min() and s.max == x.max()
    for q in (5, 25, 75, 95, 99):
        assert getattr(s, f"p{q}") == pytest.approx(np.percentile(x, q))
    assert s.iqr == pytest.approx(np.percentile(x, 75) - np.percentile(x, 25))
    assert s.mad == pytest.approx(np.median(np.abs(x - np.median(x))))


def test_known_small_sample():
    s = latency_stats([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median == 3.0 and s.min == 1.0 and s.max == 100.0
    assert s.mad == 1.0
    assert s.noisy  # IQR 2 / median 3


def test_quiet_sample_not_noisy():
    assert not latency_stats([10.0, 10.1, 9.9, 10.05, 9.95] * 20).noisy


def test_empty_and_nan():
    assert latency_stats([]) is None
    assert latency_stats([float("nan")]) is None
    assert latency_stats([1.0, float("nan"), 3.0]).n == 2


def test_bootstrap_interval_covers_true_ratio():
    rng = np.random.default_rng(1)
    eager = rng.normal(2.0, 0.05, 400)
    compiled = rng.normal(1.0, 0.03, 400)
    lo, hi = bootstrap_speedup_interval(eager, compiled)
    point = np.median(eager) / np.median(compiled)
    assert lo <= point <= hi
    assert 1.9 < lo < hi < 2.1
    # deterministic
    assert bootstrap_speedup_interval(eager, compiled) == (lo, hi)


def test_bootstrap_large_sample_is_chunked():
    x = np.ones(100_000)
    lo, hi = bootstrap_speedup_interval(x * 2, x, resamples=50)
    assert lo == hi == 2.0


def test_break_even():
    assert break_even_calls(2.0, 3.0, 1.0) == pytest.approx(1000.0)
    assert break_even_calls(2.0, 1.0, 1.0) is None
    assert break_even_calls(2.0, 1.0, 3.0) is None
    assert break_even_calls(None, 3.0, 1.0) is None


# -- intervals from rounds and the checks -----------------------------------------------------

from compile_studio.results.analysis.stats import (  # noqa: E402
    block_bootstrap_speedup_interval,
    drift_check,
    round_ratio_interval,
    sample_checks,
    spread_pct,
    t_critical_95,
    tail_ratio,
    two_level_check,
)


def test_t_critical_values():
    assert t_critical_95(1) == 12.706
    assert t_critical_95(4) == 2.776
    assert t_critical_95(35) == 2.042  # between tabulated values: the wider one
    assert t_critical_95(1000) == 1.960
    assert t_critical_95(0) == float("inf")


def test_round_interval_on_known_ratios():
    ratios = np.array([1.9, 2.0, 2.1, 2.05, 1.95])
    eager = [np.full(7, 2.0 * r) for r in ratios]
    variant = [np.full(7, 2.0) for _ in ratios]
    iv = round_ratio_interval(eager, variant)
    logs = np.log(ratios)
    half = 2.776 * logs.std(ddof=1) / np.sqrt(5)
    assert iv.method == "rounds" and iv.rounds == 5
    assert iv.point == pytest.approx(np.exp(logs.mean()))
    assert iv.lo == pytest.approx(np.exp(logs.mean() - half))
    assert iv.hi == pytest.approx(np.exp(logs.mean() + half))
    assert iv.spread_pct == pytest.approx((2.1 / 1.9 - 1) * 100)


def test_round_interval_skips_empty_rounds_and_falls_back():
    assert round_ratio_interval([[]], [[1.0]]) is None
    iv = round_ratio_interval([[2.0] * 30, []], [[1.0] * 30, [1.0]])
    assert iv.method == "block bootstrap" and iv.point == 2.0 and iv.lo == iv.hi == 2.0


def test_block_bootstrap_keeps_bursts_together():
    rng = np.random.default_rng(2)
    # a burst of slow calls in one stretch of the run: an i.i.d. bootstrap scatters it
    eager = np.r_[np.full(150, 2.0), np.full(50, 2.6)] * np.exp(rng.normal(0, 0.01, 200))
    variant = np.full(200, 1.0) * np.exp(rng.normal(0, 0.01, 200))
    block = block_bootstrap_speedup_interval(eager, variant)
    iid = bootstrap_speedup_interval(eager, variant)
    assert block.lo <= block.point <= block.hi
    assert block.hi - block.lo > iid[1] - iid[0]
    assert block_bootstrap_speedup_interval(eager, variant) == block  # deterministic


def test_drift_check_on_exact_trend():
    d = drift_check([1.0, 1.05, 1.05**2, 1.05**3, 1.05**4])
    assert d.change == pytest.approx(1.05**4 - 1)
    assert d.t > 1e6 and d.flagged
    assert drift_check([1.0, 1.01]) is None
    assert not drift_check([1.0, 1.3, 1.0, 1.3, 1.0]).flagged  # no trend
    assert not drift_check([1.0, 1.01, 1.02, 1.03, 1.04]).flagged  # a trend, but small


def test_two_level_and_tail_on_simple_samples():
    assert two_level_check([1.0] * 50) is None
    assert two_level_check([1.0, 2.0] * 5) is None  # too few samples
    tl = two_level_check([1.0] * 60 + [10.0] * 40)
    assert tl.flagged and tl.high_share == 0.4
    assert tl.low_ms == pytest.approx(1.0) and tl.high_ms == pytest.approx(10.0)
    assert not two_level_check([1.0] * 95 + [10.0] * 5).flagged  # 5 %: a tail, not a level
    assert tail_ratio([1.0] * 98 + [10.0] * 2) > 2.0
    assert tail_ratio([]) is None
    assert spread_pct([1.0, 1.2, 1.1]) == pytest.approx(20.0)
    assert spread_pct([1.0]) is None
    assert sample_checks([[], []]) is None
