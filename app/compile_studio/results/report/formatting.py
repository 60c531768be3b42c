"""Numbers as people read them: shared by the terminal table, reports and the GUI table."""

from __future__ import annotations

import math
from typing import Any

from ...core.config import format_bytes
from ...core.variants import AA_CONTROL
from ..analysis.summary import SummaryRow
from ..records.run_result import RunResult

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

#: One line per column of the summary table: what it means and when it matters.
HEADER_HELP = {
    "run": "The run this row belongs to (its label, else its date and time).",
    "variant": f"eager, the A/A control ({AA_CONTROL}) or a torch.compile mode or backend.",
    "status": "done, failed, stopped, not run (never started); (noisy) when IQR > 10 % of the median.",
    "compile s": "Wall time of the first compiled call (the compile), never mixed into the latencies.",
    "median ms": "Median latency per call over the timed iterations, warm-up excluded.",
    "p95 ms": "95th percentile latency per call: the slow calls a user still sees often.",
    "IQR %": "Interquartile range as % of the median: above 10 % the variant is noisy.",
    "round spread %": "How far this variant's per-round medians lie apart (max / min − 1): drift and load show here.",
    "speedup [95% CI]": "eager's median / this variant's, with a 95 % interval; above 1.00 = faster than eager.",
    "device speedup": (
        "The same ratio from device time: kernel time measured with the stream kept busy "
        "(busy-stream event pair), without launch overhead. The GPU span (events around "
        "a call on an idle stream, launch gaps included) is the other figure."
    ),
    "verdict": "faster, slower or cannot tell (interval includes 1.00, inside the noise floor, or checks failed).",
    "checks": "Failed checks of the timed calls: drift, two levels, heavy tail; ok when none.",
    "break-even calls": "Calls after which the compile time has paid for itself; only for a variant found faster.",
    "max rel err": "Largest relative error of the output against an fp64 reference.",
    "correct": "Whether the output matches the fp64 reference within the dtype's tolerance.",
    "graph breaks": "Places where torch.compile fell back to Python; each costs speed.",
    "recompiles": "How often the compiled code was rebuilt (new shapes or guards failing).",
    "peak mem": "Peak memory this variant needed above what was in use before it. On the CPU the "
    "process's resident size: 'RSS did not grow' where its calls reused memory already held.",
}


def worker_notes(run: RunResult) -> list[str]:
    """What the supervisor refused or cut of the worker's output during ``run``, in words."""
    m = run.measurement if isinstance(run.measurement, dict) else {}
    notes = []
    refused = m.get("worker_refused")
    if isinstance(refused, dict) and isinstance(refused.get("events"), int) and refused["events"] > 0:
        first = refused.get("first")
        why = f" (first: {str(first[0])[:200]})" if isinstance(first, list) and first else ""
        notes.append(f"{refused['events']:,} events from the worker were refused{why}")
    cut = m.get("worker_output_cut")
    if isinstance(cut, dict):
        lines = [cut.get(k) for k in ("protocol_lines", "log_lines")]
        if all(isinstance(n, int) for n in lines) and sum(lines) > 0:  # type: ignore[arg-type]
            notes.append(
                f"lines from the worker past the caps were cut: {lines[0]:,} protocol, {lines[1]:,} log"
            )
    return notes


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


def fmt_interval(name: str, point: float | None, lo: float | None, hi: float | None) -> str:
    """``1.85× [1.79–1.91]`` (eager, the baseline, without an interval); ``–`` without a point."""
    if point is None:
        return "–"
    if name != "eager" and lo is not None and hi is not None:
        from ..analysis.verdict import fmt_bounds

        return fmt_bounds(point, lo, hi)
    return f"{point:.2f}×"


def fmt_speedup(row: SummaryRow) -> str:
    return fmt_interval(row.name, row.speedup, row.speedup_lo, row.speedup_hi)


def fmt_speedup_ratio(reference_ms: float | None, ms: float | None) -> str:
    """``reference_ms / ms`` as ``1.23×`` (above 1: faster than the reference); ``–`` when unknown."""
    if reference_ms is None or ms is None or not ms > 0 or not math.isfinite(reference_ms):
        return "–"
    return f"{reference_ms / ms:.2f}×"


def rough_speedup_header(calls: int) -> str:
    """The column of shape-sweep speedups: ``speedup (rough, 5 calls)``."""
    return f"speedup (rough, {plural(calls, 'call')})"


def fmt_device_speedup(row: SummaryRow) -> str:
    return fmt_interval(
        row.name, row.device_speedup, row.device_speedup_lo, row.device_speedup_hi
    )


def fmt_break_even(row: SummaryRow) -> str:
    """Calls to pay off the compile; shown only for a variant found faster ("never" when slower)."""
    return break_even_text(row.name, row.compile_s, row.verdict, row.break_even_calls)


def break_even_text(name: str, compile_s: float | None, verdict: str, calls: float | None) -> str:
    """The break-even cell of ``name`` from its compile seconds, verdict and break-even calls."""
    if name == "eager" or compile_s is None:
        return "–"
    if verdict == "slower":
        return "never"
    if verdict != "faster" or calls is None:
        return "–"
    return f"{math.ceil(calls):,}"


def fmt_pays_off(row: SummaryRow) -> str | None:
    """The verdict line's words for break-even, from the same number as the table's column.

    ``None`` when the table shows no break-even for this row.
    """
    text = fmt_break_even(row)
    if text == "–":
        return None
    if text == "never":
        return "never pays off"
    return f"pays off after {text} {plural_word(math.ceil(row.break_even_calls or 0), 'call')}"


def plural_word(n: int, word: str, many: str | None = None) -> str:
    """``word`` for one, ``many`` (default ``word + "s"``) otherwise."""
    return word if n == 1 else (many or word + "s")


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 variant``, ``2 variants``, ``0 variants``."""
    return f"{n:,} {plural_word(n, word, many)}"


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


def fmt_memory(v: int | None, kind: str = "") -> str:
    """Bytes; on the CPU a zero growth of the resident size says so (not ``0 B``)."""
    if v == 0 and kind.startswith("rss"):
        return "RSS did not grow"
    return "–" if v is None else format_bytes(v)


def summary_cells(row: SummaryRow) -> list[str]:
    """One summary row as the text of each column of :data:`SUMMARY_HEADERS`."""
    status = "not run" if row.status == "not_run" else row.status
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
        fmt_memory(row.peak_memory_bytes, row.memory_kind),
    ]


def text_table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    """A plain aligned text table (the first ``left`` columns left aligned, others right)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
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


def load_text(load: Any) -> str:
    """A run's recorded machine load (``run.measurement["load_before"]``) in one line; "" when unknown."""
    if not isinstance(load, dict):
        return ""
    parts = []
    avg = load.get("load_average")
    cpus = load.get("cpu_count")
    if isinstance(avg, (list, tuple)) and avg and isinstance(avg[0], (int, float)):
        parts.append(f"load average {avg[0]:.1f}" + (f" on {cpus} CPUs" if isinstance(cpus, int) else ""))
    elif isinstance(cpus, int):
        parts.append(f"{cpus} CPUs")
    pct = load.get("cpu_percent")
    if isinstance(pct, (int, float)):
        parts.append(f"CPU {pct:.0f} % busy")
    busy = [
        p for p in load.get("busiest") or []
        if isinstance(p, dict) and isinstance(p.get("cpu_percent"), (int, float)) and p["cpu_percent"] >= 1.0
    ]
    if busy:
        parts.append("busiest: " + ", ".join(f"{p.get('name', '?')} {p['cpu_percent']:.0f} %" for p in busy[:3]))
    return "; ".join(parts)


def machine_text(run: RunResult) -> str:
    """The measured device with its name, and the CPU: ``cuda:0 (NVIDIA H200) · AMD EPYC …``."""
    env = run.environment
    device = str(env.get("device") or (run.config.device if run.config is not None else "") or "")
    names = env.get("device_names")
    name = names.get(device, "") if isinstance(names, dict) else ""
    parts = [f"{device} ({name})" if name and name != device else device, str(env.get("cpu") or "")]
    return " · ".join(p for p in parts if p)


def run_context(run: RunResult) -> list[tuple[str, str]]:
    """What a shared figure or report says about where the run was measured: machine, load, threads."""
    out = []
    machine = machine_text(run)
    if machine:
        out.append(("machine", machine))
    load = load_text(run.measurement.get("load_before"))
    if load:
        out.append(("load before the run", load))
    threads = run.measurement.get("torch_threads")
    if isinstance(threads, int):
        out.append(("torch threads", str(threads)))
    unpinned = unpinned_text(run)
    if unpinned:
        out.append(("unpinned", unpinned))
    return out


def verdict_lines(run: RunResult, rows: list[SummaryRow] | None = None) -> list[str]:
    """One sentence per judged compiled variant, with the break-even as the table shows it."""
    from ..analysis.summary import summarize

    out = []
    rows = rows if rows is not None else summarize(run)
    eager = next((r for r in rows if r.name == "eager"), None)
    for r in rows:
        if is_judged(r):
            line = verdict_line(r, why_sentence(run, r.name))
            note = medians_note(eager, r)
            out.append(line + (f" ({note})" if note else ""))
    return out


#: How far (as a ratio) the medians' ratio may lie from the speedup before the line says both.
MEDIANS_APART = 1.05


def medians_note(eager: SummaryRow | None, row: SummaryRow) -> str | None:
    """Where the table's medians give another ratio than the speedup: both, and why they differ.

    The speedup is the geometric mean of each round's ratio of medians; the table's medians
    pool every round. A round slowed by load moves the pooled medians apart without moving
    the other rounds' ratios, so the two can differ (149 vs 133 ms is 1.12×, the rounds 1.27×).
    """
    if eager is None or row.speedup is None or not eager.median_ms or not row.median_ms:
        return None
    pooled = eager.median_ms / row.median_ms
    if not math.isfinite(pooled) or pooled <= 0:
        return None
    if abs(math.log(pooled / row.speedup)) <= math.log(MEDIANS_APART):
        return None
    return (
        f"the table's medians, {fmt_ms(eager.median_ms)} vs {fmt_ms(row.median_ms)} ms, give "
        f"{pooled:.2f}×: they pool every round, while the speedup is the geometric mean of each "
        "round's own ratio, which a round slowed by load moves less"
    )


def is_judged(row: SummaryRow) -> bool:
    """Whether ``row`` gets a verdict line: a variant other than eager, with a verdict."""
    return row.name != "eager" and bool(row.verdict)


def verdict_line(row: SummaryRow, because: str | None = None) -> str:
    """The one-line answer for ``row`` (a judged variant): ``default: cannot tell: 0.98× [0.87–1.10] …;
    compile 1.20 s, never pays off — why: …``, as the CLI prints it after ``= ``."""
    line = f"{row.name}: {row.verdict_text}"
    pays_off = fmt_pays_off(row)
    if row.compile_s is not None and pays_off is not None:
        line += f"; compile {row.compile_s:.2f} s, {pays_off}"
    if because:
        line += f" — why: {because}"
    return line


def why_sentence(run: RunResult, name: str) -> str | None:
    """Why ``name`` is as fast as it is against eager (from the run's diagnostics); None without."""
    from ..explain.why import sentence

    try:
        return sentence(run, name)
    except (TypeError, ValueError, AttributeError, ZeroDivisionError):
        return None


def unpinned_line(run: RunResult) -> str | None:
    """A pinned run's figures as a user's own program gets them (``unpinned_ms``), in one line.

    ``unpinned: eager 3.10 ms, aot_eager 3.20 ms (0.97× over eager) — every thread placed by the
    system, as in your own program; the table's medians had the timing thread pinned``. None
    when no variant has the figure (an unpinned run, a remote worker, one core, an old run).
    """
    figures = {
        name: v.unpinned_ms
        for name, v in run.variants.items()
        if isinstance(v.unpinned_ms, (int, float)) and math.isfinite(v.unpinned_ms) and v.unpinned_ms > 0
    }
    if not figures:
        return None
    eager = figures.get("eager")
    parts = []
    for name, ms in figures.items():
        ratio = f" ({eager / ms:.2f}× over eager)" if eager is not None and name != "eager" else ""
        parts.append(f"{name} {fmt_ms(ms)} ms{ratio}")
    return (
        "unpinned: " + ", ".join(parts) + " — every thread placed by the system, as in your own "
        "program; the table's medians had the timing thread pinned"
    )


def unpinned_text(run: RunResult) -> str:
    """:func:`unpinned_line` without its ``unpinned: `` head; "" when there is none."""
    line = unpinned_line(run)
    return line[len("unpinned: "):] if line else ""
