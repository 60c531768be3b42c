"""What one run measured: per-variant samples and diagnostics, and its summary."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..config import BenchmarkConfig, ConfigError
from ..protocol import (
    CompiledEvent,
    GpuStateEvent,
    RunStatus,
    VariantDoneEvent,
    VariantStatus,
)
from .stats import LatencyStats, bootstrap_speedup_interval, break_even_calls, latency_stats

#: Version of the run files (run.json, samples.csv, summary.csv, gpu_state.csv).
#: Whoever adds a field bumps it; the loader reads every older version.
SCHEMA_VERSION = 1

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
    try:
        return BenchmarkConfig.from_dict(data)
    except ConfigError:
        usable = {}
        for key, value in data.items():
            try:
                BenchmarkConfig.from_dict({key: value})
            except ConfigError:
                continue
            usable[key] = value
        return BenchmarkConfig.from_dict(usable)


@dataclass
class VariantSamples:
    """Per-iteration samples of one variant (warm-up and measured), in order."""

    iteration: list[int] = field(default_factory=list)
    phase: list[str] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)
    device_ms: list[float | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.iteration)

    def extend(
        self,
        first_iteration: int,
        phase: str,
        wall_ms: list[float],
        device_ms: list[float | None] | None,
    ) -> None:
        n = len(wall_ms)
        self.iteration.extend(range(first_iteration, first_iteration + n))
        self.phase.extend([phase] * n)
        self.wall_ms.extend(float(v) for v in wall_ms)
        self.device_ms.extend(device_ms if device_ms is not None else [None] * n)

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

    def apply_done(self, event: VariantDoneEvent) -> None:
        self.recompiles = event.recompiles
        self.recompiles_in_window = event.recompiles_in_window
        self.peak_memory_bytes = event.peak_memory_bytes
        self.memory_kind = event.memory_kind
        self.max_abs_error = event.max_abs_error
        self.max_rel_error = event.max_rel_error
        self.allclose = event.allclose
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

    def variant(self, name: str) -> VariantResult:
        if name not in self.variants:
            self.variants[name] = VariantResult(name=name)
        return self.variants[name]

    @property
    def baseline(self) -> VariantResult | None:
        return self.variants.get("eager")

    def best_speedup(self) -> float | None:
        """Eager median / the fastest compiled variant's median (no interval: cheap for lists)."""
        base = self.baseline
        base_stats = base.stats() if base is not None else None
        if base_stats is None:
            return None
        best = None
        for name, v in self.variants.items():
            st = v.stats() if name != "eager" else None
            if st is not None and st.median > 0:
                s = base_stats.median / st.median
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
            f"MLP {c.layers} · batch {c.batch_size} · "
            f"{c.dtype} · {self.environment.get('device', c.device)}"
        )


@dataclass(frozen=True)
class SummaryRow:
    """One row of the summary table (and of summary.csv)."""

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

    @classmethod
    def fields(cls) -> list[str]:
        return list(cls.__dataclass_fields__)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _flops_per_call(config: BenchmarkConfig | None) -> int | None:
    if config is None:
        return None
    try:
        return config.flops_per_call()
    except ValueError:
        return None


def summarize(run: RunResult) -> list[SummaryRow]:
    """The summary table of a run, computed from its samples and diagnostics."""
    base = run.baseline
    base_ms = base.samples.measured_wall_ms() if base is not None else np.array([])
    base_stats = latency_stats(base_ms) if base_ms.size else None
    batch = run.config.batch_size if run.config is not None else None
    flops = _flops_per_call(run.config)
    rows = []
    for v in run.variants.values():
        st = v.stats()
        dst = v.device_stats()
        speedup = lo = hi = be = None
        if st is not None and base_stats is not None:
            speedup = base_stats.median / st.median if st.median > 0 else None
            if v.name == "eager":
                lo = hi = speedup
            else:
                interval = bootstrap_speedup_interval(base_ms, v.samples.measured_wall_ms())
                if interval is not None:
                    lo, hi = interval
                be = break_even_calls(v.compile_s, base_stats.median, st.median)
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
            )
        )
    return rows
