"""What a "try it" comparison reads from its runs, and the verdict on each suggestion.

The figure a suggestion is judged on is the one it changes
(:func:`figure_of`): the time per sample for a batch-size change (a larger
batch makes each call slower and each sample cheaper), the first call (the
compile) for a compile-cache change, the time per call otherwise. For a
delta that adds a compile mode, the added mode's figure in B is read against
the figure of the variant the suggestion names in A (:func:`variants_of`).

Each round gives two figures of A (its run before every B and its run
after them) and one of B, each the median of that run's timed calls
(divided by the batch the run measured for the time per sample). The
round's ratio is A / B with A the geometric mean of its two figures
(:func:`a_reference`): A brackets B, so a machine that slows down or speeds
up steadily over the round moves both sides alike. Above 1 the suggestion
made the figure smaller (faster). The round's A/A control is A's first
figure over its last: what the same configuration gives twice in one round.

The verdict (:func:`judge_suggestion`) is the one of :mod:`results.analysis.verdict`,
on the same terms as a variant against eager in one run: a 95 % t-interval
on the log of the per-round ratios (:func:`stats.round_ratio_interval`, one
observation per round), the checks of A's and B's timed calls (two levels;
drift between rounds is not held against a bracketed ratio, since it moves
A and B alike), and a noise floor from the A/A control — the largest A/A
difference of any round (:func:`aa_spread`): a ratio within it "cannot
tell". Records made before A ran twice per round fall back to how far A's
figure moved between rounds, with the drift check. B's own correctness
check decides "incorrect" (a dtype change above all), whatever its speed.
Pure Python and numpy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.protocol import RunStatus, VariantStatus
from ...core.variants import compiled_variants
from ..analysis.stats import (
    SampleChecks,
    SpeedupInterval,
    round_ratio_interval,
    sample_checks,
    spread_pct,
)
from ..analysis.verdict import Verdict, VerdictKind, interval_text, judge
from ..records.run_result import RunResult
from ..records.trial_record import RoundFigure, TrialSuggestion

#: What the comparison calls its two configurations in a verdict's sentence.
A_NAME, B_NAME = "A", "B"


def figure_of(delta: dict[str, Any]) -> str:
    """The figure a delta is judged on: ``per_sample``, ``first_call`` or ``per_call``."""
    if "batch_size" in delta:
        return "per_sample"
    if "compile_cache" in delta:
        return "first_call"
    return "per_call"


def variants_of(variant: str, delta: dict[str, Any], variants: Sequence[str]) -> tuple[str, str]:
    """(A's variant, B's variant) whose figures a suggestion compares.

    A delta that adds a compile mode: the first mode it adds (in B) against
    the variant the suggestion names (in A; eager when the run lacks it).
    Any other delta: the variant it names in both (a compiled one of the
    run, else eager, when the run lacks it).
    """
    have = list(variants)
    added = [v for v in delta.get("variants") or [] if v not in have]
    base = variant if variant in have else ""
    if added:
        return (base or "eager"), added[0]
    if not base:
        compiled = compiled_variants(have)
        base = compiled[0] if compiled else "eager"
    return base, base


def run_figure(run: RunResult, variant: str, figure: str) -> tuple[float | None, str]:
    """The figure of ``variant`` in one run (ms) and, when there is none, why not."""
    status = RunStatus.parse(run.status, RunStatus.INCOMPLETE)
    v = run.variants.get(variant)
    if v is None:
        return None, f"{variant} did not run" + (f" ({run.message})" if run.message else "")
    if v.status == VariantStatus.FAILED:
        return None, f"{variant} failed: {v.error or 'no reason given'}"
    if status != RunStatus.COMPLETE:
        return None, f"the run is {status}" + (f": {run.message}" if run.message else "")
    if figure == "first_call":
        if v.first_call_ms is None or not math.isfinite(v.first_call_ms) or v.first_call_ms <= 0:
            return None, f"{variant} has no first call time"
        return float(v.first_call_ms), ""
    st = v.stats()
    if st is None or st.median <= 0:
        return None, f"{variant} has no timed call"
    if figure == "per_sample":
        batch = run.batch()
        if batch is None and run.config is not None:
            batch = run.config.batch_size
        if not batch:
            return None, "the batch this run measured is not known"
        return st.median / batch, ""
    return st.median, ""


def run_samples(run: RunResult, variant: str, figure: str) -> list[float]:
    """The values of ``variant`` in one run that the checks read (its timed calls; its first call)."""
    v = run.variants.get(variant)
    if v is None:
        return []
    if figure == "first_call":
        return [float(v.first_call_ms)] if v.first_call_ms else []
    return [float(x) for x in v.samples.measured_wall_ms()]


def round_note(a: RunResult | None, b: RunResult | None, a_variant: str, b_variant: str) -> str:
    """Recompiles and graph breaks of A's and B's variants, where either has any: what compile did."""
    parts = []
    for what in ("recompiles", "graph_breaks"):
        got = []
        for role, run, name in (("A", a, a_variant), ("B", b, b_variant)):
            v = run.variants.get(name) if run is not None else None
            value = getattr(v, what, None) if v is not None else None
            got.append(f"{role} {value}" if isinstance(value, int) else None)
        if any(x and not x.endswith(" 0") for x in got):
            parts.append(f"{what.replace('_', ' ')}: " + ", ".join(x for x in got if x))
    return "; ".join(parts)


def ratio_of(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not (a > 0 and b > 0) or not math.isfinite(a / b):
        return None
    return a / b


def a_reference(a: float | None, a_end: float | None) -> float | None:
    """A's figure of a round: the geometric mean of its runs before and after B (the first alone
    until the last has run, or when it could not be measured)."""
    if a is None or not a > 0:
        return None
    if a_end is None or not a_end > 0:
        return a
    return math.sqrt(a * a_end)


def bracketed(rounds: Sequence[RoundFigure]) -> bool:
    """Whether A ran after B in some round (A/A control by rounds, drift cancels in the ratio)."""
    return any(r.a_end is not None for r in rounds)


def aa_spread(rounds: Sequence[RoundFigure]) -> float | None:
    """The A/A control as a fraction: the largest difference between A's two runs of one round
    (max / min − 1); for rounds without A's second run, how far A's figure moved between rounds."""
    if bracketed(rounds):
        logs = [abs(math.log(r.a / r.a_end)) for r in rounds if r.a and r.a_end and r.a > 0 and r.a_end > 0]
        return math.expm1(max(logs)) if logs else None
    found = spread_pct([r.a for r in rounds if r.a is not None])
    return found / 100.0 if found is not None else None


def interval_of(rounds: Sequence[RoundFigure]) -> SpeedupInterval | None:
    """The t-interval of the per-round ratios A / B (None with fewer than two rounds that have both)."""
    both = [(a_reference(r.a, r.a_end), r.b) for r in rounds if r.ratio is not None and r.b is not None]
    pairs = [(a, b) for a, b in both if a is not None and b is not None]
    if len(pairs) < 2:
        return None
    return round_ratio_interval([[a] for a, _ in pairs], [[b] for _, b in pairs])


def _without_drift(checks: SampleChecks | None) -> SampleChecks | None:
    return dataclasses.replace(checks, drift=None) if checks is not None else None


def _checks(groups: Sequence[Sequence[float]]) -> SampleChecks | None:
    usable = [np.asarray(g, dtype=np.float64) for g in groups if len(g)]
    return sample_checks(usable) if usable else None


def judge_suggestion(
    s: TrialSuggestion,
    a_groups: Sequence[Sequence[float]] = (),
    b_groups: Sequence[Sequence[float]] = (),
    failed: str = "",
) -> Verdict | None:
    """The verdict on a suggestion from its rounds, written into ``s`` (and returned).

    ``a_groups``/``b_groups``: per round, the values the checks read (the
    timed calls of A's and B's variants); ``failed``: why B could not be
    measured at all (the verdict is then "failed"). None before a round has
    both figures and nothing failed.
    """
    interval = interval_of(s.rounds)
    spread = aa_spread(s.rounds)
    s.aa_spread_pct = spread * 100.0 if spread is not None else None
    s.interval_point = interval.point if interval is not None else None
    s.interval_lo = interval.lo if interval is not None else None
    s.interval_hi = interval.hi if interval is not None else None
    s.interval_method = interval.method if interval is not None else ""
    a_checks, b_checks = _checks(a_groups), _checks(b_groups)
    if bracketed(s.rounds):
        a_checks, b_checks = _without_drift(a_checks), _without_drift(b_checks)
    s.checks = "; ".join(
        f"{name}: {', '.join(c.problems())}"
        for name, c in ((A_NAME, a_checks), (B_NAME, b_checks))
        if c is not None and c.problems()
    )
    wrong = [r for r in s.rounds if r.b_allclose is False]
    measured = s.measured_rounds()
    verdict: Verdict | None
    if wrong:
        speed = f"; its speed ({interval_text(interval)} of A's) does not count" if interval else ""
        verdict = Verdict(
            VerdictKind.INCORRECT,
            f"{s.b_variant}'s output in B differs from the fp64 reference beyond tolerance "
            f"(round {', '.join(str(r.round) for r in wrong)}){speed}",
        )
    elif failed and not measured:
        verdict = Verdict(VerdictKind.FAILED, failed)
    elif interval is None:
        verdict = None
        if measured:
            verdict = Verdict(
                VerdictKind.CANNOT_TELL,
                f"only {len(measured)} round has both A and B: no interval (run more rounds)",
            )
    else:
        verdict = judge(
            B_NAME,
            status="done",
            error=None,
            allclose=None,
            correctness_problems=None,
            interval=interval,
            checks=b_checks,
            baseline_checks=a_checks,
            floor=spread,
            baseline_name=A_NAME,
        )
        if verdict is not None and spread is not None and verdict.kind in (
            VerdictKind.FASTER, VerdictKind.SLOWER
        ):
            verdict = Verdict(
                verdict.kind,
                verdict.reason + (
                    f"; A/A control: A's two runs of a round differ by up to {spread * 100:.0f} %"
                    if bracketed(s.rounds)
                    else f"; A/A control: A moved by up to {spread * 100:.0f} % between rounds"
                ),
            )
    s.verdict = str(verdict.kind) if verdict is not None else ""
    s.verdict_reason = verdict.reason if verdict is not None else ""
    return verdict


def fmt_figure(value: float | None) -> str:
    """A figure in ms, to three significant digits (``0.0261``, ``12.4``); "–" when unknown."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.3g}"


def fmt_ratio(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.2f}×"
