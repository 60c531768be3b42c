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


# -- intervals that respect time order -------------------------------------------------

#: Two-sided 95 % critical values of Student's t by degrees of freedom.
_T95 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
    9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
    16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074,
    23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045,
    30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980,
}
#: One-sided 95 % critical values of Student's t (the trend test of :func:`drift_check`).
_T95_ONE_SIDED = {
    1: 6.314, 2: 2.920, 3: 2.353, 4: 2.132, 5: 2.015, 6: 1.943, 7: 1.895, 8: 1.860,
    9: 1.833, 10: 1.812, 12: 1.782, 15: 1.753, 20: 1.725, 30: 1.697, 60: 1.671, 120: 1.658,
}
#: Consecutive blocks a run without rounds is cut into for the block bootstrap and the checks.
TIME_BLOCKS = 10
#: Consecutive blocks of one round's samples used for the drift check and the spread.
CHECK_BLOCKS = 5


def _t_critical(df: int, table: dict[int, float], limit: float) -> float:
    """The table's value at ``df``, or at the next smaller tabulated df (wider: conservative)."""
    if df < 1:
        return math.inf
    best = min(table)
    for k in table:
        if best < k <= df:
            best = k
    return table[best] if df <= 120 else limit


def t_critical_95(df: int) -> float:
    """Two-sided 95 % critical value of Student's t with ``df`` degrees of freedom."""
    return _t_critical(df, _T95, 1.960)


@dataclass(frozen=True)
class SpeedupInterval:
    """A speedup (baseline / variant) with its 95 % interval and where they come from."""

    point: float
    lo: float
    hi: float
    #: ``rounds`` (t-interval on per-round ratios) or ``block bootstrap`` (one round)
    method: str
    #: rounds the estimate rests on (1 for the block bootstrap)
    rounds: int
    #: max/min of the per-round ratios, minus one, in % (None with one round)
    spread_pct: float | None

    def covers(self, value: float) -> bool:
        return self.lo <= value <= self.hi


def _clean(x: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    return a[np.isfinite(a) & (a > 0)]


def spread_pct(values: Sequence[float] | np.ndarray) -> float | None:
    """``max / min − 1`` of positive values, in %; None for fewer than two."""
    v = _clean(values)
    if v.size < 2:
        return None
    return float((v.max() / v.min() - 1.0) * 100.0)


def round_ratio_interval(
    baseline_rounds: Sequence[Sequence[float] | np.ndarray],
    variant_rounds: Sequence[Sequence[float] | np.ndarray],
) -> SpeedupInterval | None:
    """Speedup from paired rounds: a t-interval on the log of the per-round median ratios.

    Round ``r`` of both lists was measured back to back (A B A B …), so a change
    of the machine's speed that lasts longer than a round hits both halves of
    the pair and cancels in that round's ratio, while one that hits one
    variant's block and not the other's moves that ratio alone and widens the
    spread between rounds. Each round's ratio of medians is one observation;
    their logs are treated as independent and roughly normal, which gives a
    Student t-interval with R−1 degrees of freedom around their mean (the
    point estimate is the geometric mean of the ratios). Unlike a bootstrap
    over calls it does not assume that neighbouring calls are independent, and
    with few rounds it is wide, as it should be. A block bootstrap over rounds
    would need far more than the usual 5 rounds to be any better calibrated.
    Pairs with an empty side are skipped; None when no pair is left, and
    :func:`block_bootstrap_speedup_interval` is used when only one is.
    """
    pairs = [(_clean(a), _clean(b)) for a, b in zip(baseline_rounds, variant_rounds)]
    pairs = [(a, b) for a, b in pairs if a.size and b.size]
    if not pairs:
        return None
    if len(pairs) == 1:
        return block_bootstrap_speedup_interval(*pairs[0])
    ratios = [float(np.median(a) / np.median(b)) for a, b in pairs]
    logs = np.log(np.asarray(ratios))
    k = logs.size
    centre = float(logs.mean())
    half = t_critical_95(k - 1) * float(logs.std(ddof=1)) / math.sqrt(k)
    return SpeedupInterval(
        point=math.exp(centre),
        lo=math.exp(centre - half),
        hi=math.exp(centre + half),
        method="rounds",
        rounds=k,
        spread_pct=spread_pct(ratios),
    )


def _block_bootstrap_medians(x: np.ndarray, blocks: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of moving-block resamples of ``x`` (blocks of ``ceil(n / blocks)`` calls)."""
    n = x.size
    length = max(1, math.ceil(n / blocks))
    per_sample = math.ceil(n / length)
    offsets = np.arange(length)
    out = np.empty(resamples)
    chunk = max(1, 2_000_000 // max(1, per_sample * length))
    for start in range(0, resamples, chunk):
        k = min(chunk, resamples - start)
        starts = rng.integers(0, n - length + 1, size=(k, per_sample))
        idx = (starts[:, :, None] + offsets).reshape(k, per_sample * length)[:, :n]
        out[start : start + k] = np.median(x[idx], axis=1)
    return out


def block_bootstrap_speedup_interval(
    baseline_ms: Sequence[float] | np.ndarray,
    variant_ms: Sequence[float] | np.ndarray,
    blocks: int = TIME_BLOCKS,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> SpeedupInterval | None:
    """Speedup of two samples measured one after the other (one round), in time order.

    A moving-block bootstrap: each resample strings together randomly chosen
    runs of ``n / blocks`` consecutive calls, so a burst of load or a clock
    step stays inside its block and widens the interval instead of being
    averaged away as an i.i.d. bootstrap does. It cannot see a change of the
    machine between the baseline's period and the variant's: only rounds can.
    The interval always contains the point estimate (ratio of the medians).
    """
    a, b = _clean(baseline_ms), _clean(variant_ms)
    if a.size == 0 or b.size == 0:
        return None
    point = float(np.median(a) / np.median(b))
    rng = np.random.default_rng(seed)
    ratios = _block_bootstrap_medians(a, blocks, resamples, rng) / _block_bootstrap_medians(
        b, blocks, resamples, rng
    )
    lo, hi = np.quantile(ratios, [0.025, 0.975])
    return SpeedupInterval(
        point=point,
        lo=min(float(lo), point),
        hi=max(float(hi), point),
        method="block bootstrap",
        rounds=1,
        spread_pct=None,
    )


# -- checks of one variant's samples -------------------------------------------------------

#: Drift: a fitted change across rounds beyond this (relative) counts, when the trend is significant.
DRIFT_THRESHOLD = 0.10
#: Two-level: each level holds at least this share of the samples ...
TWO_LEVEL_MIN_SHARE = 0.10
#: ... their medians are at least this far apart (ratio) ...
TWO_LEVEL_MIN_RATIO = 1.3
#: ... Otsu's between-class share of the variance of the log samples is at least this ...
TWO_LEVEL_MIN_SEPARATION = 0.8
#: ... and the valley between them holds less than this share of the thinner peak.
TWO_LEVEL_MAX_VALLEY = 0.5
#: Heavy tail: p99 / median above this.
HEAVY_TAIL_RATIO = 2.0
#: Fewest samples for the two-level check.
TWO_LEVEL_MIN_SAMPLES = 20


@dataclass(frozen=True)
class Drift:
    """The trend of a variant's level (per-round medians) across the run."""

    #: fitted change from the first group to the last, relative (0.12 = 12 % slower by the end)
    change: float
    #: t statistic of the fitted slope (inf when the groups lie exactly on the line)
    t: float
    #: groups the fit used
    groups: int

    @property
    def flagged(self) -> bool:
        """Material (> 10 %) and significant (one-sided 5 %) in the fitted direction."""
        crit = _t_critical(self.groups - 2, _T95_ONE_SIDED, 1.645)
        return abs(self.change) > DRIFT_THRESHOLD and self.t > crit


def drift_check(group_medians: Sequence[float] | np.ndarray) -> Drift | None:
    """Least-squares trend of log medians over groups in time order; None for fewer than 3."""
    y = np.log(_clean(group_medians))
    k = y.size
    if k < 3:
        return None
    x = np.arange(k) - (k - 1) / 2.0
    sxx = float((x * x).sum())
    slope = float((x * y).sum() / sxx)
    residual = y - y.mean() - slope * x
    se = math.sqrt(float((residual**2).sum()) / (k - 2) / sxx)
    t = abs(slope) / se if se > 0 else (math.inf if slope != 0 else 0.0)
    return Drift(change=math.expm1(slope * (k - 1)), t=t, groups=k)


@dataclass(frozen=True)
class TwoLevel:
    """An Otsu split of the log samples into a fast and a slow level."""

    low_ms: float
    high_ms: float
    #: share of the samples in the slow level
    high_share: float
    #: between-class share of the variance of the log samples (Otsu's effectiveness)
    separation: float
    #: samples near the threshold / samples near the thinner level's median
    valley: float

    @property
    def flagged(self) -> bool:
        return (
            min(self.high_share, 1.0 - self.high_share) >= TWO_LEVEL_MIN_SHARE
            and self.high_ms / self.low_ms >= TWO_LEVEL_MIN_RATIO
            and self.separation >= TWO_LEVEL_MIN_SEPARATION
            and self.valley < TWO_LEVEL_MAX_VALLEY
        )


def two_level_check(samples_ms: Sequence[float] | np.ndarray) -> TwoLevel | None:
    """Split the log samples where Otsu's between-class variance is largest.

    A two-level sample (calls at ≈5 ms and ≈55 ms, say, as when another
    program takes the core part of the time) has two well separated groups
    with an almost empty valley between them; a unimodal sample, however
    wide or skewed, has its densest part around the split. None for fewer
    than :data:`TWO_LEVEL_MIN_SAMPLES` samples or a constant sample.
    """
    y = np.sort(np.log(_clean(samples_ms)))
    n = y.size
    if n < TWO_LEVEL_MIN_SAMPLES or y[-1] <= y[0]:
        return None
    total = np.cumsum(y)
    k = np.arange(1, n)
    m_low = total[:-1] / k
    m_high = (total[-1] - total[:-1]) / (n - k)
    w = k / n
    between = w * (1.0 - w) * (m_low - m_high) ** 2
    between = np.where(y[1:] > y[:-1], between, -1.0)
    i = int(np.argmax(between))
    cut = i + 1
    var = float(y.var())
    low, high = y[:cut], y[cut:]
    med_low, med_high = float(np.median(low)), float(np.median(high))
    threshold = (y[cut - 1] + y[cut]) / 2.0
    half = (med_high - med_low) / 8.0

    def near(c: float) -> int:
        return int(np.count_nonzero(np.abs(y - c) < half))

    peak = max(1, min(near(med_low), near(med_high)))
    return TwoLevel(
        low_ms=math.exp(med_low),
        high_ms=math.exp(med_high),
        high_share=float(high.size / n),
        separation=float(between[i] / var) if var > 0 else 0.0,
        valley=near(threshold) / peak,
    )


def tail_ratio(samples_ms: Sequence[float] | np.ndarray) -> float | None:
    """p99 / median; None for an empty sample."""
    x = _clean(samples_ms)
    if x.size == 0:
        return None
    p50, p99 = np.percentile(x, [50, 99])
    return float(p99 / p50)


def time_blocks(samples_ms: Sequence[float] | np.ndarray, blocks: int) -> list[np.ndarray]:
    """``samples_ms`` (in time order) cut into ``blocks`` consecutive parts of near-equal size."""
    x = np.asarray(samples_ms, dtype=np.float64)
    blocks = max(1, min(blocks, x.size))
    return [part for part in np.array_split(x, blocks) if part.size]


@dataclass(frozen=True)
class SampleChecks:
    """The checks of one variant's measured samples: drift, two levels, heavy tail."""

    #: per-round (or, with one round, per-block) medians in time order, ms
    group_medians: tuple[float, ...]
    #: ``rounds`` or ``blocks``: what the groups are
    groups_are: str
    drift: Drift | None
    two_level: TwoLevel | None
    tail_ratio: float | None

    @property
    def spread_pct(self) -> float | None:
        """Between-round (or between-block) spread: max/min of the group medians − 1, in %."""
        return spread_pct(self.group_medians)

    @property
    def drifting(self) -> bool:
        return self.drift is not None and self.drift.flagged

    @property
    def two_levelled(self) -> bool:
        return self.two_level is not None and self.two_level.flagged

    @property
    def heavy_tail(self) -> bool:
        return self.tail_ratio is not None and self.tail_ratio > HEAVY_TAIL_RATIO

    @property
    def blocking(self) -> bool:
        """A check that makes this variant's median unfit for a verdict (drift or two levels).

        A heavy tail is reported but does not decide: the median ignores the slowest 1 %.
        """
        return self.drifting or self.two_levelled

    def problems(self) -> list[str]:
        """Short words for each failed check, e.g. ``drift +14 %``, ``two levels 5.0/55 ms``."""
        out = []
        if self.drifting and self.drift is not None:
            out.append(f"drift {self.drift.change * 100:+.0f} %")
        if self.two_levelled and self.two_level is not None:
            tl = self.two_level
            out.append(f"two levels {_ms(tl.low_ms)}/{_ms(tl.high_ms)} ms ({tl.high_share * 100:.0f} % slow)")
        if self.heavy_tail and self.tail_ratio is not None:
            out.append(f"heavy tail p99 {self.tail_ratio:.1f}× median")
        return out


def _ms(v: float) -> str:
    return f"{v:.3g}"


def sample_checks(rounds: Sequence[Sequence[float] | np.ndarray]) -> SampleChecks | None:
    """Checks of one variant's measured samples, given per round in round order.

    Drift is fitted over the per-round medians with three rounds or more, and
    otherwise over :data:`CHECK_BLOCKS` consecutive blocks of the samples in
    time order; the spread likewise comes from rounds when there are two or
    more. None when there is no sample.
    """
    groups = [_clean(r) for r in rounds]
    groups = [g for g in groups if g.size]
    if not groups:
        return None
    everything = np.concatenate(groups)
    round_medians = [float(np.median(g)) for g in groups]
    block_medians = [float(np.median(b)) for b in time_blocks(everything, CHECK_BLOCKS)]
    by_rounds = len(groups) >= 2
    return SampleChecks(
        group_medians=tuple(round_medians if by_rounds else block_medians),
        groups_are="rounds" if by_rounds else "blocks",
        drift=drift_check(round_medians if len(groups) >= 3 else block_medians),
        two_level=two_level_check(everything),
        tail_ratio=tail_ratio(everything),
    )


#: A median must be at least this many times the harness floor before the floor is subtracted.
FLOOR_MARGIN = 2.0


def floor_subtracted_speedup(
    eager_ms: float, variant_ms: float, floor_ms: float, margin: float = FLOOR_MARGIN
) -> float | None:
    """(eager − floor) / (variant − floor): the speedup of the calls without the timer's own cost.

    Every wall sample carries the harness floor once, which pulls the raw
    ratio towards 1. None unless both times are at least ``margin`` × the
    floor (near the floor the difference is mostly noise) and the floor is
    a positive, finite time.
    """
    values = (eager_ms, variant_ms, floor_ms)
    if not all(math.isfinite(v) for v in values) or floor_ms <= 0:
        return None
    if eager_ms < margin * floor_ms or variant_ms < margin * floor_ms:
        return None
    return (eager_ms - floor_ms) / (variant_ms - floor_ms)


def shared_rounds(
    base: dict[int, np.ndarray], other: dict[int, np.ndarray]
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The rounds both variants measured: (base's samples, other's samples), round by round."""
    keys = sorted(k for k in base.keys() & other.keys() if base[k].size and other[k].size)
    return [base[k] for k in keys], [other[k] for k in keys]


def speedup_point(base: dict[int, np.ndarray], other: dict[int, np.ndarray]) -> float | None:
    """Eager's speed over ``other``'s without an interval: the geometric mean of the per-round
    ratios of medians (two rounds or more), else the ratio of the medians; None without samples."""
    a, b = shared_rounds(base, other)
    if len(a) >= 2:
        logs = [math.log(np.median(x) / np.median(y)) for x, y in zip(a, b)]
        return math.exp(sum(logs) / len(logs))
    if not base or not other:
        return None
    ma = float(np.median(np.concatenate(list(base.values()))))
    mb = float(np.median(np.concatenate(list(other.values()))))
    return ma / mb if ma > 0 and mb > 0 else None
