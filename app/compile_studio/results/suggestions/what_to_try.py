"""What to try, and what trying gave: a run's ranked suggestions beside the verdicts of its trials.

One place for the three front ends that show it — ``compile-studio-cli
advise`` (below the suggestions), the Markdown report and the window's Why
tab: :func:`what_to_try` reads the run's evidence (run.json, why.json), ranks
the suggestions (:func:`advice_rules.advise`) and reads the trials kept
beside the run (:func:`trial_load.trials_of`); :meth:`WhatToTry.tried`
gives a suggestion's latest verdict. Text only: no Qt, no torch; every
string from a file is returned as it is, for the caller to make harmless.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..explain.why_files import WhyReport, load_why
from ..records.run_result import RunResult
from ..records.schema import RunDamaged
from ..records.trial_load import TrialListing, trials_of
from ..records.trial_record import RoundFigure, TrialRecord, TrialSuggestion
from .advice import Suggestion, gather
from .advice_rules import advise
from .trial_judge import fmt_figure, fmt_ratio


@dataclass(frozen=True)
class Tried:
    """One suggestion as a trial tried it: the trial's record and folder, and the suggestion's part."""

    record: TrialRecord
    folder: Path
    suggestion: TrialSuggestion


@dataclass
class WhatToTry:
    """A run's ranked suggestions and the trials kept beside it."""

    suggestions: list[Suggestion] = field(default_factory=list)
    trials: list[TrialListing] = field(default_factory=list)
    #: why the run's diagnostics could not be read (only the run's own figures were), or ""
    note: str = ""

    def tried(self, s: Suggestion) -> Tried | None:
        """The latest trial of ``s`` (same rule and delta) that has a verdict, else the latest at all."""
        found: list[Tried] = []
        for t in self.trials:
            if t.record is None:
                continue
            for ts in t.record.suggestions:
                if ts.rule == s.rule and ts.delta_text() == s.delta_text():
                    found.append(Tried(t.record, t.folder, ts))
        judged = [t for t in found if t.suggestion.verdict]
        pick = judged or found
        return pick[-1] if pick else None

    def damaged(self) -> list[TrialListing]:
        return [t for t in self.trials if t.record is None]


def what_to_try(run: RunResult, folder: str | Path | None, rows: Sequence[Any] | None = None) -> WhatToTry:
    """The suggestions for ``run`` (read from ``folder``, its run folder) and the trials beside it.

    ``rows``: the run's summary rows, when the caller has them. Never raises
    for a damaged file: its trouble is in ``note`` or in a damaged listing.
    """
    where = Path(folder) if folder is not None else None
    if where is not None and where.is_file():
        where = where.parent
    report = load_why(where) if where is not None else WhyReport(None, absent="the run has no folder")
    try:
        if rows is None:
            from ..storage.summary_cache import summary_of

            rows = summary_of(run)
        suggestions = advise(gather(run, report, rows))
    except (RunDamaged, ValueError, TypeError, KeyError, AttributeError, ZeroDivisionError):
        suggestions = []
    return WhatToTry(
        suggestions=suggestions,
        trials=trials_of(where, run.run_id) if where is not None else [],
        note=report.absent or "",
    )


def verdict_summary(ts: TrialSuggestion) -> str:
    """``faster — time per sample of eager: 7.68× [6.90–8.55] over 3 rounds; A/A 4 %`` (one line)."""
    if not ts.verdict:
        return "not judged yet" + (f" ({ts.dropped})" if ts.dropped else "")
    rounds = len(ts.measured_rounds())
    aa = f"; A/A {ts.aa_spread_pct:.0f} %" if ts.aa_spread_pct is not None else ""
    if ts.verdict == "failed":
        return f"failed — {ts.verdict_reason}"
    return (
        f"{ts.verdict} — {ts.figure_text()}: {ts.interval_text()} over "
        f"{rounds} round{'s' if rounds != 1 else ''}{aa}"
    )


def round_cells(ts: TrialSuggestion) -> list[str]:
    """Every round's ratio A / B, in round order (``2.31×``; ``–`` where a side is missing)."""
    return [fmt_ratio(r.ratio) for r in ts.rounds]


def round_figures(r: RoundFigure) -> str:
    """``A 0.0261 ms, B 0.00341 ms, A again 0.0270 ms → 7.79× (A/A 0.97×)``: one round's figures."""
    text = f"A {fmt_figure(r.a)} ms, B {fmt_figure(r.b)} ms"
    if r.a_end is not None:
        text += f", A again {fmt_figure(r.a_end)} ms"
    text += f" → {fmt_ratio(r.ratio)}"
    if r.a and r.a_end:
        text += f" (A/A {fmt_ratio(r.a / r.a_end)})"
    return text


def round_lines(ts: TrialSuggestion) -> list[str]:
    """Every round of a suggestion in words: ``round 1: A 0.0261 ms, B 0.00341 ms, A again … → 7.65×``."""
    out = []
    for r in ts.rounds:
        line = f"round {r.round}: {round_figures(r)}"
        if r.b_allclose is False:
            line += " (B's output is wrong)"
        if r.note:
            line += f" — {r.note}"
        out.append(line)
    return out


def tried_lines(w: WhatToTry) -> list[str]:
    """What ``advise`` prints below the suggestions: each trial, and each suggestion it tried."""
    if not w.trials:
        return []
    out = ["What was tried (A = the run's configuration, B = with the suggestion; ratio = A / B):"]
    for t in w.trials:
        name = t.folder.name
        if t.record is None:
            out.append(f"  {name}: cannot be read: {t.problem}")
            continue
        rec = t.record
        status = rec.status + (f": {rec.message}" if rec.message else "")
        out.append(
            f"  {name} ({rec.created or 'no date'}; {rec.rounds_done()} of {rec.rounds} rounds; {status})"
        )
        for ts in rec.suggestions:
            change = ts.delta_text() or "no change"
            out.append(f"    {ts.index}. {ts.rule} ({change}): {verdict_summary(ts)}")
            ratios = round_cells(ts)
            if ratios:
                out.append(f"       rounds: {', '.join(ratios)}")
        for problem in rec.load_problems[:5]:
            out.append(f"    note: {problem}")
    return out


def trial_table(record: TrialRecord) -> str:
    """A trial as the CLI prints it at its end: one row per suggestion, every round's ratio, then
    each verdict in words and each round's figures."""
    from ..report.formatting import text_table

    n = max([record.rounds] + [len(s.rounds) for s in record.suggestions])
    headers = ["#", "suggestion", "figure judged", *[f"r{k}" for k in range(1, n + 1)],
               "interval [95%]", "A/A spread", "verdict"]
    rows = []
    for s in record.suggestions:
        ratios = {r.round: fmt_ratio(r.ratio) for r in s.rounds}
        change = s.delta_text() or "no change"
        rows.append([
            str(s.index), f"{s.rule} ({change})", s.figure_text(),
            *[ratios.get(k, "–") for k in range(1, n + 1)],
            s.interval_text(),
            "–" if s.aa_spread_pct is None else f"{s.aa_spread_pct:.0f} %",
            s.verdict or "–",
        ])
    out = [text_table(headers, rows, left=3)]
    out.append("ratio = A's figure / B's in the same round: above 1.00× the suggestion is faster")
    for s in record.suggestions:
        out.append("")
        out.append(f"= {s.index}. {s.rule}: " + (f"{s.verdict}: {s.verdict_reason}" if s.verdict else "no verdict"))
        if s.checks:
            out.append(f"  checks: {s.checks}")
        if s.dropped:
            out.append(f"  not run to the end: {s.dropped}")
        out.extend(f"  {line}" for line in round_lines(s))
    if record.notes:
        out.append("")
        out.extend(f"note: {line}" for line in record.notes)
    return "\n".join(out) + "\n"
