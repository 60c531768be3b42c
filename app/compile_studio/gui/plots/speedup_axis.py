"""The ticks of a log speedup axis (``2×``, ``1.25×``…), shared by the sweep and shape-sweep charts."""

from __future__ import annotations

import math


def speedup_ticks(low: float, high: float) -> list[tuple[float, str]]:
    """Ticks (log10 position, ``2×``) for speedups from ``low`` to ``high``: powers of two,
    with 0.8×, 0.9×, 1.1×, 1.25× added when the range is narrow."""
    if not (low > 0 and high > low):
        return [(0.0, "1×")]
    values = [2.0**k for k in range(math.floor(math.log2(low)), math.ceil(math.log2(high)) + 1)]
    if math.log2(high) - math.log2(low) < 2:
        values += [0.7, 0.8, 0.9, 1.1, 1.25, 1.5]
    if len(values) > 14:
        values = [v for v in values if abs(math.log2(v)) % 2 == 0 or v == 1]
    shown = sorted(v for v in set(values) if low <= v <= high)
    return [(math.log10(v), f"{v:.3g}×") for v in shown]
