"""Numbers as people read them: shared by the terminal table, reports and the GUI table."""

from __future__ import annotations

import math

from ..config import format_bytes
from .run_result import SummaryRow

SUMMARY_HEADERS = [
    "variant",
    "status",
    "compile s",
    "median ms",
    "p95 ms",
    "IQR %",
    "round spread %",
    "speedup [95% CI]",
    "device speedup",
    "verdict",
    "checks",
    "break-even calls",
    "max rel err",
    "correct",
    "graph breaks",
    "recompiles",
    "peak mem",
]


def fmt_ms(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "–"
    if v >= 100:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.3f}"
    return f"{v:.4f}"


def fmt_seconds(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def fmt_speedup(row: SummaryRow) -> str:
    if row.speedup is None:
        return "–"
    text = f"{row.speedup:.2f}×"
    if row.name != "eager" and row.speedup_lo is not None and row.speedup_hi is not None:
        text += f" [{row.speedup_lo:.2f}–{row.speedup_hi:.2f}]"
    return text


def fmt_device_speedup(row: SummaryRow) -> str:
    if row.device_speedup is None:
        return "–"
    text = f"{row.device_speedup:.2f}×"
    if row.name != "eager" and row.device_speedup_lo is not None and row.device_speedup_hi is not None:
        text += f" [{row.device_speedup_lo:.2f}–{row.device_speedup_hi:.2f}]"
    return text


def fmt_break_even(row: SummaryRow) -> str:
    """Calls to pay off the compile; shown only for a variant found faster ("never" when slower)."""
    if row.name == "eager" or row.compile_s is None:
        return "–"
    if row.verdict == "slower":
        return "never"
    if row.verdict != "faster" or row.break_even_calls is None:
        return "–"
    return f"{math.ceil(row.break_even_calls):,}"


def fmt_percent(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f}"


def fmt_verdict(row: SummaryRow) -> str:
    return row.verdict or "–"


def fmt_checks(row: SummaryRow) -> str:
    """The failed checks by name (details in ``row.checks``); ``ok`` when all passed."""
    if not row.n:
        return "–"
    failed = [
        name
        for name, flag in (("drift", row.drift), ("two levels", row.two_level), ("heavy tail", row.heavy_tail))
        if flag
    ]
    return ", ".join(failed) or "ok"


def fmt_error(v: float | None) -> str:
    return "–" if v is None else f"{v:.2e}"


def fmt_correct(row: SummaryRow) -> str:
    if row.allclose is None:
        return "–"
    return "yes" if row.allclose else "NO"


def fmt_count(v: int | None) -> str:
    return "–" if v is None else str(v)


def fmt_memory(v: int | None) -> str:
    return "–" if v is None else format_bytes(v)


def summary_cells(row: SummaryRow) -> list[str]:
    """One summary row as the text of each column of :data:`SUMMARY_HEADERS`."""
    status = row.status
    if row.noisy and row.n:
        status += " (noisy)"
    if row.recompiles_in_window:
        status += " (recompiled)"
    return [
        row.name,
        status,
        fmt_seconds(row.compile_s),
        fmt_ms(row.median_ms),
        fmt_ms(row.p95_ms),
        fmt_percent(row.iqr_pct),
        fmt_percent(row.round_spread_pct),
        fmt_speedup(row),
        fmt_device_speedup(row),
        fmt_verdict(row),
        fmt_checks(row),
        fmt_break_even(row),
        fmt_error(row.max_rel_error),
        fmt_correct(row),
        fmt_count(row.graph_breaks),
        fmt_count(row.recompiles),
        fmt_memory(row.peak_memory_bytes),
    ]


def text_table(headers: list[str], rows: list[list[str]]) -> str:
    """A plain aligned text table (first column left, others right aligned)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        )

    out = [line(headers), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    def esc(c: str) -> str:
        return c.replace("|", "\\|")

    out = ["| " + " | ".join(esc(h) for h in headers) + " |"]
    out.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|")
    out.extend("| " + " | ".join(esc(c) for c in r) + " |" for r in rows)
    return "\n".join(out)
