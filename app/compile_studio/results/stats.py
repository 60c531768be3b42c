"""Latency statistics (numpy only), in the spirit of torch.utils.benchmark.Measurement."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

#: IQR / median above this marks a variant as noisy (torch.utils.benchmark uses 10 %).
NOISE_THRESHOLD = 0.10
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 12345


@dataclass(frozen=True)
class LatencyStats:
    """Order statistics of one variant's timed samples, in milliseconds."""

    n: int
    mean: float
    median: float
    std: float
    min: float
    max: float
    p5: float
    p25: float
    p75: float
    p95: float
    p99: float
    iqr: float
    mad: float

    @property
    def iqr_ratio(self) -> float:
        return self.iqr / self.median if self.median > 0 else math.inf

    @property
    def noisy(self) -> bool:
        return self.iqr_ratio > NOISE_THRESHOLD

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def latency_stats(samples_ms: Sequence[float] | np.ndarray) -> LatencyStats | None:
    """Stats of a sample; None when it is empty."""
    x = np.asarray(samples_ms, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return None
    p5, p25, median, p75, p95, p99 = np.percentile(x, [5, 25, 50, 75, 95, 99])
    return LatencyStats(
        n=int(x.size),
        mean=float(x.mean()),
        median=float(median),
        std=float(x.std(ddof=1)) if x.size > 1 else 0.0,
        min=float(x.min()),
        max=float(x.max()),
        p5=float(p5),
        p25=float(p25),
        p75=float(p75),
        p95=float(p95),
        p99=float(p99),
        iqr=float(p75 - p25),
        mad=float(np.median(np.abs(x - median))),
    )


def bootstrap_speedup_interval(
    baseline_ms: Sequence[float] | np.ndarray,
    variant_ms: Sequence[float] | np.ndarray,
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of median(baseline) / median(variant).

    Each resample draws both samples with replacement, independently. Fixed
    seed: the same data always gives the same interval.
    """
    a = np.asarray(baseline_ms, dtype=np.float64)
    b = np.asarray(variant_ms, dtype=np.float64)
    a = a[np.isfinite(a)]
    b = b[np.isfinite(b)]
    if a.size == 0 or b.size == 0:
        return None
    rng = np.random.default_rng(seed)
    ratios = np.empty(resamples)
    # keep each block of resampled indices around 2 million entries
    block = max(1, 2_000_000 // max(a.size, b.size))
    for start in range(0, resamples, block):
        k = min(block, resamples - start)
        ma = np.median(a[rng.integers(0, a.size, size=(k, a.size))], axis=1)
        mb = np.median(b[rng.integers(0, b.size, size=(k, b.size))], axis=1)
        ratios[start : start + k] = ma / mb
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(ratios, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def break_even_calls(compile_s: float | None, baseline_ms: float, variant_ms: float) -> float | None:
    """Calls after which the compile time has paid for itself.

    ``compile_s / (baseline − variant per call)``; None ("never") when the
    variant is not faster or the compile time is unknown.
    """
    if compile_s is None or not math.isfinite(compile_s):
        return None
    saved_ms = baseline_ms - variant_ms
    if saved_ms <= 0:
        return None
    return compile_s * 1000.0 / saved_ms
