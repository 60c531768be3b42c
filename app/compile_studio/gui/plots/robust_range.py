"""The latency plot's default y range: the calls, not the spikes (no Qt).

A linear latency axis starts at 0. Its top is the highest of a few quantiles
of each series' calls (p99, then p98 … p90) that still leaves 95 % of that
series' calls (those above its p5) out of the bottom fifth of the plot, so a
run whose calls are 0.04 ms with 1 % of spikes at 16 ms draws its calls, not
a flat line under a 16 ms axis; the spikes beyond the top are marked ▲ and
counted. A series whose p90 is already more than five times its p5 (two
levels of calls, or more than 10 % of spikes) cannot be drawn that way on a
linear axis: the range then goes up to its p90 and the choice says the log
scale shows every call; where p90 is 20 times the median or more (calls in levels
far apart), the latency tab turns the axis logarithmic by itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The quantiles (in %) tried for the top of the range, highest first.
TOP_QUANTILES = (99.0, 98.0, 97.0, 96.0, 95.0, 93.0, 90.0)
#: The quantile below which a series' calls may fall into the bottom of the plot.
FLOOR_QUANTILE = 5.0
#: The bottom share of the plot the calls above the floor quantile stay out of.
BOTTOM_SHARE = 0.2
#: A series whose p90 is this many times its median or more has calls in levels far apart:
#: the latency tab turns its axis logarithmic by itself (unless the user chose).
LOG_SPREAD = 20.0
#: Every quantile a series' calls are summarised by, for :func:`linear_range`.
QUANTILES = (FLOOR_QUANTILE, 50.0, *TOP_QUANTILES)


def call_quantiles(values: np.ndarray) -> dict[float, float] | None:
    """The :data:`QUANTILES` of ``values`` (finite, ≥ 0 kept); None when none is left."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v) & (v >= 0)]
    if not v.size:
        return None
    return dict(zip(QUANTILES, (float(q) for q in np.percentile(v, QUANTILES))))


@dataclass(frozen=True)
class RangeChoice:
    """A linear y range (ms) and how it was chosen."""

    bottom: float
    top: float
    #: the quantile (in %) of the series' calls that set the top
    quantile: float
    #: a series' calls spread too wide for a linear axis (the log scale shows them all)
    too_wide: bool
    #: the widest p90 / median of the series (inf where a median is 0)
    spread: float = 1.0

    @property
    def wants_log(self) -> bool:
        """Whether the calls lie in levels so far apart that only a log axis shows them."""
        return self.spread >= LOG_SPREAD


def linear_range(series: list[dict[float, float]], pad: float) -> RangeChoice | None:
    """The linear range for the series' quantiles (see the module); None without any series."""
    series = [q for q in series if q]
    if not series:
        return None
    tops: list[tuple[float, float]] = []
    too_wide = False
    spread = 1.0
    for q in series:
        floor = q[FLOOR_QUANTILE]
        mid = q[50.0]
        spread = max(spread, q[TOP_QUANTILES[-1]] / mid if mid > 0 else float("inf"))
        chosen = next(
            (p for p in TOP_QUANTILES if q[p] * (1.0 + pad) * BOTTOM_SHARE <= floor), None
        )
        if chosen is None:
            too_wide = True
            chosen = TOP_QUANTILES[-1]
        tops.append((q[chosen] * (1.0 + pad), chosen))
    top, quantile = max(tops)
    if top <= 0:
        top = 1.0
    return RangeChoice(bottom=0.0, top=top, quantile=quantile, too_wide=too_wide, spread=spread)
