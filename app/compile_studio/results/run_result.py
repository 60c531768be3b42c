"""What one run measured: per-variant samples and diagnostics, and its summary.

Longer than most modules, on purpose: the run's data and its summary rows are
one unit; the statistics live in stats.py and the verdict in verdict.py.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from ..config import AA_CONTROL, AS_GIVEN, BenchmarkConfig, ConfigError
from ..protocol import (
    CompiledEvent,
    GpuStateEvent,
    Phase,
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
    floor_subtracted_speedup,
    latency_stats,
    round_ratio_interval,
    sample_checks,
)
from .verdict import Verdict, VerdictKind, harness_note, judge, noise_floor

#: Version of the run files (run.json, samples.csv, summary.csv, gpu_state.csv).
#: Whoever adds a field bumps it; the loader reads every older version.
SCHEMA_VERSION = 2
#: 2: samples.csv has a ``round`` column; run.json has ``measurement`` and each
#:    variant's ``checks``, ``cudagraphs``, ``pipelined_ms``, ``clock``.

#: Version of the summary stored in run.json (its rows' fields and how they are computed).
#: A stored summary of another version, or whose rows do not have exactly the
#: fields of :class:`SummaryRow`, is computed again from the samples when read.
SUMMARY_VERSION = 2
#: 2: ``floor_speedup``; a verdict names the harness floor where it is a sizeable share of a median.

GPU_STATE_COLUMNS = ["t_s", "gpu", "variant", "iteration", "sm_clock_mhz", "temperature_c", "power_w"]


def batch_text(config: BenchmarkConfig, measured: int | None = None, read_factory: bool = False) -> str:
    """``batch 64``; a custom model's batch unmeasured is the factory's, in words.

    ``read_factory`` (the user's own form only, never a received file): a factory
    that declares ``batch_size`` takes the form's batch, read from its source.
    """
    if measured is not None:
        return f"batch {measured}"
    if config.model == "custom" and not (read_factory and config.factory_takes("batch_size")):
        return "the factory's batch"
    return f"batch {config.batch_size}"


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def plain_text(text: str, limit: int = 300) -> str:
    """``text`` without control or bidi characters, at most ``limit`` long (for terminals)."""
    return _CONTROL.sub(" ", text[: limit * 2])[:limit]


def _input_text(item: object) -> str:
    if not isinstance(item, dict):
        return "?"
    shape = item.get("shape")
    if isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        dims = "×".join(str(d) for d in shape[:8]) + ("×…" if len(shape) > 8 else "")
        dtype = item.get("dtype")
        return f"{dims or 'scalar'} {plain_text(dtype, 12)}" if isinstance(dtype, str) else dims or "scalar"
    kind = item.get("type")
    return plain_text(kind, 40) if isinstance(kind, str) else "?"


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


#: The phases a sample can be in, by code (the ``phase`` column of :class:`VariantSamples`).
PHASE_NAMES: tuple[str, ...] = tuple(str(p) for p in Phase)
_PHASE_CODE = {name: code for code, name in enumerate(PHASE_NAMES)}
_MEASURE = _PHASE_CODE[str(Phase.MEASURE)]
#: ``round`` of a sample without one (warm-up, files without rounds)
NO_ROUND = -1


class VariantSamples:
    """Per-iteration samples of one variant (warm-up and measured), in order.

    Kept as growable numpy columns (a million calls take ~30 MB, not a Python
    object per value): :meth:`wall_array` and the other ``*_array`` methods
    give views without copying; ``iteration``, ``phase``, ``wall_ms``,
    ``device_ms`` and ``round`` give the columns as lists (None where a
    sample has no device time or round). What is derived from the samples
    (statistics, round groups) is kept per length by :meth:`cached`.
    """

    _COLUMNS = (("_iteration", np.int64), ("_phase", np.int8), ("_wall", np.float64),
                ("_device", np.float64), ("_round", np.int64))

    def __init__(self, capacity: int = 0) -> None:
        self.n = 0
        self._iteration: np.ndarray = np.empty(capacity, dtype=np.int64)
        self._phase: np.ndarray = np.empty(capacity, dtype=np.int8)
        self._wall: np.ndarray = np.empty(capacity, dtype=np.float64)
        self._device: np.ndarray = np.empty(capacity, dtype=np.float64)
        self._round: np.ndarray = np.empty(capacity, dtype=np.int64)
        self._cache: dict[str, tuple[int, Any]] = {}

    def __len__(self) -> int:
        return self.n

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VariantSamples):
            return NotImplemented
        return self.n == other.n and all(
            np.array_equal(getattr(self, c)[: self.n], getattr(other, c)[: other.n], equal_nan=c in ("_wall", "_device"))
            for c, _ in self._COLUMNS
        )

    def __repr__(self) -> str:
        return f"VariantSamples(n={self.n})"

    def _reserve(self, extra: int) -> None:
        need = self.n + extra
        cap = len(self._wall)
        if need <= cap:
            return
        cap = max(need, 2 * cap, 256)
        for name, dtype in self._COLUMNS:
            new = np.empty(cap, dtype=dtype)
            new[: self.n] = getattr(self, name)[: self.n]
            setattr(self, name, new)

    def extend(
        self,
        first_iteration: int,
        phase: str,
        wall_ms: Sequence[float] | np.ndarray,
        device_ms: Sequence[float | None] | np.ndarray | None,
        round_index: int | None = None,
    ) -> None:
        """Append consecutive iterations of one phase (and round)."""
        n = len(wall_ms)
        if n == 0:
            return
        device: np.ndarray | float = np.nan
        if device_ms is not None:
            device = np.array(
                [np.nan if d is None else d for d in device_ms]
                if not isinstance(device_ms, np.ndarray) else device_ms,
                dtype=np.float64,
            )
        self.append_arrays(
            np.arange(first_iteration, first_iteration + n, dtype=np.int64),
            self._code(phase),
            np.asarray(wall_ms, dtype=np.float64),
            device,
            NO_ROUND if round_index is None else round_index,
        )

    def append_arrays(
        self,
        iteration: np.ndarray,
        phase: np.ndarray | int,
        wall_ms: np.ndarray,
        device_ms: np.ndarray | float,
        round_index: np.ndarray | int,
    ) -> None:
        """Append columns as arrays (phase as codes of PHASE_NAMES, NaN: no device time, NO_ROUND: none);
        a scalar phase, device time or round stands for the whole stretch."""
        n = len(wall_ms)
        if n == 0:
            return
        self._reserve(n)
        a, b = self.n, self.n + n
        self._iteration[a:b] = iteration
        self._phase[a:b] = phase
        self._wall[a:b] = wall_ms
        self._device[a:b] = device_ms
        self._round[a:b] = round_index
        self.n = b

    @staticmethod
    def _code(phase: str) -> int:
        try:
            return _PHASE_CODE[str(phase)]
        except KeyError:
            raise ValueError(f"unknown phase {phase!r}") from None

    # -- the columns as arrays (views) -----------------------------------------------------
    def iteration_array(self) -> np.ndarray:
        return self._iteration[: self.n]

    def phase_array(self) -> np.ndarray:
        """Phase codes (indexes into PHASE_NAMES)."""
        return self._phase[: self.n]

    def wall_array(self) -> np.ndarray:
        return self._wall[: self.n]

    def device_array(self) -> np.ndarray:
        """Device ms (NaN where a sample has none)."""
        return self._device[: self.n]

    def round_array(self) -> np.ndarray:
        """Round indexes (NO_ROUND where a sample has none)."""
        return self._round[: self.n]

    # -- the columns as lists --------------------------------------------------------------
    @property
    def iteration(self) -> list[int]:
        return self.iteration_array().tolist()

    @property
    def phase(self) -> list[str]:
        return np.asarray(PHASE_NAMES, dtype=object)[self.phase_array()].tolist()

    @property
    def wall_ms(self) -> list[float]:
        return self.wall_array().tolist()

    @property
    def device_ms(self) -> list[float | None]:
        d = self.device_array()
        return [None if v != v else v for v in d.tolist()]

    @property
    def round(self) -> list[int | None]:
        return [None if r == NO_ROUND else r for r in self.round_array().tolist()]

    # -- derived ---------------------------------------------------------------------------
    def cached(self, what: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, kept until more samples arrive."""
        hit = self._cache.get(what)
        if hit is not None and hit[0] == self.n:
            return hit[1]
        value = compute()
        self._cache[what] = (self.n, value)
        return value

    def measured_mask(self) -> np.ndarray:
        return self.phase_array() == _MEASURE

    def round_groups(self, device: bool = False) -> dict[int, np.ndarray]:
        """Measured samples (wall or device ms) by round index, in time order within each round.

        Samples without a round (older files) form round 0.
        """

        def compute() -> dict[int, np.ndarray]:
            values = self.device_array() if device else self.wall_array()
            mask = self.measured_mask()
            if device:
                mask &= ~np.isnan(values)
            vals = values[mask]
            rounds = np.maximum(self.round_array()[mask], 0)
            if rounds.size == 0:
                return {}
            if rounds.min() == rounds.max():
                return {int(rounds[0]): vals.copy()}
            return {int(k): vals[rounds == k] for k in np.unique(rounds)}

        return self.cached("device_groups" if device else "groups", compute)  # type: ignore[no-any-return]

    def measured_rounds(self) -> list[np.ndarray]:
        """The measured wall times of each round, in round order (one group without rounds)."""
        groups = self.round_groups()
        return [groups[k] for k in sorted(groups)]

    def measured_wall_ms(self) -> np.ndarray:
        return self.wall_array()[self.measured_mask()]

    def measured_device_ms(self) -> np.ndarray | None:
        d = self.device_array()[self.measured_mask()]
        d = d[~np.isnan(d)]
        return d if d.size else None

    def count(self, phase: str) -> int:
        return int(np.count_nonzero(self.phase_array() == self._code(phase)))


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
        """Statistics of the measured wall times (kept until more samples arrive)."""
        s = self.samples
        return s.cached("stats", lambda: latency_stats(s.measured_wall_ms()))  # type: ignore[no-any-return]

    def device_stats(self) -> LatencyStats | None:
        def compute() -> LatencyStats | None:
            d = self.samples.measured_device_ms()
            return latency_stats(d) if d is not None else None

        return self.samples.cached("device_stats", compute)  # type: ignore[no-any-return]

    def meta_dict(self) -> dict[str, Any]:
        """Everything but the samples (those live in samples.csv)."""
        return {
            f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self) if f.name != "samples"
        }

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
    #: the summary rows and the state they were computed for (see :func:`summarize`);
    #: rows read back from run.json or the summary cache are kept here too
    _summary: tuple[Any, list[SummaryRow]] | None = field(
        default=None, compare=False, repr=False
    )
    #: each variant's number of samples the summary in ``_summary`` was computed from
    summary_counts: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    #: False for a run listed from its run.json alone (its samples are read on demand)
    samples_loaded: bool = field(default=True, compare=False)
    #: where a summary computed for this run is cached (runs of older versions; see store.summary_of)
    summary_cache_path: Path | None = field(default=None, compare=False, repr=False)
    #: reads the samples of a run listed without them (set by the run store)
    samples_loader: Callable[[RunResult], None] | None = field(
        default=None, compare=False, repr=False
    )
    #: what the run was read from: its folder, or the file when that is not a run folder's
    #: own run.json or samples.csv (an exported pair, a lone CSV); None for a run not read from disk
    source: Path | None = field(default=None, compare=False, repr=False)

    def variant(self, name: str) -> VariantResult:
        if name not in self.variants:
            self.variants[name] = VariantResult(name=name)
        return self.variants[name]

    @property
    def baseline(self) -> VariantResult | None:
        return self.variants.get("eager")

    def require_samples(self) -> None:
        """Read the samples of a run listed without them (nothing when they are here)."""
        if not self.samples_loaded and self.samples_loader is not None:
            self.samples_loader(self)

    def known_summary(self) -> list[SummaryRow] | None:
        """The summary rows if known without computing: read back from disk, or computed
        for the run as it is now; None otherwise."""
        cached = self._summary
        if cached is None:
            return None
        if not self.samples_loaded or cached[0] == _summary_key(self):
            return list(cached[1])
        return None

    def set_summary(self, rows: list[SummaryRow], counts: dict[str, int] | None = None) -> None:
        """Rows read back for this run (stored in run.json, or cached): :func:`summarize` returns them.

        ``counts``: each variant's number of samples they were computed from.
        """
        self._summary = (_summary_key(self) if self.samples_loaded else None, list(rows))
        self.summary_counts = dict(counts) if counts is not None else {
            name: len(v.samples) for name, v in self.variants.items()
        }

    def last_summary(self) -> list[SummaryRow]:
        """The rows :func:`summarize` gave last, even if samples came since ([] when none yet)."""
        return list(self._summary[1]) if self._summary is not None else []

    def best_speedup(self) -> float | None:
        """The fastest correct compiled variant's speedup point estimate (no interval: cheap for lists).

        The same point estimate as the summary's: the geometric mean of the
        per-round ratios of medians, or the ratio of medians with one round.
        The A/A control and variants with a wrong output are left out. Read
        from the summary when it is known (stored in run.json), else from the
        samples; None for a run listed without samples or summary.
        """
        rows = self.known_summary()
        if rows is not None:
            found = [
                r.speedup for r in rows
                if r.name not in ("eager", AA_CONTROL) and r.allclose is not False
                and r.speedup is not None
            ]
            return max(found) if found else None
        base = self.baseline
        if base is None or not self.samples_loaded:
            return None
        base_groups = base.samples.round_groups()
        best = None
        for name, v in self.variants.items():
            if name in ("eager", AA_CONTROL) or v.allclose is False:
                continue
            s = _speedup_point(base_groups, v.samples.round_groups())
            if s is not None:
                best = s if best is None else max(best, s)
        return best

    @property
    def label(self) -> str:
        """The user's name for the run ('' when none)."""
        return self.config.label.strip() if self.config is not None else ""

    def batch(self) -> int | None:
        """The batch measured: the first input's leading size as the worker reported it.

        A run that predates that report falls back on the configuration for a
        built-in model; a custom model's batch is its factory's, unknown then.
        """
        found = self.measurement.get("batch_size") if isinstance(self.measurement, dict) else None
        if isinstance(found, int) and not isinstance(found, bool) and found >= 1:
            return found
        c = self.config
        if c is None or c.model == "custom":
            return None
        return c.batch_size

    def dtype_text(self) -> str:
        """The dtype the model ran in: ``bf16``; ``bf16 (as given)`` for a factory's own dtype."""
        c = self.config
        ran = self.measurement.get("model_dtype") if isinstance(self.measurement, dict) else None
        chosen = c.dtype if c is not None else ""
        if isinstance(ran, str) and ran:
            ran = ran[:12]
            if chosen == AS_GIVEN:
                return f"{ran} (as given)"
            return ran if ran == chosen or (chosen == "tf32" and ran == "fp32") else f"{chosen} (model {ran})"
        return "as given" if chosen == AS_GIVEN else chosen or "?"

    def model_notes(self) -> list[str]:
        """The model as measured, in lines: its inputs, any dtype conversion, its randomness.

        From the worker's run information (plain text: control characters dropped).
        """
        m = self.measurement if isinstance(self.measurement, dict) else {}
        out: list[str] = []
        inputs = m.get("inputs")
        if isinstance(inputs, list) and inputs:
            parts = [_input_text(x) for x in inputs[:8]]
            more = f" and {len(inputs) - 8} more" if len(inputs) > 8 else ""
            out.append("inputs: " + "; ".join(parts) + more)
        conversions = m.get("conversions")
        if isinstance(conversions, list):
            out += [plain_text(c) for c in conversions[:4] if isinstance(c, str) and c]
        randomness = m.get("randomness")
        if isinstance(randomness, str) and randomness:
            out.append(plain_text(randomness))
        return out

    def title(self) -> str:
        c = self.config
        if c is None:
            return f"samples only · {self.environment.get('device', '?')}"
        batch = self.batch()
        return (
            f"{c.model_text()} · {batch_text(c, batch)} · "
            f"{self.dtype_text()} · {self.environment.get('device', c.device)}"
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
    """Measured samples by round (see :meth:`VariantSamples.round_groups`)."""
    return samples.round_groups(device)


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
        variant.samples._cache.pop(what, None)
        got = variant.samples.cached(what, compute)
    return got[1]  # type: ignore[no-any-return]


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
    CLI and the window all ask for them at the end of a run. What each
    variant's row needs from its samples (round groups, checks, statistics,
    the interval against eager) is kept with the samples until more arrive, so
    a variant that has ended is not computed again when another one ends. A
    run read back from disk returns the rows stored with it (see
    :meth:`RunResult.set_summary`).
    """
    if not run.samples_loaded:
        if run._summary is not None:
            return list(run._summary[1])
        run.require_samples()
    key = _summary_key(run)
    cached = run._summary
    if cached is not None and cached[0] == key:
        return list(cached[1])
    rows = _compute_summary(run)
    run._summary = (key, rows)
    run.summary_counts = {name: len(v.samples) for name, v in run.variants.items()}
    return list(rows)


def _compute_summary(run: RunResult) -> list[SummaryRow]:
    """The summary table of a run, computed from its samples and diagnostics."""
    base = run.baseline
    base_stats = base.stats() if base is not None else None
    base_device = _round_groups(base.samples, device=True) if base is not None else {}
    batch = run.batch()
    counted = run.measurement.get("flops_per_call")
    flops = counted if isinstance(counted, int) and counted > 0 else _flops_per_call(run.config)
    groups = {name: _round_groups(v.samples) for name, v in run.variants.items()}
    checks: dict[str, SampleChecks | None] = {
        name: _checks_of(v.samples) for name, v in run.variants.items()
    }
    intervals: dict[str, SpeedupInterval | None] = {
        name: _interval_against(base, v)
        for name, v in run.variants.items()
        if name != "eager" and base_stats is not None and base is not None
    }
    floor = noise_floor(intervals.get(AA_CONTROL))
    harness = _harness_floor_ms(run)
    rows = []
    for v in run.variants.values():
        st = v.stats()
        floor_speedup = None
        if st is not None and base_stats is not None and harness is not None:
            floor_speedup = floor_subtracted_speedup(base_stats.median, st.median, harness)
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
                dev = (
                    _interval_against(base, v, device=True) if base is not None and base_device else None
                )
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
                harness=harness_note(
                    base_stats.median if base_stats is not None else None,
                    st.median if st is not None else None,
                    harness,
                    floor_speedup,
                ),
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
                floor_speedup=floor_speedup,
            )
        )
    return rows


def _harness_floor_ms(run: RunResult) -> float | None:
    """The run's harness floor (``measurement.harness_floor_ms``); None where absent or not a time."""
    value = run.measurement.get("harness_floor_ms") if isinstance(run.measurement, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value > 0 else None
