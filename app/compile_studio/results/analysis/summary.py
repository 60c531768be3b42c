"""The summary table of a run: its rows, the speedup intervals, and when they are computed again.

Each variant's row is read from its samples (statistics, round groups, the
checks, the interval against eager) and its diagnostics; the statistics live
in stats.py and the verdict in verdict.py. What a row needs from its samples
is kept with them until more arrive (:meth:`VariantSamples.cached`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...core.config import BenchmarkConfig
from ...core.variants import AA_CONTROL
from .samples import VariantSamples
from .stats import (
    LatencyStats,
    SampleChecks,
    SpeedupInterval,
    block_bootstrap_speedup_interval,
    break_even_calls,
    floor_subtracted_speedup,
    round_ratio_interval,
    sample_checks,
    shared_rounds,
)
from .summary_row import SUMMARY_VERSION as SUMMARY_VERSION
from .summary_row import SummaryRow as SummaryRow
from .verdict import Verdict, VerdictKind, harness_note, judge, noise_floor

if TYPE_CHECKING:
    from ..records.run_result import RunResult, VariantResult

def _round_groups(samples: VariantSamples, device: bool = False) -> dict[int, np.ndarray]:
    """Measured samples by round (see :meth:`VariantSamples.round_groups`)."""
    return samples.round_groups(device)


def _speedup_interval(
    base: dict[int, np.ndarray], other: dict[int, np.ndarray]
) -> SpeedupInterval | None:
    """From the rounds both have (two or more), else a block bootstrap of all samples."""
    a, b = shared_rounds(base, other)
    if len(a) >= 2:
        return round_ratio_interval(a, b)
    if not base or not other:
        return None
    return block_bootstrap_speedup_interval(
        np.concatenate(list(base.values())), np.concatenate(list(other.values()))
    )


def _checks_of(samples: VariantSamples) -> SampleChecks | None:
    """The checks of a variant's rounds (drift, two levels, tail), kept until more samples arrive."""
    return samples.cached(  # type: ignore[no-any-return]
        "checks", lambda: sample_checks(list(samples.round_groups().values()))
    )


def _interval_against(
    base: VariantResult, variant: VariantResult, device: bool = False
) -> SpeedupInterval | None:
    """:func:`_speedup_interval` of ``variant`` against ``base``, kept until either gets samples."""
    what = "device_interval" if device else "interval"

    def compute() -> tuple[int, SpeedupInterval | None]:
        return (
            len(base.samples),
            _speedup_interval(
                base.samples.round_groups(device), variant.samples.round_groups(device)
            ),
        )

    got = variant.samples.cached(what, compute)
    if got[0] != len(base.samples):
        variant.samples.forget(what)
        got = variant.samples.cached(what, compute)
    return got[1]  # type: ignore[no-any-return]


#: The one definition of the achieved FLOP rate, wherever it is shown (``show``, ``why``, the
#: Why tab, the report, summary.csv's ``tflops``, the sweep table).
FLOP_RATE_DEFINITION = (
    "achieved FLOP/s = FLOPs per call (counted by torch's FlopCounterMode; "
    "for a run that did not record a count, the built-in MLP's 2·batch·in·out per Linear) "
    "/ the variant's median time per call"
)


def _flops_per_call(config: BenchmarkConfig | None) -> int | None:
    if config is None or config.model != "mlp":
        return None
    try:
        return config.flops_per_call()
    except ValueError:
        return None


def run_flops_per_call(run: RunResult) -> tuple[float | None, str]:
    """The FLOPs of one call of ``run`` and where the figure comes from (``counted``/``analytic``).

    The count torch's ``FlopCounterMode`` made in the worker (``measurement.flops_per_call``)
    when the run recorded one; else, for the built-in MLP, the config's analytic count;
    else ``(None, "")``. The same for every variant: they run the same model.
    """
    measurement = run.measurement if isinstance(run.measurement, dict) else {}
    counted = measurement.get("flops_per_call")
    if (
        not isinstance(counted, bool)
        and isinstance(counted, (int, float))
        and math.isfinite(counted)
        and counted > 0
    ):
        return counted, "counted"
    analytic = _flops_per_call(run.config)
    if analytic:
        return analytic, "analytic"
    return None, ""


def achieved_tflops(flops_per_call: float | None, median_ms: float | None) -> float | None:
    """TFLOP/s as :data:`FLOP_RATE_DEFINITION` defines it; None without either figure."""
    if not flops_per_call or median_ms is None or not math.isfinite(median_ms) or median_ms <= 0:
        return None
    return float(flops_per_call) / (median_ms / 1000.0) / 1e12


def fmt_flop_rate(tflops: float | None) -> str:
    """``19.3 GFLOP/s`` below one TFLOP/s, ``1.2 TFLOP/s`` from it; ``–`` without a figure."""
    if tflops is None or not math.isfinite(tflops):
        return "–"
    if tflops >= 1:
        return f"{tflops:.1f} TFLOP/s"
    giga = tflops * 1000
    return f"{giga:.1f} GFLOP/s" if giga >= 1 else f"{giga:.2g} GFLOP/s"


def flop_rate_line(run: RunResult, rows: list[SummaryRow] | None = None) -> str | None:
    """``achieved: eager 19.3 GFLOP/s, default 25.0 GFLOP/s`` for the variants that have the figure,
    with where the FLOPs come from; None when no variant has one. The CLI's ``show`` prints
    it, and ``why`` and the report give the same figures."""
    rows = summarize(run) if rows is None else rows
    shown = [f"{r.name} {fmt_flop_rate(r.tflops)}" for r in rows if r.tflops is not None]
    if not shown:
        return None
    return f"achieved: {', '.join(shown)} ({flop_rate_basis(run)})"


def flop_rate_basis(run: RunResult) -> str:
    """What the achieved rate of ``run`` divides, in words (its FLOPs' source, the median time)."""
    _, source = run_flops_per_call(run)
    flops = (
        "FLOPs per call counted by torch's FlopCounterMode" if source == "counted"
        else "FLOPs per call from the MLP's layer sizes (no count recorded)" if source == "analytic"
        else "FLOPs per call"
    )
    return f"{flops} / median time per call"


def summarize(run: RunResult) -> list[SummaryRow]:
    """The summary table of a run, computed once per state of the run and kept.

    A large run's rows take seconds (the intervals resample); the files, the
    CLI and the window all ask for them at the end of a run. What each
    variant's row needs from its samples (round groups, checks, statistics,
    the interval against eager) is kept with the samples until more arrive, so
    a variant that has ended is not computed again when another one ends. A
    run read back from disk returns the rows stored with it (see
    :meth:`RunResult.set_summary`).
    """
    known = run.known_summary()
    if known is not None:
        return known
    run.require_samples()
    rows = _compute_summary(run)
    run.set_summary(rows)
    return list(rows)


@dataclass
class _Against:
    """What every row of a run's summary is computed against: eager's figures, the intervals,
    the A/A noise floor, the harness floor, the batch and the FLOPs per call."""

    base: VariantResult | None
    base_stats: LatencyStats | None
    base_device: dict[int, np.ndarray]
    batch: int | None
    flops: float | None
    groups: dict[str, dict[int, np.ndarray]]
    checks: dict[str, SampleChecks | None]
    intervals: dict[str, SpeedupInterval | None]
    floor: float | None
    harness: float | None


def _compute_summary(run: RunResult) -> list[SummaryRow]:
    """The summary table of a run, computed from its samples and diagnostics."""
    base = run.baseline
    base_stats = base.stats() if base is not None else None
    intervals: dict[str, SpeedupInterval | None] = {
        name: _interval_against(base, v)
        for name, v in run.variants.items()
        if name != "eager" and base_stats is not None and base is not None
    }
    against = _Against(
        base=base,
        base_stats=base_stats,
        base_device=_round_groups(base.samples, device=True) if base is not None else {},
        batch=run.batch(),
        flops=run_flops_per_call(run)[0],
        groups={name: _round_groups(v.samples) for name, v in run.variants.items()},
        checks={name: _checks_of(v.samples) for name, v in run.variants.items()},
        intervals=intervals,
        floor=noise_floor(intervals.get(AA_CONTROL)),
        harness=_harness_floor_ms(run),
    )
    return [_summary_row(against, v) for v in run.variants.values()]


def _speedups(
    a: _Against, v: VariantResult, st: LatencyStats | None, dst: LatencyStats | None
) -> tuple[float | None, float | None, float | None, float | None, float | None, float | None]:
    """``v``'s speedup over eager with its interval, then its device-time speedup with its
    interval (eager's own: 1.0; None where either side has no samples)."""
    speedup = lo = hi = None
    dev_speedup = dev_lo = dev_hi = None
    if st is not None and a.base_stats is not None:
        if v.name == "eager":
            speedup = lo = hi = 1.0
            if dst is not None:
                dev_speedup = dev_lo = dev_hi = 1.0
        else:
            interval = a.intervals.get(v.name)
            if interval is not None:
                speedup, lo, hi = interval.point, interval.lo, interval.hi
            dev = (
                _interval_against(a.base, v, device=True) if a.base is not None and a.base_device else None
            )
            if dev is not None:
                dev_speedup, dev_lo, dev_hi = dev.point, dev.lo, dev.hi
    return speedup, lo, hi, dev_speedup, dev_lo, dev_hi


def _verdict_of(
    a: _Against, v: VariantResult, st: LatencyStats | None, floor_speedup: float | None
) -> Verdict | None:
    """The verdict on ``v`` against eager (None for eager itself, or a run without eager)."""
    if v.name == "eager" or a.base is None:
        return None
    return judge(
        v.name,
        status=str(v.status),
        error=v.error,
        allclose=v.allclose,
        correctness_problems=list((v.checks or {}).get("problems") or []),
        reference=str((v.checks or {}).get("reference") or "fp64"),
        interval=a.intervals.get(v.name),
        checks=a.checks.get(v.name),
        baseline_checks=a.checks.get("eager"),
        floor=a.floor,
        harness=harness_note(
            a.base_stats.median if a.base_stats is not None else None,
            st.median if st is not None else None,
            a.harness,
            floor_speedup,
        ),
    )


def _summary_row(a: _Against, v: VariantResult) -> SummaryRow:
    """``v``'s row of the summary table."""
    st = v.stats()
    base_stats = a.base_stats
    floor_speedup = None
    if st is not None and base_stats is not None and a.harness is not None:
        floor_speedup = floor_subtracted_speedup(base_stats.median, st.median, a.harness)
    dst = v.device_stats()
    own = a.checks.get(v.name)
    interval = a.intervals.get(v.name)
    speedup, lo, hi, dev_speedup, dev_lo, dev_hi = _speedups(a, v, st, dst)
    verdict = _verdict_of(a, v, st, floor_speedup)
    be = None
    if (
        verdict is not None
        and verdict.kind is VerdictKind.FASTER
        and st is not None
        and base_stats is not None
        and speedup is not None
    ):
        be = break_even_calls(v.compile_s, base_stats.median, base_stats.median / speedup)
    throughput = tflops = None
    if st is not None and st.median > 0:
        if isinstance(a.batch, int):
            throughput = a.batch / (st.median / 1000.0)
        tflops = achieved_tflops(a.flops, st.median)
    return SummaryRow(
        name=v.name,
        status=v.status,
        n=st.n if st else 0,
        compile_s=v.compile_s,
        median_ms=st.median if st else None,
        mean_ms=st.mean if st else None,
        p5_ms=st.p5 if st else None,
        p95_ms=st.p95 if st else None,
        iqr_pct=(st.iqr_ratio * 100.0 if st and math.isfinite(st.iqr_ratio) else None),
        device_median_ms=dst.median if dst else None,
        speedup=speedup,
        speedup_lo=lo,
        speedup_hi=hi,
        break_even_calls=be,
        throughput_per_s=throughput,
        tflops=tflops,
        max_abs_error=v.max_abs_error,
        max_rel_error=v.max_rel_error,
        allclose=v.allclose,
        graphs=v.graphs,
        graph_breaks=v.graph_breaks,
        recompiles=v.recompiles,
        recompiles_in_window=v.recompiles_in_window,
        peak_memory_bytes=v.peak_memory_bytes,
        memory_kind=v.memory_kind or "",
        noisy=bool(st.noisy) if st else False,
        error=v.error,
        pipelined_ms=v.pipelined_ms,
        device_speedup=dev_speedup,
        device_speedup_lo=dev_lo,
        device_speedup_hi=dev_hi,
        rounds=len(a.groups[v.name]),
        interval_method=interval.method if interval is not None else "",
        round_spread_pct=own.spread_pct if own is not None and own.groups_are == "rounds" else None,
        speedup_spread_pct=interval.spread_pct if interval is not None else None,
        drift_pct=(
            own.drift.change * 100.0 if own is not None and own.drift is not None else None
        ),
        drift=bool(own is not None and own.drifting),
        two_level=bool(own is not None and own.two_levelled),
        tail_ratio=own.tail_ratio if own is not None else None,
        heavy_tail=bool(own is not None and own.heavy_tail),
        checks="; ".join(own.problems()) if own is not None else "",
        noise_floor_pct=a.floor * 100.0 if a.floor is not None else None,
        verdict=str(verdict.kind) if verdict is not None else "",
        verdict_reason=verdict.reason if verdict is not None else "",
        floor_speedup=floor_speedup,
    )


def _harness_floor_ms(run: RunResult) -> float | None:
    """The run's harness floor (``measurement.harness_floor_ms``); None where absent or not a time."""
    value = run.measurement.get("harness_floor_ms") if isinstance(run.measurement, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value > 0 else None
