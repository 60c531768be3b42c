"""What one run measured: its config, environment and status, and each variant's results.

The samples are in samples.py, the summary table in summary.py.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ...core.config import AS_GIVEN, BenchmarkConfig, ConfigError
from ...core.protocol import (
    CompiledEvent,
    GpuStateEvent,
    RunStatus,
    VariantDoneEvent,
    VariantStatus,
)
from ...core.variants import is_eager

# The ``X as X`` imports are re-exported for store.py, sweep_store.py and formatting.py.
from ..analysis.samples import NO_ROUND as NO_ROUND
from ..analysis.samples import PHASE_NAMES as PHASE_NAMES
from ..analysis.samples import VariantSamples
from ..analysis.stats import LatencyStats, latency_stats, speedup_point
from ..analysis.summary_row import SummaryRow

#: Version of the run files (run.json, samples.csv, summary.csv, gpu_state.csv).
#: Whoever adds a field bumps it; the loader reads every older version.
SCHEMA_VERSION = 2
#: 2: samples.csv has a ``round`` column; run.json has ``measurement`` and each
#:    variant's ``checks``, ``cudagraphs``, ``pipelined_ms``, ``clock``.

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
    """``4×32 int64``; a keyword input with its name: ``input_ids 4×32 int64``."""
    if not isinstance(item, dict):
        return "?"
    name = item.get("name")
    if isinstance(name, str) and name:
        rest = _input_text({k: v for k, v in item.items() if k != "name"})
        return f"{plain_text(name, 40)} {rest}"
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
    #: functions Dynamo gave up on (they ran eagerly), and why
    frames_skipped: int | None = None
    skip_reasons: list[str] = field(default_factory=list)
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
    #: median ms per call with no thread pinned (a pinned run's user's-process figure)
    unpinned_ms: float | None = None
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
        self.frames_skipped = event.frames_skipped
        self.skip_reasons = list(event.skip_reasons)
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
        self.unpinned_ms = event.unpinned_ms
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

    def summary_state(self) -> tuple[Any, ...]:
        """What the summary depends on, cheaply: it changes whenever the summary can."""
        return (
            self.status,
            self.config,
            tuple(
                (name, v.status, len(v.samples), v.compile_s, v.allclose, v.error, v.cudagraph_record_ms)
                for name, v in self.variants.items()
            ),
        )

    def known_summary(self) -> list[SummaryRow] | None:
        """The summary rows if known without computing: read back from disk, or computed
        for the run as it is now; None otherwise."""
        cached = self._summary
        if cached is None:
            return None
        if not self.samples_loaded or cached[0] == self.summary_state():
            return list(cached[1])
        return None

    def set_summary(self, rows: list[SummaryRow], counts: dict[str, int] | None = None) -> None:
        """Rows read back for this run (stored in run.json, or cached): :func:`summarize` returns them.

        ``counts``: each variant's number of samples they were computed from.
        """
        self._summary = (self.summary_state() if self.samples_loaded else None, list(rows))
        self.summary_counts = dict(counts) if counts is not None else {
            name: len(v.samples) for name, v in self.variants.items()
        }

    def forget_summary(self) -> None:
        """No summary is known any more (the samples were read anew)."""
        self._summary = None

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
                if not is_eager(r.name) and r.allclose is not False
                and r.speedup is not None
            ]
            return max(found) if found else None
        base = self.baseline
        if base is None or not self.samples_loaded:
            return None
        base_groups = base.samples.round_groups()
        best = None
        for name, v in self.variants.items():
            if is_eager(name) or v.allclose is False:
                continue
            s = speedup_point(base_groups, v.samples.round_groups())
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
            out.append("inputs: " + ", ".join(parts) + more)
        conversions = m.get("conversions")
        if isinstance(conversions, list):
            out += [plain_text(c) for c in conversions[:4] if isinstance(c, str) and c]
        randomness = m.get("randomness")
        if isinstance(randomness, str) and randomness:
            out.append(plain_text(randomness))
        reference = m.get("reference_note")
        if isinstance(reference, str) and reference:
            out.append("reference: " + plain_text(reference, 500))
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
