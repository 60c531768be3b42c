"""Statistics against numpy on known data."""

from __future__ import annotations

import numpy as np
import pytest

from compile_studio.results.stats import (
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
