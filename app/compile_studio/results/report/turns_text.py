"""The turns a run's timed calls took with drawing, in words (``show``, the report, the Summary tab).

``run.json``'s ``measurement.turns`` holds, per variant, what the worker and
the session recorded: ``blocks`` (pauses before blocks of timed calls),
``waited_ms`` and ``wait_max_ms`` (how long the worker waited for an answer),
``unanswered`` (pauses the answer missed the cap of), ``block_s``, ``cap_ms``,
``timed_calls_stamped`` and ``overlapped_repaint`` (timed calls that met a
repaint of the window; None where no window drew). Any of these may be
missing or malformed in a received file: what cannot be read is left out.
"""

from __future__ import annotations

import math
from typing import Any

from ..records.run_result import RunResult


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value < 0 or value > 1e15:
        return None
    return int(value)


def _ms(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and 0 <= value < 1e12 else None


def _fmt_ms(ms: float) -> str:
    return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"


def turns_line(run: RunResult) -> str | None:
    """``turns: 24 pauses between blocks of ≤ 0.5 s of timed calls (…)``; None without a record."""
    record = run.measurement.get("turns")
    if not isinstance(record, dict) or not record:
        return None
    rows = [v for v in record.values() if isinstance(v, dict)]
    blocks = sum(_count(v.get("blocks")) or 0 for v in rows)
    if not blocks:
        return None
    waited = sum(_ms(v.get("waited_ms")) or 0.0 for v in rows)
    wait_max = max((_ms(v.get("wait_max_ms")) or 0.0 for v in rows), default=0.0)
    unanswered = sum(_count(v.get("unanswered")) or 0 for v in rows)
    block_s = next((b for v in rows if (b := _ms(v.get("block_s"))) is not None), None)
    cap_ms = next((c for v in rows if (c := _ms(v.get("cap_ms"))) is not None), None)
    per = ", ".join(f"{name} {_count(v.get('blocks')) or 0}" for name, v in record.items()
                    if isinstance(v, dict))
    size = f" of ≤ {block_s:g} s" if block_s is not None else ""
    parts = [f"{blocks:,} pause{'s' if blocks != 1 else ''} between blocks{size} of timed calls ({per})"]
    parts.append(f"the worker waited {_fmt_ms(waited)} in all (longest {_fmt_ms(wait_max)})")
    if unanswered:
        cap = f" within {cap_ms:g} ms" if cap_ms is not None else ""
        parts.append(
            f"{unanswered:,} pause{'s' if unanswered != 1 else ''} not answered{cap}: the window was "
            "busy and the worker went on without waiting for it to draw"
        )
    met = [_count(v.get("overlapped_repaint")) for v in rows]
    stamped = sum(_count(v.get("timed_calls_stamped")) or 0 for v in rows)
    if any(m is not None for m in met):
        n = sum(m or 0 for m in met)
        parts.append(f"timed calls that met a repaint of the window: {n:,} of {stamped:,}")
    else:
        parts.append("no window drew beside the timed calls")
    return "turns: " + "; ".join(parts)
