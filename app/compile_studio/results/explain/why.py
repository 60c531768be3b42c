"""The sentence that says why a variant is as fast as it is, and the diagnostics as text.

What compile could not do comes first. When Dynamo hit its recompile limit
for the compiled variant, the sentence leads with "compile did not run your
model: the recompile limit was hit (…); the timed calls ran eager"; when it
split the model, with "compile did not run your model as one graph: N graph
breaks, at file.py:16 and :18 (reason)". Then it says what bounds eager's
calls (:meth:`Evidence.bound`, the rule in :mod:`why_rules`). The files are
written and read in :mod:`why_files`.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable
from typing import Any

from ..analysis.summary import flop_rate_basis, fmt_flop_rate
from .why_files import Recompile, VariantWhy, WhyReport
from .why_rules import Evidence, _pct, evidence, fastest_majority, summary_row

#: What a figure too large to be a measurement (or not finite, once computed) is shown as.
OUT_OF_RANGE = "out of range"
#: Figures shown are at most this large in magnitude (a received file may hold any finite number).
MAX_SHOWN = 1e15


def out_of_range(v: float) -> bool:
    """Whether ``v`` is beyond what a figure may be shown as (not finite, or past MAX_SHOWN)."""
    try:
        return not math.isfinite(v) or abs(v) > MAX_SHOWN
    except OverflowError:  # an int too large for a float
        return True


def _n(x: float | None) -> str:
    if x is None:
        return "?"
    if out_of_range(x):
        return OUT_OF_RANGE
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.1f}"


def _si(x: float, unit: str) -> str:
    """``3.2 kFLOP``, ``512 elements``: a count with an SI prefix."""
    if out_of_range(x):
        return f"{unit}: {OUT_OF_RANGE}"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.1f} {prefix}{unit}" if unit.isupper() else f"{x / scale:.1f} {prefix} {unit}"
    return f"{x:.0f} {unit}"


def _rate(e: Evidence) -> str:
    t = e.tflops
    if t is None:
        return ""
    if e.peak_tflops:
        return f"{_pct(t / e.peak_tflops)} of peak ({fmt_flop_rate(t)} of {e.peak_tflops:.0f} TFLOP/s)"
    return fmt_flop_rate(t)


def _places(at: tuple[str, ...], total: int) -> str:
    """``a.py:3 and :7``, ``a.py:3, :7, b.py:2 and 2 more``: a file named once per run of its lines."""
    shown: list[str] = []
    last = None
    for place in at:
        file, sep, line = place.rpartition(":")
        if sep and file == last:
            shown.append(f":{line}")
        else:
            shown.append(place)
            last = file if sep else None
    more = total - len(at)
    if more > 0:
        return ", ".join(shown) + f" and {more} more"
    if len(shown) > 1:
        return ", ".join(shown[:-1]) + " and " + shown[-1]
    return shown[0] if shown else ""


def lead(other: Evidence) -> str:
    """What compile did not do for ``other`` (the recompile limit, graph breaks); "" when nothing."""
    if other.recompile_limit:
        return (
            f"compile did not run your model: the recompile limit was hit ({other.recompile_limit}); "
            "the timed calls ran eager"
        )
    if other.frames_skipped > 0 and not other.graphs:
        s = (
            "compile captured nothing: Dynamo gave up on your model "
            f"({other.skip_reason or 'no reason recorded'}) and the timed calls ran eager"
        )
        return s
    if other.graph_breaks > 0:
        n = other.graph_breaks
        s = f"compile did not run your model as one graph: {n} graph break{'' if n == 1 else 's'}"
        if other.break_at:
            s += ", at " + _places(other.break_at, max(other.break_places, len(other.break_at)))
        if other.break_reason:
            s += f" ({other.break_reason})"
        return s
    return ""


def _work(e: Evidence) -> str:
    parts = []
    if e.flops_per_op is not None:
        parts.append(_si(e.flops_per_op, "FLOP"))
    if e.elements_per_op is not None:
        parts.append(_si(e.elements_per_op, "elements"))
    return " and ".join(parts) + " each" if parts else ""


def _fusion(e: Evidence, o: Evidence | None, helps: str = "", none_found: bool = True) -> str:
    """What the compiled variant did with eager's operators: fused them into fewer, or not."""
    if o is None or o.kernels is None or e.kernels is None:
        return ""
    if o.kernels < e.kernels - 0.05:
        return f"; {o.name} fuses them into {_n(o.kernels)}{helps}"
    if none_found:
        return f"; {o.name} runs as many ({_n(o.kernels)}): no fusion found"
    return f"; {o.name} still runs {_n(o.kernels)}"


def _body(eager: Evidence, o: Evidence | None) -> str:
    gpu = eager.device == "cuda"
    unit = "kernels" if gpu else "operators"
    verb = "launching" if gpu else "dispatching"
    bound, noise = eager.judge()
    if bound == "unknown":
        return "no profile of eager: nothing can be said about why"
    if bound == "noisy":
        s = f"the profile is too noisy to classify ({noise})"
        if o is not None and o.kernels is not None and eager.kernels is not None:
            s += f"; {o.name} runs {_n(o.kernels)} {unit} per call against eager's {_n(eager.kernels)}"
        return s
    if bound == "launch":
        work = _work(eager)
        if work:
            kind = "launch" if gpu else "dispatch"
            count = eager.kernels if eager.kernels is not None else eager.ops
            s = f"eager is {kind}-bound: {_n(count)} {unit} per call, {work}"
            s += f" — too little work each to outweigh the cost of {verb} it"
            if gpu and eager.busy is not None:
                s += f" (the GPU is idle {_pct(1.0 - eager.busy)} of each call)"
        else:
            s = f"eager spends {_pct(1.0 - (eager.busy or 0.0))} of each call {verb} {_n(eager.kernels)} {unit}"
        s += _fusion(eager, o, none_found=False)
        if gpu:
            s += "; its CUDA graph replays them with one launch" if o is not None and o.cudagraphs \
                else "; try reduce-overhead to remove launches"
        else:
            s += "; on CPU this fixed cost stays in every call — a larger batch amortises it"
        return s
    share = eager.gemm_of_ops or 0.0
    if bound == "gemm":
        rate = _rate(eager)
        if o is not None and o.bound() == "gemm" and rate and eager.peak_tflops:
            return f"both run the same GEMM kernels at {rate.split(' (')[0]}; compile cannot help here"
        s = f"eager is compute-bound: GEMMs hold {_pct(share)} of the operators' time"
        detail = ", ".join(
            x for x in (
                f"{_n(eager.gemm_per_call)} per call" if eager.gemm_per_call else "",
                rate,
            ) if x
        )
        if detail:
            s += f" ({detail})"
        who = f"{o.name} runs the same library GEMMs" if o is not None else "compile keeps the library GEMMs"
        return s + f"; {who} — compile cannot help here"
    if bound == "mixed":
        s = (
            f"eager is mixed: GEMMs hold {_pct(share)} of the operators' time, other operators "
            f"{_pct(1.0 - share)} ({_n(eager.kernels)} {unit} per call)"
        )
        return s + _fusion(eager, o) + "; compile can speed up only the part outside the GEMMs"
    s = (
        f"operators other than GEMMs hold {_pct(1.0 - share)} of eager's operator time "
        f"({_n(eager.kernels)} {unit} per call)"
    )
    return s + _fusion(eager, o, " — this is where compile helps")


def classify(eager: Evidence, other: Evidence | None = None) -> str:
    """One sentence: what compile did not do, what bounds eager's calls, what the compiled variant changes."""
    first = lead(other) if other is not None else ""
    rest = _body(eager, other)
    return f"{first}; {rest}" if first else rest


def sentence(run: Any, name: str) -> str | None:
    """Why variant ``name`` is as fast as it is against eager, in a sentence; None without evidence."""
    eager = evidence(run, "eager")
    if eager is None:
        return None
    other = evidence(run, name) if name != "eager" else None
    if name != "eager" and other is None:
        return None
    return classify(eager, other)


def achieved_line(run: Any, name: str) -> str | None:
    """``achieved: 19.3 GFLOP/s (…)``: variant ``name``'s rate as ``show`` gives it; None without one."""
    row = summary_row(run, name)
    if row is None or row.tflops is None:
        return None
    return f"achieved: {fmt_flop_rate(row.tflops)} ({flop_rate_basis(run)})"


# -- text ----------------------------------------------------------------------------------------

def _ms(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x * 1000:.1f} µs" if x < 1 else f"{x:.2f} ms"


_REFUSED_FRAME = "the frame over the recompile limit (it ran eager)"


def user_names(text: str, variant: str) -> str:
    """``text`` with the user's function names: ``forward_<variant>``, the app's copy, as ``forward``."""
    tag = variant.replace("-", "_")
    if not tag or not text:
        return text
    return re.sub(rf"(?<=[A-Za-z0-9])_{re.escape(tag)}(?=_at_\d|[^A-Za-z0-9_]|$)", "", text)


def _frame(rc: Recompile, v: VariantWhy) -> str:
    """The recompiled frame as the user named it; words instead of the "? (?)" torch leaves unnamed."""
    frame = user_names(rc.frame, v.name).strip()
    if frame in ("", "? (?)", "?"):
        return _REFUSED_FRAME if rc.refused or v.recompile_limit else "a frame torch did not name"
    return frame + (" — not recompiled: the recompile limit was hit, it ran eager" if rc.refused else "")


def variant_lines(v: VariantWhy, run: Any | None = None, ops: bool = True) -> list[str]:
    """The evidence of one variant as plain text lines (``ops``: with the top operators)."""
    where = ", ".join(x for x in (v.device, v.device_name) if x) or "device not recorded"
    out = [f"== {v.name} ({where})"]
    if run is not None:
        why = sentence(run, v.name)
        if why:
            out.append(f"why: {why}")
        rate = achieved_line(run, v.name)
        if rate:
            out.append(rate)
    out += _profile_lines(v, ops) if v.profile is not None else ["profile: none"]
    if v.compiled:
        out += _compile_lines(v)
    if v.trace:
        out.append(f"trace: {v.trace} (open it in ui.perfetto.dev or chrome://tracing)")
    for m in v.missing:
        out.append(f"not available: {m}")
    return out


def _profile_lines(v: VariantWhy, ops: bool) -> list[str]:
    """The lines of ``v``'s steady-state profile: kernels per call, busy and GEMM shares, the
    top operators."""
    p = v.profile
    assert p is not None
    count = (
        f"{_n(p.kernels_per_call)} {p.kernels_counted or 'kernels'}" if p.kernels_per_call is not None
        else "kernels not counted"
    )
    out = [f"profile: {p.calls} steady-state calls, {_ms(p.wall_ms_per_call)} per call; {count}"]
    if p.fused_kernels_in_code:
        out.append(f"  + {p.fused_kernels_in_code} fused kernels called by the output code")
    if p.busy is not None:
        out.append(f"  busy {_pct(p.busy)} ({p.busy_counted}); GEMMs {_pct(p.gemm_share or 0.0)}")
    picked = fastest_majority(p.op_ms_calls, p.gemm_share_of_ops_calls)
    if picked:
        out.append(
            f"  GEMMs hold {_pct(statistics.median(picked))} of the operators' time (median of the "
            f"{len(picked)} fastest of {len(p.gemm_share_of_ops_calls)} calls)"
        )
        shares = [x for x in p.gemm_share_of_ops_calls if isinstance(x, (int, float))]
        if len(shares) > 1:
            times = ", ".join(_ms(x) for x in p.op_ms_calls[: len(shares)])
            out.append(
                f"  per call: GEMM share {', '.join(f'{100 * x:.0f}' for x in shares)} %"
                + (f"; operator time {times}" if times else "")
                + (f" (varies {p.op_spread:.2f}×)" if p.op_spread is not None else "")
            )
    if p.elements_per_call is not None and p.ops_per_call:
        out.append(
            f"  {_si(p.elements_per_call / p.ops_per_call, 'elements')} per operator "
            "(largest input, views left out)"
        )
    rows = (p.kernels or p.ops) if ops else []
    if rows:
        out.append(f"  {'top kernels' if p.kernels else 'top operators'} (self time per call, calls per call, share):")
        for r in rows[:10]:
            share = _pct(r.share) if r.share is not None else "–"
            out.append(
                f"    {_ms(r.self_ms_per_call):>10}  {_n(r.calls_per_call):>4}×  {share:>5}  {r.name}"
            )
    return out


def _compile_lines(v: VariantWhy) -> list[str]:
    """A compiled variant's lines: its compile, graph breaks, recompiles, CUDA graphs skipped
    and output code."""
    out = []
    c = v.compile
    if c is not None:
        total = c.first_call_ms / 1000.0 if c.first_call_ms else None
        out.append(
            f"compile: {c.graphs} graph(s), first call {total:.2f} s" if total is not None
            else f"compile: {c.graphs} graph(s)"
        )
        if c.phases:
            named = c.named_share()
            parts = ", ".join(f"{k} {s:.2f} s" for k, s in c.phases.items() if s > 0.0005)
            out.append(f"  phases: {parts}" + (f" ({_pct(named)} of the first call)" if named else ""))
        if c.cache:
            out.append(
                "  cache: FX graph {h} hit / {m} miss".format(
                    h=c.cache.get("fx_graph_hits", 0), m=c.cache.get("fx_graph_misses", 0)
                )
            )
    if v.graph_breaks:
        out.append(f"graph breaks: {sum(b.count for b in v.graph_breaks)}")
        for b in v.graph_breaks:
            out.append(f"  {b.file}:{b.line}  {b.source}")
            out.append(f"    {user_names(b.reason, v.name)}")
    else:
        out.append("graph breaks: none")
    if v.recompiles:
        out.append(f"recompiles: {len(v.recompiles)}")
        for rc in v.recompiles:
            inside = " (inside the timed window)" if rc.in_window else ""
            out.append(f"  {_frame(rc, v)}{inside}: {user_names(rc.reason, v.name)}")
    else:
        out.append("recompiles: none")
    if v.recompile_limit:
        out.append(f"recompile limit hit: {user_names(v.recompile_limit, v.name)}")
    skips = list(v.cudagraph_skips) + (c.cudagraph_skips if c is not None else [])
    if skips:
        out.append("CUDA graphs skipped: " + "; ".join(dict.fromkeys(skips)))
    for k in v.code:
        kern = f" ({k.fused} fused kernels, {k.library} library calls)" if k.fused is not None else ""
        out.append(f"output code: {k.file or '(not kept)'}{kern} — written by Inductor to {k.path}")
    return out


def why_text(run: Any, report: WhyReport, variant: str | None = None) -> str:
    """What ``compile-studio-cli why`` prints."""
    lines = []
    if report.absent:
        return f"no diagnostics: {report.absent}\n"
    names = [variant] if variant else list(report.variants)
    for name in names:
        v = report.variants.get(name)
        if v is None:
            continue
        lines += variant_lines(v, run)
        lines.append("")
    for p in report.problems[:20]:
        lines.append(f"note: {p}")
    return "\n".join(lines).rstrip() + "\n"


def markdown_lines(run: Any, md_text: Callable[[object], str]) -> list[str]:
    """The report's short "Why" section (empty when the run has no diagnostics)."""
    table = run.measurement.get("why") if isinstance(run.measurement, dict) else None
    if not isinstance(table, dict) or "eager" not in table:
        return []
    out = ["", "### Why", ""]
    for name in run.variants:
        if name == "eager":
            continue
        s = sentence(run, name)
        if s:
            out.append(f"- **{md_text(name)}**: {md_text(s)}")
    e = evidence(run, "eager")
    if e is not None and len(out) == 3:
        out.append(f"- **eager**: {md_text(classify(e))}")
    for name in run.variants:
        found = table.get(name)
        data: dict[str, Any] = found if isinstance(found, dict) else {}
        breaks, recompiles = data.get("graph_breaks"), data.get("recompiles")
        if isinstance(breaks, int) and breaks > 0 or isinstance(recompiles, int) and recompiles > 0:
            out.append(
                f"- {md_text(name)}: {breaks or 0} graph break(s), {recompiles or 0} recompile(s) "
                "(`compile-studio-cli why` lists them with their source lines)"
            )
    out.append("")
    out.append(
        "Per-variant profiler traces (`trace_<variant>.json`, for ui.perfetto.dev), compile "
        "phases and Inductor's output code are in the run folder (`why.json`)."
    )
    return out
