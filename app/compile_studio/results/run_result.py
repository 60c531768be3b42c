"""What one run measured: per-variant samples and diagnostics, and its summary.

Longer than most modules, on purpose: the run's data and its summary rows are
one unit; the statistics live in stats.py and the verdict in verdict.py.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..config import AA_CONTROL, BenchmarkConfig, ConfigError
from ..protocol import (
    CompiledEvent,
    GpuStateEvent,
    RunStatus,
    VariantDoneEvent,
    VariantStatus,
)
from .stats import (
    LatencyStats,
    SampleChecks,
    SpeedupInterval,
    block_bootstrap_speedup_interval,
    break_even_calls,
    latency_stats,
    round_ratio_interval,
    sample_checks,
)
from .verdict import Verdict, VerdictKind, judge, noise_floor

#: Version of the run files (run.json, samples.csv, summary.csv, gpu_state.csv).
#: Whoever adds a field bumps it; the loader reads every older version.
SCHEMA_VERSION = 2
#: 2: samples.csv has a ``round`` column; run.json has ``measurement`` and each
#:    variant's ``checks``, ``cudagraphs``, ``pipelined_ms``, ``clock``.

GPU_STATE_COLUMNS = ["t_s", "gpu", "variant", "iteration", "sm_clock_mhz", "temperature_c", "power_w"]


def gpu_state_rows(event: GpuStateEvent) -> list[dict[str, Any]]:
    """The readings of one ``gpu_state`` event, one dict per reading."""
    n = len(event.t_s or [])
    rows = []
    for i in range(n):
        row: dict[str, Any] = {"gpu": event.gpu}
        for col in GPU_STATE_COLUMNS:
            if col != "gpu":
                values = getattr(event, col) or [None] * n
                row[col] = values[i] if i < len(values) else None
        rows.append(row)
    return rows


def config_from_saved(data: object) -> BenchmarkConfig | None:
    """The config stored in a run file; fields that do not fit are left at their defaults.

    An empty or missing config (a run read from a bare samples CSV) is None.
    """
    if not isinstance(data, dict) or not data:
        return None
    data = {k: v for k, v in data.items() if isinstance(k, str) and _fits_saved(v)}
    try:
        return BenchmarkConfig.from_dict(data)
    except (ConfigError, TypeError, ValueError, AttributeError, RecursionError):
        pass
    usable = {}
    for key, value in data.items():
        try:
            BenchmarkConfig.from_dict({key: value})
        except (ConfigError, TypeError, ValueError, AttributeError, RecursionError):
            continue
        usable[key] = value
    try:
        return BenchmarkConfig.from_dict(usable)
    except (ConfigError, TypeError, ValueError, AttributeError, RecursionError):
        return BenchmarkConfig()


#: Longest text kept from a saved configuration field.
_MAX_SAVED_TEXT = 2_000
_MAX_SAVED_ITEMS = 256


def _fits_saved(value: object) -> bool:
    """Whether a saved config value is small enough to be read (texts, lists of texts, numbers)."""
    if isinstance(value, str):
        return len(value) <= _MAX_SAVED_TEXT
    if isinstance(value, list):
        return len(value) <= _MAX_SAVED_ITEMS and all(_fits_saved(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) <= 2**63
    return isinstance(value, (bool, float)) or value is None


@dataclass
class VariantSamples:
    """Per-iteration samples of one variant (warm-up and measured), in order."""

    iteration: list[int] = field(default_factory=list)
    phase: list[str] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)
    device_ms: list[float | None] = field(default_factory=list)
    #: the measurement round of each sample (None for warm-up, and in files without rounds)
    round: list[int | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.iteration)

    def extend(
        self,
        first_iteration: int,
        phase: str,
        wall_ms: list[float],
        device_ms: list[float | None] | None,
        round_index: int | None = None,
    ) -> None:
        n = len(wall_ms)
        self.iteration.extend(range(first_iteration, first_iteration + n))
        self.phase.extend([phase] * n)
        self.wall_ms.extend(float(v) for v in wall_ms)
        self.device_ms.extend(device_ms if device_ms is not None else [None] * n)
        self.round.extend([round_index] * n)

    def measured_rounds(self) -> list[np.ndarray]:
        """The measured wall times of each round, in round order (one group without rounds)."""
        groups: dict[int, list[float]] = {}
        for w, p, r in zip(self.wall_ms, self.phase, self.round):
            if p == "measure":
                groups.setdefault(r if r is not None else 0, []).append(w)
        return [np.array(groups[k], dtype=np.float64) for k in sorted(groups)]

    def measured_wall_ms(self) -> np.ndarray:
        return np.array(
            [w for w, p in zip(self.wall_ms, self.phase) if p == "measure"], dtype=np.float64
        )

    def measured_device_ms(self) -> np.ndarray | None:
        vals = [d for d, p in zip(self.device_ms, self.phase) if p == "measure" and d is not None]
        return np.array(vals, dtype=np.float64) if vals else None

    def count(self, phase: str) -> int:
        return sum(1 for p in self.phase if p == phase)


@dataclass
class VariantResult:
    """One variant (eager, or one compile mode/backend) of a run."""

    name: str
    status: VariantStatus = VariantStatus.PENDING
    compile_s: float | None = None
    first_call_ms: float | None = None
    graphs: int | None = None
    graph_breaks: int | None = None
    break_reasons: list[str] = field(default_factory=list)
    recompiles: int | None = None
    recompiles_in_window: int | None = None
    peak_memory_bytes: int | None = None
    memory_kind: str | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    allclose: bool | None = None
    #: the correctness checks (rule, deviations, problems): see engine.checks
    checks: dict[str, Any] = field(default_factory=dict)
    cudagraphs: str | None = None
    cudagraph_record_ms: float | None = None
    compile_timing: str | None = None
    pipelined_ms: float | None = None
    clock: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    error_kind: str | None = None
    warnings: list[str] = field(default_factory=list)
    samples: VariantSamples = field(default_factory=VariantSamples)

    def stats(self) -> LatencyStats | None:
        return latency_stats(self.samples.measured_wall_ms())

    def device_stats(self) -> LatencyStats | None:
        d = self.samples.measured_device_ms()
        return latency_stats(d) if d is not None else None

    def meta_dict(self) -> dict[str, Any]:
        """Everything but the samples (those live in samples.csv)."""
        d = asdict(self)
        d.pop("samples")
        return d

    def apply_compiled(self, event: CompiledEvent) -> None:
        self.compile_s = event.compile_s
        self.first_call_ms = event.first_call_ms
        self.graphs = event.graphs
        self.graph_breaks = event.graph_breaks
        self.break_reasons = list(event.break_reasons)
        self.recompiles = event.recompiles
        self.compile_timing = event.compile_timing

    def apply_done(self, event: VariantDoneEvent) -> None:
        self.recompiles = event.recompiles
        self.recompiles_in_window = event.recompiles_in_window
        self.peak_memory_bytes = event.peak_memory_bytes
        self.memory_kind = event.memory_kind
        self.max_abs_error = event.max_abs_error
        self.max_rel_error = event.max_rel_error
        self.allclose = event.allclose
        self.checks = dict(event.checks)
        self.cudagraphs = event.cudagraphs
        self.cudagraph_record_ms = event.cudagraph_record_ms
        self.pipelined_ms = event.pipelined_ms
        self.clock = dict(event.clock)
        self.status = event.status


@dataclass
class RunResult:
    """A whole run: its config, environment, status and every variant."""

    run_id: str
    created: str
    #: None for a run read from a bare samples CSV (its config is unknown)
    config: BenchmarkConfig | None
    environment: dict[str, Any] = field(default_factory=dict)
    status: RunStatus = RunStatus.INCOMPLETE
    message: str = ""
    app_version: str = ""
    schema_version: int = SCHEMA_VERSION
    variants: dict[str, VariantResult] = field(default_factory=dict)
    #: GPU state readings (NVML), one dict per reading: see GPU_STATE_COLUMNS
    gpu_state: list[dict[str, Any]] = field(default_factory=list)
    #: how the run measured: harness floor, timer, memory and clock sources, threads
    measurement: dict[str, Any] = field(default_factory=dict)
    #: what did not fit when the run was read from disk (skipped rows, fields left at defaults)
    load_problems: list[str] = field(default_factory=list, compare=False)
    #: the summary rows and the state they were computed for (see :func:`summarize`)
    _summary: tuple[Any, list[SummaryRow]] | None = field(
        default=None, compare=False, repr=False
    )

    def variant(self, name: str) -> VariantResult:
        if name not in self.variants:
            self.variants[name] = VariantResult(name=name)
        return self.variants[name]

    @property
    def baseline(self) -> VariantResult | None:
        return self.variants.get("eager")

    def best_speedup(self) -> float | None:
        """The fastest correct compiled variant's speedup point estimate (no interval: cheap for lists).

        The same point estimate as the summary's: the geometric mean of the
        per-round ratios of medians, or the ratio of medians with one round.
        The A/A control and variants with a wrong output are left out.
        """
        base = self.baseline
        if base is None:
            return None
        base_groups = _round_groups(base.samples)
        best = None
        for name, v in self.variants.items():
            if name in ("eager", AA_CONTROL) or v.allclose is False:
                continue
            s = _speedup_point(base_groups, _round_groups(v.samples))
            if s is not None:
                best = s if best is None else max(best, s)
        return best

    @property
    def label(self) -> str:
        """The user's name for the run ('' when none)."""
        return self.config.label.strip() if self.config is not None else ""

    def title(self) -> str:
        c = self.config
        if c is None:
            return f"samples only · {self.environment.get('device', '?')}"
        return (
            f"{c.model_text()} · batch {c.batch_size} · "
            f"{c.dtype} · {self.environment.get('device', c.device)}"
        )


@dataclass(frozen=True)
class SummaryRow:
    """One row of the summary table (and of summary.csv).

    ``speedup`` is eager's speed over this variant's with its 95 % interval
    (``speedup_lo``/``speedup_hi``) from the per-round ratios of medians
    (``interval_method`` ``rounds``; ``block bootstrap`` for a run of one
    round). ``round_spread_pct`` is the spread of this variant's per-round
    medians, ``speedup_spread_pct`` that of the per-round ratios. The checks
    (drift, two levels, heavy tail) are summed up in ``checks``; ``verdict``
    and ``verdict_reason`` say what can be concluded (see results.verdict).
    ``break_even_calls`` is only given for a variant found faster.
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

    @classmethod
    def fields(cls) -> list[str]:
        return list(cls.__dataclass_fields__)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def verdict_text(self) -> str:
        """``kind: reason`` ('' when there is no verdict)."""
        return str(Verdict(VerdictKind(self.verdict), self.verdict_reason)) if self.verdict else ""


def _round_groups(samples: VariantSamples, device: bool = False) -> dict[int, np.ndarray]:
    """Measured samples (wall or device ms) by round index, in time order within each round.

    Samples without a round (older files) form round 0.
    """
    values = samples.device_ms if device else samples.wall_ms
    rounds = samples.round if len(samples.round) == len(values) else [None] * len(values)
    groups: dict[int, list[float]] = {}
    for value, phase, r in zip(values, samples.phase, rounds):
        if phase == "measure" and value is not None:
            groups.setdefault(r if r is not None else 0, []).append(float(value))
    return {k: np.asarray(groups[k], dtype=np.float64) for k in sorted(groups)}


def _shared_rounds(
    base: dict[int, np.ndarray], other: dict[int, np.ndarray]
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    keys = sorted(k for k in base.keys() & other.keys() if base[k].size and other[k].size)
    return [base[k] for k in keys], [other[k] for k in keys]


def _speedup_interval(
    base: dict[int, np.ndarray], other: dict[int, np.ndarray]
) -> SpeedupInterval | None:
    """From the rounds both have (two or more), else a block bootstrap of all samples."""
    a, b = _shared_rounds(base, other)
    if len(a) >= 2:
        return round_ratio_interval(a, b)
    if not base or not other:
        return None
    return block_bootstrap_speedup_interval(
        np.concatenate(list(base.values())), np.concatenate(list(other.values()))
    )


def _speedup_point(base: dict[int, np.ndarray], other: dict[int, np.ndarray]) -> float | None:
    """The point estimate of :func:`_speedup_interval` without its interval."""
    a, b = _shared_rounds(base, other)
    if len(a) >= 2:
        logs = [math.log(np.median(x) / np.median(y)) for x, y in zip(a, b)]
        return math.exp(sum(logs) / len(logs))
    if not base or not other:
        return None
    ma = float(np.median(np.concatenate(list(base.values()))))
    mb = float(np.median(np.concatenate(list(other.values()))))
    return ma / mb if ma > 0 and mb > 0 else None


def _flops_per_call(config: BenchmarkConfig | None) -> int | None:
    if config is None or config.model != "mlp":
        return None
    try:
        return config.flops_per_call()
    except ValueError:
        return None


def _summary_key(run: RunResult) -> tuple[Any, ...]:
    """What the summary depends on, cheaply: it changes whenever the summary can."""
    return (
        run.status,
        run.config,
        tuple(
            (name, v.status, len(v.samples), v.compile_s, v.allclose, v.error, v.cudagraph_record_ms)
            for name, v in run.variants.items()
        ),
    )


def summarize(run: RunResult) -> list[SummaryRow]:
    """The summary table of a run, computed once per state of the run and kept.

    A large run's rows take seconds (the intervals resample); the files, the
    CLI and the window all ask for them at the end of a run.
    """
    key = _summary_key(run)
    cached = run._summary
    if cached is not None and cached[0] == key:
        return list(cached[1])
    rows = _compute_summary(run)
    run._summary = (key, rows)
    return list(rows)


def _compute_summary(run: RunResult) -> list[SummaryRow]:
    """The summary table of a run, computed from its samples and diagnostics."""
    base = run.baseline
    base_ms = base.samples.measured_wall_ms() if base is not None else np.array([])
    base_stats = latency_stats(base_ms) if base_ms.size else None
    base_groups = _round_groups(base.samples) if base is not None else {}
    base_device = _round_groups(base.samples, device=True) if base is not None else {}
    batch = run.config.batch_size if run.config is not None else None
    counted = run.measurement.get("flops_per_call")
    flops = counted if isinstance(counted, int) and counted > 0 else _flops_per_call(run.config)
    groups = {name: _round_groups(v.samples) for name, v in run.variants.items()}
    checks: dict[str, SampleChecks | None] = {
        name: sample_checks(list(g.values())) for name, g in groups.items()
    }
    intervals: dict[str, SpeedupInterval | None] = {
        name: _speedup_interval(base_groups, g)
        for name, g in groups.items()
        if name != "eager" and base_stats is not None
    }
    floor = noise_floor(intervals.get(AA_CONTROL))
    rows = []
    for v in run.variants.values():
        st = v.stats()
        dst = v.device_stats()
        own = checks.get(v.name)
        interval = intervals.get(v.name)
        speedup = lo = hi = be = None
        dev_speedup = dev_lo = dev_hi = None
        verdict: Verdict | None = None
        if st is not None and base_stats is not None:
            if v.name == "eager":
                speedup = lo = hi = 1.0
                if dst is not None:
                    dev_speedup = dev_lo = dev_hi = 1.0
            else:
                if interval is not None:
                    speedup, lo, hi = interval.point, interval.lo, interval.hi
                dev = _speedup_interval(base_device, _round_groups(v.samples, device=True))
                if dev is not None:
                    dev_speedup, dev_lo, dev_hi = dev.point, dev.lo, dev.hi
        if v.name != "eager" and base is not None:
            verdict = judge(
                v.name,
                status=str(v.status),
                error=v.error,
                allclose=v.allclose,
                correctness_problems=list((v.checks or {}).get("problems") or []),
                interval=interval,
                checks=own,
                baseline_checks=checks.get("eager"),
                floor=floor,
            )
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
            if isinstance(batch, int):
                throughput = batch / (st.median / 1000.0)
            if flops:
                tflops = float(flops) / (st.median / 1000.0) / 1e12
        rows.append(
            SummaryRow(
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
                noisy=bool(st.noisy) if st else False,
                error=v.error,
                pipelined_ms=v.pipelined_ms,
                device_speedup=dev_speedup,
                device_speedup_lo=dev_lo,
                device_speedup_hi=dev_hi,
                rounds=len(groups[v.name]),
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
                noise_floor_pct=floor * 100.0 if floor is not None else None,
                verdict=str(verdict.kind) if verdict is not None else "",
                verdict_reason=verdict.reason if verdict is not None else "",
            )
        )
    return rows
