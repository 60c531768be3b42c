"""The verdict on one compiled variant: faster, slower, or — when that is the truth — cannot tell.

A verdict rests on three things measured in the same run: the speedup's 95 %
interval from the rounds (:func:`stats.round_ratio_interval`), the checks of
both samples (:class:`stats.SampleChecks`) and, when the run has one, the
A/A control (eager measured again as a second, independent copy), whose own
interval is the noise floor of this machine now. "Cannot tell" when the
interval contains 1.00, when drift or two levels make eager's or the
variant's median unfit (unless the whole interval lies farther from 1.00
than the drift or the gap between the two levels could move a median), or
when the difference is inside the noise floor, tried in that order; the
first that applies is the verdict's ``cause`` (:class:`VerdictCause`) and
leads its sentence, which then says what to do about it. A wrong output is "incorrect"
whatever its speed. Pure Python and numpy.

The verdict judges the wall-time speedup: the time a caller waits per call,
which is what users feel. Every wall sample also holds the harness floor
once (the timer's own cost per call, ``measurement.harness_floor_ms``),
which pulls the ratio towards 1.00. Where the floor is at least
:data:`HARNESS_SHARE` (10 %) of eager's or the variant's median, the
sentence says so after the interval, with the speedup of the calls without
it (``floor_speedup``: both medians less the floor, given where both are
at least twice the floor): "(wall time, which includes the timer's 12 µs
per call; without it: 1.80×)", or "…; too close to it to take it out". The
verdict itself does not change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from ...core.variants import is_aa_control
from .stats import SampleChecks, SpeedupInterval


class VerdictKind(str, Enum):
    """What can be said of a variant's speed against eager."""

    FASTER = "faster"
    SLOWER = "slower"
    CANNOT_TELL = "cannot tell"
    INCORRECT = "incorrect"
    FAILED = "failed"

    def __str__(self) -> str:
        return str(self.value)


class VerdictCause(str, Enum):
    """Which part of the rule decided a verdict (see :func:`judge`)."""

    #: the variant failed: no timed call completed
    FAILED = "failed"
    #: the output differs from the fp64 reference
    INCORRECT = "incorrect"
    #: the speedup's 95 % interval includes 1.00 (the rounds disagree too much to tell)
    INTERVAL_INCLUDES_ONE = "interval includes 1.00"
    #: drift or two levels make a median unfit, and the interval lies within what they could move
    CHECKS = "checks"
    #: the difference is inside the A/A control's noise floor
    NOISE_FLOOR = "noise floor"
    #: the whole interval lies on one side of 1.00
    INTERVAL_CLEAR = "interval clear of 1.00"
    #: the whole interval lies farther from 1.00 than the failed checks could move a median
    BEYOND_CHECKS = "beyond the checks"

    def __str__(self) -> str:
        return str(self.value)


#: What each cause says, after "decided by": the part of the rule that gave the verdict.
CAUSE_WORDS = {
    VerdictCause.FAILED: "the variant failed: no timed call completed",
    VerdictCause.INCORRECT: "the output, gradients or parameters differ from the reference beyond "
    "tolerance; speed does not count",
    VerdictCause.INTERVAL_INCLUDES_ONE: "the speedup's 95 % interval includes 1.00: the rounds do not "
    "agree closely enough to say faster or slower",
    VerdictCause.CHECKS: "the checks (drift or two levels) make a median unfit, and the interval lies "
    "within what they could move it",
    VerdictCause.NOISE_FLOOR: "the difference is inside the A/A control's noise floor",
    VerdictCause.INTERVAL_CLEAR: "the whole 95 % interval lies on one side of 1.00",
    VerdictCause.BEYOND_CHECKS: "the whole 95 % interval lies farther from 1.00 than the failed checks "
    "could move a median",
}


@dataclass(frozen=True)
class Verdict:
    """A kind and one sentence saying why (and, for "cannot tell", what to do).

    ``cause`` names the part of the rule that decided it (None: not said).
    """

    kind: VerdictKind
    reason: str
    cause: VerdictCause | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.reason}"


def cause_of(
    verdict: str, reason: str, lo: float | None = None, hi: float | None = None
) -> VerdictCause | None:
    """The cause of a verdict as a summary row keeps it: its kind, sentence and interval.

    Read from the interval where it decides (a "cannot tell" whose interval
    includes 1.00 is decided by that, whatever else its sentence names), else
    from the words :func:`judge` wrote; None for no verdict.
    """
    if not verdict:
        return None
    if verdict == VerdictKind.FAILED:
        return VerdictCause.FAILED
    if verdict == VerdictKind.INCORRECT:
        return VerdictCause.INCORRECT
    covers_one = lo is not None and hi is not None and lo <= 1.0 <= hi
    if verdict == VerdictKind.CANNOT_TELL:
        if covers_one or (lo is None and "includes 1.00" in reason):
            return VerdictCause.INTERVAL_INCLUDES_ONE
        if "inside the A/A noise floor" in reason:
            return VerdictCause.NOISE_FLOOR
        return VerdictCause.CHECKS
    if "beyond what the checks saw" in reason:
        return VerdictCause.BEYOND_CHECKS
    return VerdictCause.INTERVAL_CLEAR


ADVICE = "close other programs or raise rounds"
#: The verdict names the harness floor where it is at least this share of eager's or the variant's median.
HARNESS_SHARE = 0.10
#: A slow level with at least this share of the calls can move a median by the gap between levels.
TWO_LEVEL_MEDIAN_SHARE = 0.25


def ratio_digits(lo: float, hi: float) -> int:
    """Decimals that keep an interval clear of 1.00 printed so (0.998 is ``0.998``, not ``1.00``).

    Two, or more (at most six) where a bound below 1 would print as 1.00 or one above it would.
    """
    digits = 2
    while digits < 6 and (
        (hi < 1.0 and float(f"{hi:.{digits}f}") >= 1.0) or (lo > 1.0 and float(f"{lo:.{digits}f}") <= 1.0)
    ):
        digits += 1
    return digits


def fmt_bounds(point: float, lo: float, hi: float) -> str:
    """``1.85× [1.79–1.91]``, with the digits that keep a bound on its side of 1.00."""
    d = ratio_digits(lo, hi)
    return f"{point:.{d}f}× [{lo:.{d}f}–{hi:.{d}f}]"


def interval_text(interval: SpeedupInterval) -> str:
    """``1.85× [1.79–1.91]`` (``0.990× [0.640–0.998]`` where 2 digits would print 1.00)."""
    return fmt_bounds(interval.point, interval.lo, interval.hi)


def noise_floor(aa: SpeedupInterval | None) -> float | None:
    """The A/A control's largest distance from 1.00 within its interval (0.05 = 5 %).

    Two copies of the same model differ by up to this much on this machine now,
    so a smaller difference between eager and a compiled variant cannot be told
    from noise. Symmetric in speed: 0.95× and 1.05× are both 5 %.
    """
    if aa is None:
        return None
    far = max(abs(math.log(aa.lo)), abs(math.log(aa.hi)))
    return math.expm1(far)


def _us(ms: float) -> str:
    us = ms * 1000.0
    return f"{us:.0f} µs" if us >= 10 else f"{us:.2g} µs"


def harness_note(
    eager_ms: float | None, variant_ms: float | None, floor_ms: float | None, floor_speedup: float | None
) -> str:
    """What the verdict adds after the interval where the harness floor is a sizeable share of a median.

    `` (wall time, which includes the timer's 12 µs per call; without it: 1.80×)``
    where ``floor_ms`` is at least :data:`HARNESS_SHARE` of the smaller of the
    two medians; ``""`` otherwise, or where a figure is missing.
    """
    if floor_ms is None or eager_ms is None or variant_ms is None:
        return ""
    smaller = min(eager_ms, variant_ms)
    if not (math.isfinite(smaller) and smaller > 0 and math.isfinite(floor_ms) and floor_ms > 0):
        return ""
    if floor_ms < HARNESS_SHARE * smaller:
        return ""
    without = (
        f"without it: {floor_speedup:.2f}×"
        if floor_speedup is not None and math.isfinite(floor_speedup)
        else "too close to it to take it out"
    )
    return f" (wall time, which includes the timer's {_us(floor_ms)} per call; {without})"


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.0f} %" if fraction >= 0.01 else f"{fraction * 100:.1f} %"


def _spread_words(name: str, checks: SampleChecks | None) -> str | None:
    if checks is None or checks.spread_pct is None:
        return None
    between = "between rounds" if checks.groups_are == "rounds" else "between blocks of calls"
    return f"{name} differs by up to {checks.spread_pct:.0f} % {between}"


def _check_words(name: str, checks: SampleChecks | None) -> list[str]:
    """Why ``name``'s median is unfit for a verdict, one phrase per blocking check."""
    if checks is None:
        return []
    out = []
    if checks.drifting and checks.drift is not None:
        d = checks.drift
        where = "rounds" if checks.groups_are == "rounds" else "run"
        out.append(
            f"{name} got {abs(d.change) * 100:.0f} % {'slower' if d.change > 0 else 'faster'} "
            f"across the {where} (drift)"
        )
    if checks.two_levelled and checks.two_level is not None:
        t = checks.two_level
        out.append(
            f"{name}'s calls fall into two levels ({t.low_ms:.3g} ms and {t.high_ms:.3g} ms, "
            f"{t.high_share * 100:.0f} % slow)"
        )
    return out


def _disturbance(checks: SampleChecks | None) -> float:
    """How far (in log ratio) the blocking checks of one variant could move its median."""
    if checks is None:
        return 0.0
    far = 0.0
    if checks.drifting and checks.drift is not None:
        far = max(far, abs(math.log1p(max(checks.drift.change, -0.99))))
    if checks.two_levelled and checks.two_level is not None:
        t = checks.two_level
        # a median sits in the level that holds most calls: a slow level with a quarter
        # of them or more could hold half in some round and move the median by the gap;
        # fewer slow calls move it only within the fast level, which the rounds see
        if t.high_share >= TWO_LEVEL_MEDIAN_SHARE:
            far = max(far, abs(math.log(t.high_ms / t.low_ms)) if t.low_ms > 0 else math.inf)
    return far


def _beyond(interval: SpeedupInterval, far: float) -> bool:
    """Whether the whole interval lies farther from 1.00 than ``far`` (a log ratio)."""
    return math.log(interval.lo) > far or math.log(interval.hi) < -far


def _one_round_note(interval: SpeedupInterval) -> str:
    if interval.method == "rounds":
        return f" across {interval.rounds} rounds"
    return (
        " from one round (a change of the machine between eager's calls and these "
        "would not show; raise rounds)"
    )


#: What a correctness problem's prefix (engine.finish) names: the part of the check that failed.
_CHECKED_PARTS = (
    ("first call:", "the output"),
    ("steady state:", "the output of a steady-state call"),
    ("gradients:", "the gradients"),
    ("parameters:", "the parameters after the training check's steps"),
)


def reference_words(reference: str) -> str:
    """``the fp64 reference``, or ``the eager fp32 reference (the model cannot run in fp64)``."""
    if not reference or reference == "fp64":
        return "the fp64 reference"
    return f"the {reference} reference (the model cannot run in fp64)"


def incorrect_text(problems: list[str], reference: str = "fp64") -> str:
    """Which of output, gradients and parameters failed, each with its own figure and bound."""
    parts: list[str] = []
    for problem in problems:
        what = next(
            ((name, problem[len(prefix):].strip()) for prefix, name in _CHECKED_PARTS
             if problem.startswith(prefix)),
            None,
        )
        if what is None:
            parts.append(problem)
        elif what[0].startswith("the parameters"):
            parts.append(f"{what[0]} drifted from eager's: {what[1]}")
        else:
            verb = "differ" if what[0] == "the gradients" else "differs"
            parts.append(f"{what[0]} {verb} from {reference_words(reference)}: {what[1]}")
    if not parts:
        return f"the output differs from {reference_words(reference)} beyond tolerance"
    return "; ".join(parts)


def judge(
    name: str,
    *,
    status: str,
    error: str | None,
    allclose: bool | None,
    correctness_problems: list[str] | None,
    interval: SpeedupInterval | None,
    checks: SampleChecks | None,
    baseline_checks: SampleChecks | None,
    floor: float | None,
    baseline_name: str = "eager",
    harness: str = "",
    reference: str = "fp64",
) -> Verdict | None:
    """The verdict on variant ``name`` against the baseline; None when there is nothing to judge yet.

    ``floor`` is the A/A noise floor (:func:`noise_floor`), ignored for the
    A/A control itself, whose verdict states the floor instead. ``harness``
    (:func:`harness_note`) follows the interval in the sentence; ``reference``: what the
    outputs were checked against ("fp64", or "eager fp32" for a model that cannot run in fp64).
    """
    if status == "failed":
        return Verdict(VerdictKind.FAILED, error or "no timed call completed", VerdictCause.FAILED)
    if allclose is False:
        speed = f"; its speed ({interval.point:.2f}× eager) does not count" if interval else ""
        return Verdict(
            VerdictKind.INCORRECT,
            incorrect_text(correctness_problems or [], reference) + speed,
            VerdictCause.INCORRECT,
        )
    if interval is None:
        return None
    shown = interval_text(interval) + (harness if not is_aa_control(name) else "")
    unfit = _check_words(baseline_name, baseline_checks) + _check_words(name, checks)
    covers_one = interval.covers(1.0)
    far = max(_disturbance(baseline_checks), _disturbance(checks))
    # a difference larger than anything drift or two levels could make still stands
    outgrown = bool(unfit) and not covers_one and not is_aa_control(name) and _beyond(interval, far)
    if (unfit and not outgrown) or covers_one:
        kind = VerdictKind.CANNOT_TELL
    else:
        kind = VerdictKind.FASTER if interval.lo > 1.0 else VerdictKind.SLOWER
    if is_aa_control(name):
        return _aa_verdict(kind, interval, unfit)
    if covers_one:
        return _includes_one(kind, shown, (baseline_name, baseline_checks), (name, checks), unfit)
    if floor is not None and abs(math.log(interval.point)) <= math.log1p(floor):
        # inside what the A/A control moves by: whatever the checks say, nothing to claim
        return Verdict(
            VerdictKind.CANNOT_TELL,
            f"{shown} is inside the A/A noise floor: differences smaller than {_pct(floor)} "
            f"are not resolvable on this machine now; {ADVICE}",
            VerdictCause.NOISE_FLOOR,
        )
    if outgrown:
        return Verdict(
            kind,
            f"{shown} of {baseline_name}'s speed{_one_round_note(interval)}: the whole interval "
            f"lies beyond what the checks saw (" + "; ".join(unfit) + ")",
            VerdictCause.BEYOND_CHECKS,
        )
    if unfit:
        reason = (
            f"{shown}, but not resolvable on this machine now: " + "; ".join(unfit) + f"; {ADVICE}"
        )
        return Verdict(kind, reason, VerdictCause.CHECKS)
    return Verdict(
        kind, f"{shown} of {baseline_name}'s speed{_one_round_note(interval)}", VerdictCause.INTERVAL_CLEAR
    )


def _includes_one(
    kind: VerdictKind,
    shown: str,
    baseline: tuple[str, SampleChecks | None],
    variant: tuple[str, SampleChecks | None],
    unfit: list[str],
) -> Verdict:
    """The verdict when the interval includes 1.00: the interval decides; the spread of each
    side is said, and checks that failed too are named after it, not as the cause."""
    spread = [s for s in (_spread_words(*baseline), _spread_words(*variant)) if s is not None]
    why = ("; ".join(spread) + "; ") if spread else ""
    also = f" (the checks also saw: {'; '.join(unfit)})" if unfit else ""
    return Verdict(
        kind,
        f"{shown} includes 1.00: not resolvable on this machine now: {why}{ADVICE}{also}",
        VerdictCause.INTERVAL_INCLUDES_ONE,
    )


def _aa_verdict(kind: VerdictKind, interval: SpeedupInterval, unfit: list[str]) -> Verdict:
    """The A/A control's verdict: always states the noise floor it measured."""
    own = noise_floor(interval)
    assert own is not None
    shown = interval_text(interval)
    floor = f"differences smaller than {_pct(own)} are not resolvable on this machine now"
    if interval.covers(1.0):
        cause = VerdictCause.INTERVAL_INCLUDES_ONE
    else:
        cause = VerdictCause.CHECKS if kind is VerdictKind.CANNOT_TELL else VerdictCause.INTERVAL_CLEAR
    if unfit:
        return Verdict(
            kind,
            f"A/A control (eager measured again) {shown}: {floor}, and " + "; ".join(unfit) + f"; {ADVICE}",
            cause,
        )
    if kind is VerdictKind.CANNOT_TELL:
        return Verdict(
            kind, f"A/A control (eager measured again) {shown}{_one_round_note(interval)}: {floor}", cause
        )
    return Verdict(
        kind,
        f"A/A control (eager measured again) {shown}: two copies of one model differ here, "
        f"so {floor}; {ADVICE}",
        cause,
    )
