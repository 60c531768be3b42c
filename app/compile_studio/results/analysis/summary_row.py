"""One row of a run's summary table, and the version of the summary stored in run.json.

Apart from summary.py (which computes the rows) so that a run can keep its rows
without importing how they are computed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .verdict import Verdict, VerdictKind

#: Version of the summary stored in run.json (its rows' fields and how they are computed).
#: A stored summary of another version, or whose rows do not have exactly the
#: fields of :class:`SummaryRow`, is computed again from the samples when read.
SUMMARY_VERSION = 4
#: 2: ``floor_speedup``; a verdict names the harness floor where it is a sizeable share of a median.
#: 3: a verdict's sentence leads with the cause that decided it (the interval before the checks).


@dataclass(frozen=True)
class SummaryRow:
    """One row of the summary table (and of summary.csv).

    ``speedup`` is eager's speed over this variant's with its 95 % interval
    (``speedup_lo``/``speedup_hi``) from the per-round ratios of medians
    (``interval_method`` ``rounds``; ``block bootstrap`` for a run of one
    round). ``round_spread_pct`` is the spread of this variant's per-round
    medians, ``speedup_spread_pct`` that of the per-round ratios. The checks
    (drift, two levels, heavy tail) are summed up in ``checks``; ``verdict``
    and ``verdict_reason`` say what can be concluded (see results.analysis.verdict).
    ``break_even_calls`` is only given for a variant found faster.
    ``tflops`` is the achieved rate of :data:`FLOP_RATE_DEFINITION` (None
    without a FLOP count).
    ``floor_speedup`` is the same ratio of medians with the harness floor (the
    timer's own cost per call) taken out of both (see
    ``stats.floor_subtracted_speedup``); None where either median is too near
    the floor, or the run has none.
    """

    name: str
    status: str
    n: int
    compile_s: float | None
    median_ms: float | None
    mean_ms: float | None
    p5_ms: float | None
    p95_ms: float | None
    iqr_pct: float | None
    device_median_ms: float | None
    speedup: float | None
    speedup_lo: float | None
    speedup_hi: float | None
    break_even_calls: float | None
    throughput_per_s: float | None
    tflops: float | None
    max_abs_error: float | None
    max_rel_error: float | None
    allclose: bool | None
    graphs: int | None
    graph_breaks: int | None
    recompiles: int | None
    recompiles_in_window: int | None
    peak_memory_bytes: int | None
    noisy: bool
    error: str | None
    pipelined_ms: float | None = None
    device_speedup: float | None = None
    device_speedup_lo: float | None = None
    device_speedup_hi: float | None = None
    rounds: int = 0
    interval_method: str = ""
    round_spread_pct: float | None = None
    speedup_spread_pct: float | None = None
    drift_pct: float | None = None
    drift: bool = False
    two_level: bool = False
    tail_ratio: float | None = None
    heavy_tail: bool = False
    checks: str = ""
    noise_floor_pct: float | None = None
    verdict: str = ""
    verdict_reason: str = ""
    floor_speedup: float | None = None
    #: how peak_memory_bytes was measured (rss_peak, cuda_allocator_peak, …; "" unknown)
    memory_kind: str = ""

    @classmethod
    def fields(cls) -> list[str]:
        return list(cls.__dataclass_fields__)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def verdict_text(self) -> str:
        """``kind: reason`` ('' when there is no verdict)."""
        return str(Verdict(VerdictKind(self.verdict), self.verdict_reason)) if self.verdict else ""
