"""Small helpers for figures: milliseconds as text, medians, ratios, agreement, CPU sets."""

from __future__ import annotations

import statistics
from collections.abc import Iterable


def ms(value: float | None, digits: int = 4) -> str:
    """``1.2345 ms``, or ``–`` for no figure."""
    return "–" if value is None else f"{value:.{digits}f} ms"


def us(value_ms: float | None, digits: int = 1) -> str:
    """A figure in ms written in µs (``12.3 µs``), or ``–``."""
    return "–" if value_ms is None else f"{value_ms * 1e3:.{digits}f} µs"


def median(values: Iterable[float | None]) -> float | None:
    """The median of the figures that exist; None without one."""
    clean = [v for v in values if v is not None]
    return statistics.median(clean) if clean else None


def ratios(a: Iterable[float | None], b: Iterable[float | None]) -> list[float]:
    """``x / y`` for each pair where both exist and ``y`` > 0."""
    return [x / y for x, y in zip(a, b) if x is not None and y is not None and y > 0]


def ratio_text(rs: list[float]) -> str:
    if not rs:
        return "no figures"
    return f"ratio {statistics.median(rs):.3f} (rounds {', '.join(f'{r:.3f}' for r in rs)})"


def agrees(value: float, reference: float, rel: float, abs_: float) -> bool:
    """Whether ``value`` lies within ±max(``rel`` × ``reference``, ``abs_``) of ``reference``."""
    return abs(value - reference) <= max(rel * abs(reference), abs_)


def at_most(value: float, bound: float, rel: float, abs_: float) -> bool:
    """Whether ``value`` ≤ ``bound`` plus max(``rel`` × ``bound``, ``abs_``)."""
    return value <= bound + max(rel * abs(bound), abs_)


def cpu_list(cpus: Iterable[int]) -> str:
    """CPU numbers as Linux writes them: ``0-3,8,10-11``; ``none`` for an empty set."""
    items = sorted(set(cpus))
    if not items:
        return "none"
    parts: list[str] = []
    start = prev = items[0]
    for c in items[1:]:
        if c == prev + 1:
            prev = c
            continue
        parts.append(f"{start}-{prev}" if prev > start else str(start))
        start = prev = c
    parts.append(f"{start}-{prev}" if prev > start else str(start))
    return ",".join(parts)


def as_float(value: object) -> float | None:
    """A number from a figure read back from a file (text, int, float); None otherwise."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return out if out == out else None
