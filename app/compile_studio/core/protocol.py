"""The worker protocol: typed JSON-lines events between a supervisor and the worker.

Request: one JSON object on the worker's stdin (a ``BenchmarkConfig``), then
optionally the line ``stop``. A worker started with ``--shape-sweep`` reads a
:class:`ShapeSweepRequest` instead (the config plus the batch sizes) and
replies with a ``shape_point`` event per mode × variant × batch size. Reply: one JSON object per line on stdout, each
with a ``type`` naming one of the event classes below. :func:`encode` and
:func:`decode` are the only places an event becomes text or comes back.
Statuses, phases and error kinds are enums with one spelling each; older
spellings found in saved files (``"completed"``) are read by ``parse``.

Pure Python; shared by every side (the worker, the supervisor, the results).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, TypeVar

#: Bumped whenever an event or the request changes incompatibly. The
#: supervisor refuses a worker that says another version in its ``hello``.
PROTOCOL_VERSION = 5

STOP_LINE = "stop"

#: A supervisor's answer to a ``turn`` event that pauses: ``drawn <block>`` on the worker's stdin.
DRAWN_WORD = "drawn"


def drawn_line(block: int) -> str:
    """The stdin line that answers the pause before timed block ``block``."""
    return f"{DRAWN_WORD} {int(block)}"


def _word_and_number(line: str, word: str) -> int | None:
    """The whole number of a ``<word> <n>`` stdin line; None for any other line."""
    first, _, rest = line.strip().partition(" ")
    if first != word:
        return None
    try:
        return int(rest)
    except ValueError:
        return None


def parse_drawn_line(line: str) -> int | None:
    """The block a ``drawn <block>`` line answers; None for any other line."""
    block = _word_and_number(line, DRAWN_WORD)
    return block if block is not None and block >= 0 else None

#: The worker flag of a run that needs no compile process started ahead (all eager, first
#: calls timed in the run, a shape sweep): the worker then starts none, wherever it runs.
NO_COMPILE_HOST_AHEAD_FLAG = "--no-compile-host-ahead"
#: ``--compile-hosts-ahead=N``: the worker starts N compile processes as it starts (1 without
#: it), so a run with N compiled variants finds them all imported by its first compile.
COMPILE_HOSTS_AHEAD_FLAG = "--compile-hosts-ahead"
#: At most this many are started ahead (each holds torch and Inductor imported: ~300 MiB).
MAX_COMPILE_HOSTS_AHEAD = 4


def _hosts_count(count: int) -> int:
    """``count`` compile processes ahead, within 0 and the maximum."""
    return max(0, min(int(count), MAX_COMPILE_HOSTS_AHEAD))


def compile_hosts_flag(count: int) -> str:
    """The worker flag that starts ``count`` compile processes ahead (at most the maximum)."""
    return f"{COMPILE_HOSTS_AHEAD_FLAG}={_hosts_count(count)}"


def compile_hosts_flags(count: int) -> tuple[str, ...]:
    """The flags of a worker that starts ``count`` compile processes ahead (what
    :func:`compile_hosts_ahead` reads back): none for one, the worker's default."""
    count = _hosts_count(count)
    if count == 0:
        return (NO_COMPILE_HOST_AHEAD_FLAG,)
    return () if count == 1 else (compile_hosts_flag(count),)


#: A line a worker may get before its config: ``hosts <n>`` (have n compile processes started
#: ahead, counting those started already; the window sends it to the worker it started ahead
#: when the form's compiled variants grow).
HOSTS_WORD = "hosts"


def hosts_line(count: int) -> str:
    """The stdin line that asks a waiting worker for ``count`` compile processes ahead."""
    return f"{HOSTS_WORD} {_hosts_count(count)}"


def parse_hosts_line(line: str) -> int | None:
    """The count a ``hosts <n>`` line asks for (at most the maximum); None for any other line."""
    count = _word_and_number(line, HOSTS_WORD)
    return None if count is None else _hosts_count(count)


def compile_hosts_ahead(argv: list[str]) -> int:
    """How many compile processes a worker started with ``argv`` starts ahead: 0 with
    NO_COMPILE_HOST_AHEAD_FLAG, the flag's count (0 to the maximum), else 1."""
    if NO_COMPILE_HOST_AHEAD_FLAG in argv:
        return 0
    count = 1
    for arg in argv:
        name, sep, value = arg.partition("=")
        if name == COMPILE_HOSTS_AHEAD_FLAG and sep:
            try:
                count = _hosts_count(int(value))
            except ValueError:
                count = 1
    return count

#: Seconds between a worker's ``heartbeat`` events (sent from a thread apart from the timing).
HEARTBEAT_S = 1.0
#: Samples are sent in batches at most this often (seconds).
SAMPLE_BATCH_S = 0.05

#: Environment variable naming the folder the user started in: the supervisor
#: starts the worker in a safe folder (nothing there to import by accident),
#: the worker changes back to this one once its imports are done.
WORKER_CWD_ENV = "COMPILE_STUDIO_WORKER_CWD"

_E = TypeVar("_E", bound="_Words")


class _Words(str, Enum):
    """A str enum: compares equal to its value, prints as its value."""

    def __str__(self) -> str:
        return str(self.value)

    @classmethod
    def parse(cls: type[_E], value: object, default: _E | None = None) -> _E:
        """The member for ``value`` (or one of its older spellings); ``default`` if unknown."""
        if isinstance(value, cls):
            return value
        text = str(value).strip().lower() if value is not None else ""
        text = _OLD_SPELLINGS.get(text, text)
        for member in cls:
            if member.value == text:
                return member
        if default is not None:
            return default
        raise ValueError(f"{value!r} is not a {cls.__name__}")


class RunStatus(_Words):
    """How a whole run ended (or that it has not)."""

    INCOMPLETE = "incomplete"
    COMPLETE = "complete"
    STOPPED = "stopped"
    FAILED = "failed"


class VariantStatus(_Words):
    """Where one variant of a run stands."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    STOPPED = "stopped"
    #: planned but never started (the run was stopped or failed before it)
    NOT_RUN = "not_run"


class Phase(_Words):
    """What a variant is doing: built, compiled (first call), warmed up, measured."""

    BUILD = "build"
    COMPILE = "compile"
    WARMUP = "warmup"
    MEASURE = "measure"
    #: run-level: the worker waits in a batch queue (Slurm) before it starts
    QUEUED = "queued"


class ErrorKind(_Words):
    """What kind of failure an ``error`` event reports."""

    OOM = "oom"
    COMPILE_FAILED = "compile_failed"
    BAD_CONFIG = "bad_config"
    DEVICE_UNAVAILABLE = "device_unavailable"
    INTERNAL = "internal"
    CRASHED = "crashed"
    PROTOCOL = "protocol"
    WRITE_FAILED = "write_failed"


#: Spellings written by earlier versions, read as today's.
_OLD_SPELLINGS = {"completed": "complete", "not run": "not_run"}

#: Error kinds that mean the configuration itself cannot run (usage errors).
CONFIG_ERROR_KINDS = (ErrorKind.BAD_CONFIG, ErrorKind.DEVICE_UNAVAILABLE)


@dataclass
class HelloEvent:
    """First line of every worker: its protocol version and the machine it runs on."""

    TYPE: ClassVar[str] = "hello"
    protocol: int
    app_version: str = ""
    pid: int = 0
    environment: dict[str, Any] = field(default_factory=dict)
    #: the worker's process group (a remote stop kills it through a second command)
    pgid: int = 0
    #: the machine the worker runs on
    host: str = ""
    #: the Slurm job and step the worker runs in (SLURM_JOB_ID, SLURM_STEP_ID)
    slurm_job_id: str | None = None
    slurm_step_id: str | None = None


@dataclass
class PhaseEvent:
    """A variant enters a phase; ``variant`` None is the run-level build phase."""

    TYPE: ClassVar[str] = "phase"
    variant: str | None
    phase: Phase
    iterations: int = 0
    device: str | None = None
    inductor_cache_dir: str | None = None
    #: words for a run-level phase (``queued on partition debug, reason: Resources``)
    detail: str | None = None


@dataclass
class SamplesEvent:
    """Consecutive per-iteration timings of one variant and phase."""

    TYPE: ClassVar[str] = "samples"
    variant: str
    phase: Phase
    first_iteration: int
    wall_ms: list[float]
    device_ms: list[float | None] | None = None
    #: the measurement round these samples belong to (None: warm-up)
    round: int | None = None
    #: timed calls: the monotonic clock (ns) at the first call's start, and each call's start in
    #: µs after it, so a supervisor on the same machine can tell which calls met its repaints
    clock_ns: int | None = None
    starts_us: list[int] | None = None


@dataclass
class CompiledEvent:
    """A compiled variant's first call: compile time and Dynamo's graph counts."""

    TYPE: ClassVar[str] = "compiled"
    variant: str
    compile_s: float
    first_call_ms: float
    graphs: int = 0
    graph_breaks: int = 0
    break_reasons: list[str] = field(default_factory=list)
    recompiles: int = 0
    #: ``isolated``: compile_s is a fresh process's first call; ``in_run``: this run's
    compile_timing: str = "in_run"
    #: functions Dynamo gave up on (run eagerly, no graph), e.g. one holding a GRU
    frames_skipped: int = 0
    #: why each was skipped, one line each
    skip_reasons: list[str] = field(default_factory=list)


@dataclass
class VariantDoneEvent:
    """A variant finished measuring: its diagnostics (the samples came before)."""

    TYPE: ClassVar[str] = "variant_done"
    variant: str
    status: VariantStatus = VariantStatus.DONE
    recompiles: int | None = None
    recompiles_in_window: int | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    allclose: bool | None = None
    tolerance: dict[str, float] = field(default_factory=dict)
    peak_memory_bytes: int | None = None
    memory_kind: str | None = None
    #: the correctness checks: rule, deviations, problems (see engine.checks)
    checks: dict[str, Any] = field(default_factory=dict)
    #: CUDA-graph variants: ``used``, ``skipped: why`` or ``not used: why``
    cudagraphs: str | None = None
    cudagraph_skips: list[str] = field(default_factory=list)
    cudagraph_record_ms: float | None = None
    #: ms per call of back-to-back calls with one synchronisation
    pipelined_ms: float | None = None
    #: median ms per call with every worker thread placed by the system, as in a user's own
    #: program (a run whose timing thread was pinned; None otherwise)
    unpinned_ms: float | None = None
    #: clock readings at the edges of the timed windows
    clock: dict[str, Any] = field(default_factory=dict)
    #: the pauses before this variant's timed blocks: blocks, waited_ms, wait_max_ms,
    #: unanswered (see :class:`TurnEvent`)
    turns: dict[str, Any] = field(default_factory=dict)


@dataclass
class TurnEvent:
    """Timed calls come in blocks of about ``block_s``; between two the worker takes turns.

    ``state`` ``pause``: the worker is about to time block ``block`` of ``variant`` and
    waits, at most ``cap_ms``, for the line ``drawn <block>`` (a window draws first, other
    supervisors answer at once). ``end``: the timed calls are over until the next ``pause``
    (the worker waits for nothing). ``sent_ns``: the worker's monotonic clock when it
    paused, so a supervisor on the same machine knows whether the pause is still on.
    """

    TYPE: ClassVar[str] = "turn"
    block: int
    state: str = "pause"
    variant: str = ""
    sent_ns: int = 0
    cap_ms: float = 0.0


@dataclass
class RunInfoEvent:
    """How this run measures: the harness floor, the timer, and what the checks use."""

    TYPE: ClassVar[str] = "run_info"
    harness_floor_ms: float
    harness_floor_device_ms: float | None = None
    timer: str = "host"
    memory_kind: str = ""
    clock_source: str = ""
    torch_threads: int | None = None
    cache_flush_bytes: int | None = None
    correctness_rule: str = ""
    #: the measured GPU's UUID, as NVML and torch both name it (GPU state readings are its)
    gpu_uuid: str | None = None
    #: FLOPs of one call, counted by torch's FlopCounterMode on the model itself
    flops_per_call: int | None = None
    #: where the timing thread ran: "timing thread alone on CPU 1 (…)", or why it was not pinned
    cpu_pinning: str | None = None
    #: each input as measured: {"shape": [4, 16], "dtype": "bf16"}, or {"type": name} for a non-tensor
    inputs: list[dict[str, Any]] | None = None
    #: the leading dimension of the first tensor input with one or more dimensions, as measured
    batch_size: int | None = None
    #: the dtype the model's floating parameters ran in (short name; the lowest precision if mixed)
    model_dtype: str | None = None
    #: every conversion the app made of the factory's model or inputs, one sentence each
    conversions: list[str] = field(default_factory=list)
    #: None for a model whose output is the same call after call; else a sentence: how it is random
    #: and how outputs were compared
    randomness: str | None = None
    #: Inductor's compile_threads in the worker (sized from the cores it may use); None: unknown
    compile_threads: int | None = None
    #: what outputs were checked against: "fp64", or "eager fp32" (the model could not run in fp64)
    reference: str = "fp64"
    #: why the reference is not fp64, in a sentence; None when it is
    reference_note: str | None = None


@dataclass
class GpuStateEvent:
    """NVML readings (columns of equal length), each tagged with the latest sample."""

    TYPE: ClassVar[str] = "gpu_state"
    gpu: int | None
    t_s: list[float]
    variant: list[str | None]
    iteration: list[int | None]
    sm_clock_mhz: list[float | None]
    temperature_c: list[float | None]
    power_w: list[float | None]


@dataclass
class HeartbeatEvent:
    """The worker is alive: sent every :data:`HEARTBEAT_S` after ``hello``, whatever it is doing."""

    TYPE: ClassVar[str] = "heartbeat"
    #: seconds since the worker started beating
    t_s: float = 0.0


@dataclass
class WarningEvent:
    """Something the user should know that does not stop the run."""

    TYPE: ClassVar[str] = "warning"
    message: str
    variant: str | None = None


@dataclass
class ErrorEvent:
    """A failure of one variant (``variant`` set) or of the whole run."""

    TYPE: ClassVar[str] = "error"
    kind: ErrorKind
    message: str
    variant: str | None = None
    traceback: str | None = None
    #: for a configuration the worker refused: ``[{"field": …, "message": …}]``
    problems: list[dict[str, str]] | None = None

    @property
    def is_config_error(self) -> bool:
        return self.variant is None and self.kind in CONFIG_ERROR_KINDS


@dataclass
class DoneEvent:
    """Last line of a run: complete, stopped or failed."""

    TYPE: ClassVar[str] = "done"
    status: RunStatus
    reason: str | None = None
    forced: bool = False


@dataclass
class DiagnosticsEvent:
    """Why a variant is as fast as it is, collected after its timed window (engine.diagnostics).

    ``why`` holds the figures (profile, compile phases, graph breaks,
    recompiles), ``trace`` the profiled calls as Chrome-trace JSON text,
    ``code`` Inductor's output code per compiled graph (``path``, ``code``).
    """

    TYPE: ClassVar[str] = "diagnostics"
    variant: str
    why: dict[str, Any] = field(default_factory=dict)
    trace: str | None = None
    code: list[dict[str, str]] = field(default_factory=list)


#: The worker flag of a shape sweep (its request line is a :class:`ShapeSweepRequest`).
SHAPE_SWEEP_FLAG = "--shape-sweep"
#: The dynamic modes a shape sweep compares, in the order it runs them.
SHAPE_MODES = ("false", "auto", "true")
#: Most batch sizes in one shape sweep.
MAX_SHAPE_BATCHES = 64


#: A shape sweep's axis: ``input_ids:1`` (a keyword input), ``0:1`` (positional input 0).
SHAPE_AXIS = re.compile(r"([A-Za-z_][A-Za-z0-9_]{0,63}|[0-9]{1,2}):([0-9]{1,2})")


def request_data(cls: type, text: str, what: str) -> dict[str, Any]:
    """The keys of a ``what`` request line for the dataclass ``cls``; ValueError saying why
    it is not one (not JSON, no config object, keys ``cls`` does not have)."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise ValueError(f"the {what} request is not valid JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise ValueError(f"the {what} request holds no config object")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"the {what} request has unknown keys: {', '.join(unknown)[:100]}")
    return data


@dataclass
class ShapeSweepSettings:
    """How a shape sweep runs its config: batch sizes, dynamic modes, recompile limit, repeats.

    ``recompile_limit`` (0: torch's own) is set as Dynamo's recompile limit in
    the worker; ``repeats`` timed calls per point give its median. Declared
    once for the request (:class:`ShapeSweepRequest`) and the record kept of
    the sweep (``results.records.shape_record.ShapeSweepRecord``).
    """

    batches: list[int]
    modes: list[str] = field(default_factory=lambda: list(SHAPE_MODES))
    recompile_limit: int = 0
    repeats: int = 5
    #: "" (the batch: axis 0 of every input), or ``NAME:DIM``: the sizes are of axis DIM of the
    #: input NAME (a keyword input's name, or a positional input's index), see SHAPE_AXIS
    axis: str = ""

    def settings(self) -> dict[str, Any]:
        """These fields by name (lists copied): a request from a record, or a record from a request."""
        return {f.name: copy.copy(getattr(self, f.name)) for f in dataclasses.fields(ShapeSweepSettings)}


@dataclass
class ShapeSweepRequest(ShapeSweepSettings):
    """What a shape-sweep worker runs: the config (its variants, model, device) at each batch size."""

    config: dict[str, Any] = field(kw_only=True)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    def problems(self) -> list[tuple[str, str]]:
        """(field, message) for each thing wrong beyond the config itself."""
        out: list[tuple[str, str]] = []
        if not self.batches:
            out.append(("batches", "give at least one batch size"))
        elif len(self.batches) > MAX_SHAPE_BATCHES:
            out.append(("batches", f"at most {MAX_SHAPE_BATCHES} batch sizes"))
        if any(isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= 1_048_576 for b in self.batches):
            out.append(("batches", "each batch size is a whole number 1–1,048,576"))
        elif len(set(self.batches)) != len(self.batches):
            out.append(("batches", "a batch size is listed twice"))
        if not self.modes or any(m not in SHAPE_MODES for m in self.modes) or len(set(self.modes)) != len(self.modes):
            out.append(("modes", f"choose among {', '.join(SHAPE_MODES)}, each once"))
        if isinstance(self.recompile_limit, bool) or not isinstance(self.recompile_limit, int) \
                or not 0 <= self.recompile_limit <= 10_000:
            out.append(("recompile_limit", "must be 0 (torch's own) to 10,000"))
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or not 1 <= self.repeats <= 10_000:
            out.append(("repeats", "must be 1–10,000"))
        if not isinstance(self.axis, str) or (self.axis and not SHAPE_AXIS.fullmatch(self.axis)):
            out.append(("axis", "NAME:DIM: a keyword input's name (or a positional input's index) and "
                                "an axis, e.g. input_ids:1"))
        return out

    @classmethod
    def from_json(cls, text: str) -> ShapeSweepRequest:
        """The request on a line; ValueError saying why it is not one."""
        data = request_data(cls, text, "shape-sweep")
        if not isinstance(data.get("batches"), list) or not isinstance(data.get("modes", []), list):
            raise ValueError("the shape-sweep request's batches and modes must be lists")
        return cls(**data)


@dataclass
class ShapePointEvent:
    """One point of a shape sweep: a variant (compiled in one dynamic mode, or eager) at one batch size.

    ``first_call_ms`` is the first call at this shape: the compile or recompile
    it caused, or a plain call when none. ``graphs`` counts the graphs Dynamo
    compiled during it, ``recompiles`` those that replaced or added to an
    earlier graph of this mode (0 at the mode's first point), and
    ``recompile_reasons`` Dynamo's guard-failure reasons for them (the first
    few, cut short; a recompile refused at the limit has one too).
    ``limit_hit``: Dynamo hit its recompile limit at this point;
    ``fell_back``: at this point or before, so the calls ran eager from then on.

    ``median_ms`` is the median of ``timed_calls`` host-timed calls and
    ``device_median_ms`` that of their device (kernel) times, where measured.
    ``eager_ms`` and ``eager_device_ms`` are eager's, timed in alternation
    with the variant's at this point; ``warmup_calls`` and
    ``eager_warmup_calls`` the warm-up calls each had before; ``gc_off``
    whether Python's garbage collector was off during the timed calls. Eager's
    own point pools its calls timed beside every compiled point at this batch
    size. None: not recorded (an older worker).

    The spread of those few calls: ``min_ms``/``max_ms`` (and eager's
    ``eager_min_ms``/``eager_max_ms``) are the fastest and slowest timed
    call; ``speedup_lo``/``speedup_hi`` the lowest and highest ratio of an
    eager call to the variant's call timed in the same pair. None: not
    recorded (an older worker), or eager's own point (no pairs).
    """

    TYPE: ClassVar[str] = "shape_point"
    variant: str
    mode: str
    batch: int
    first_call_ms: float | None = None
    graphs: int = 0
    recompiles: int = 0
    limit_hit: bool = False
    fell_back: bool = False
    recompile_limit: int | None = None
    median_ms: float | None = None
    eager_ms: float | None = None
    speedup: float | None = None
    correct: bool | None = None
    max_error: float | None = None
    error: str | None = None
    recompile_reasons: list[str] = field(default_factory=list)
    device_median_ms: float | None = None
    eager_device_ms: float | None = None
    warmup_calls: int | None = None
    eager_warmup_calls: int | None = None
    timed_calls: int | None = None
    gc_off: bool | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    eager_min_ms: float | None = None
    eager_max_ms: float | None = None
    speedup_lo: float | None = None
    speedup_hi: float | None = None
    #: the inputs of this point as called: [{"shape": [8, 32], "dtype": "int64", "name": "input_ids"}]
    inputs: list[dict[str, Any]] = field(default_factory=list)


#: The worker flag of a cold-start job (its request line is a :class:`ColdStartRequest`).
COLDSTART_FLAG = "--coldstart"
#: The flag of one fresh process a cold-start worker starts per measurement.
COLDSTART_CHILD_FLAG = "--coldstart-child"
#: How a compiled variant's process starts: every compiler cache empty, the cache a cold
#: start left (a second run on this machine), or a fresh cache holding only Mega-Cache
#: artifacts saved after a cold start. ``eager`` is the reference process (no compile).
START_KINDS = ("cold", "warm", "carried")
EAGER_START = "eager"
#: Most rounds of a cold-start job, and most timed calls per process.
MAX_COLDSTART_ROUNDS = 100
MAX_COLDSTART_CALLS = 10_000
#: Largest Mega-Cache artifact blob a worker sends or takes (bytes, per variant).
MAX_ARTIFACT_BYTES = 512 * 1024 * 1024


@dataclass
class ColdStartSettings:
    """How a cold-start job runs its config: rounds, start kinds, calls timed per process.

    Declared once for the request (:class:`ColdStartRequest`) and the record kept
    of the job (``results.records.coldstart_record.ColdStartRecord``).
    """

    rounds: int = 3
    kinds: list[str] = field(default_factory=lambda: list(START_KINDS))
    #: timed calls after the first in each process (their median: its time per call)
    calls: int = 20

    def settings(self) -> dict[str, Any]:
        """These fields by name (lists copied)."""
        return {f.name: copy.copy(getattr(self, f.name)) for f in dataclasses.fields(ColdStartSettings)}

    def settings_problems(self) -> list[tuple[str, str]]:
        """(field, message) for each setting out of range."""
        out: list[tuple[str, str]] = []
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) \
                or not 1 <= self.rounds <= MAX_COLDSTART_ROUNDS:
            out.append(("rounds", f"must be 1–{MAX_COLDSTART_ROUNDS}"))
        if not isinstance(self.kinds, list) or not self.kinds or any(k not in START_KINDS for k in self.kinds) \
                or len(set(self.kinds)) != len(self.kinds):
            out.append(("kinds", f"choose among {', '.join(START_KINDS)}, each once"))
        if isinstance(self.calls, bool) or not isinstance(self.calls, int) \
                or not 3 <= self.calls <= MAX_COLDSTART_CALLS:
            out.append(("calls", f"must be 3–{MAX_COLDSTART_CALLS:,}"))
        return out


@dataclass
class ColdStartRequest(ColdStartSettings):
    """What a cold-start worker runs: the config's compiled variants in fresh processes.

    ``save_artifacts``: send the Mega-Cache artifacts of each variant's first cold
    start back (a ``cache_artifacts`` event). ``artifacts``: per variant, base64
    Mega-Cache bytes from a cache file the user chose to load; the carried start
    then loads those instead of this machine's cold start's.
    """

    config: dict[str, Any] = field(kw_only=True)
    save_artifacts: bool = field(default=False, kw_only=True)
    artifacts: dict[str, str] = field(default_factory=dict, kw_only=True)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    def problems(self) -> list[tuple[str, str]]:
        """(field, message) for each thing wrong beyond the config itself."""
        out = self.settings_problems()
        if not isinstance(self.artifacts, dict) or any(
            not isinstance(k, str) or not isinstance(v, str) for k, v in self.artifacts.items()
        ):
            out.append(("artifacts", "must map variant names to base64 text"))
        return out

    @classmethod
    def from_json(cls, text: str) -> ColdStartRequest:
        """The request on a line; ValueError saying why it is not one."""
        data = request_data(cls, text, "cold-start")
        request = cls(**data)
        problems = request.problems()
        if problems:
            raise ValueError("; ".join(f"{f}: {m}" for f, m in problems))
        return request


@dataclass
class ColdStartPointEvent:
    """One fresh process of a cold-start job: a variant started one way, in one round.

    Times are seconds from the moment the process was started (before it
    imported anything): ``ready_s`` when the model was built (imports, the
    carried artifacts' load, the build), ``first_result_s`` when the first call
    returned, ``first_fast_s`` when the first call as fast as the steady ones
    (within 1.5× their median) returned — call ``fast_call`` (0: the first).
    ``first_call_s`` is the first call alone (the compile), ``load_s`` the
    ``load_cache_artifacts`` call of a carried start. ``call_ms`` is the median
    of ``calls`` calls timed after it in that process (eager's own process sets
    ``eager_ms`` to it too). ``phases``: seconds of the first call
    per compile phase (torch's compile metrics), with ``other`` for the gap when
    they are more than 10 % short of it. ``cache``: FX-graph and AOT-autograd
    cache hits and misses; ``loaded``: artifacts ``load_cache_artifacts`` put
    in place, by kind; ``files_before_load``: entries the carried cache folder
    held before (0: nothing else).
    """

    TYPE: ClassVar[str] = "coldstart_point"
    variant: str
    #: the start kind: ``cold``, ``warm``, ``carried`` or ``eager``
    start: str
    round: int
    ready_s: float | None = None
    first_result_s: float | None = None
    first_fast_s: float | None = None
    fast_call: int | None = None
    first_call_s: float | None = None
    import_s: float | None = None
    load_s: float | None = None
    call_ms: float | None = None
    eager_ms: float | None = None
    calls: int = 0
    phases: dict[str, float] = field(default_factory=dict)
    cache: dict[str, int] = field(default_factory=dict)
    loaded: dict[str, int] = field(default_factory=dict)
    files_before_load: int | None = None
    graphs: int = 0
    error: str | None = None
    #: the measuring process's id (each point is a process of its own)
    pid: int | None = None


@dataclass
class CacheArtifactsEvent:
    """The Mega-Cache artifacts (``torch.compiler.save_cache_artifacts``) after a variant's cold start.

    ``data`` is the bytes in base64; ``sha256`` and ``size`` are the bytes';
    ``artifacts`` counts them by kind; ``environment`` is what they are valid
    for (torch, Triton, Python, device name) as the process that made them saw it.
    """

    TYPE: ClassVar[str] = "cache_artifacts"
    variant: str
    data: str
    size: int = 0
    sha256: str = ""
    artifacts: dict[str, int] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)


Event = (
    HelloEvent
    | PhaseEvent
    | SamplesEvent
    | CompiledEvent
    | VariantDoneEvent
    | RunInfoEvent
    | GpuStateEvent
    | WarningEvent
    | ErrorEvent
    | DoneEvent
    | DiagnosticsEvent
    | ShapePointEvent
    | HeartbeatEvent
    | TurnEvent
    | ColdStartPointEvent
    | CacheArtifactsEvent
)

EVENT_CLASSES: dict[str, type] = {
    cls.TYPE: cls
    for cls in (
        HelloEvent,
        PhaseEvent,
        SamplesEvent,
        CompiledEvent,
        VariantDoneEvent,
        GpuStateEvent,
        WarningEvent,
        ErrorEvent,
        DoneEvent,
        RunInfoEvent,
    )
}

#: The wire names of the event types.
HELLO, PHASE, SAMPLES, COMPILED, VARIANT_DONE, GPU_STATE, WARNING, ERROR, DONE, RUN_INFO = (
    EVENT_CLASSES
)
EVENT_CLASSES[DiagnosticsEvent.TYPE] = DiagnosticsEvent
DIAGNOSTICS = DiagnosticsEvent.TYPE
EVENT_CLASSES[ShapePointEvent.TYPE] = ShapePointEvent
SHAPE_POINT = ShapePointEvent.TYPE
EVENT_CLASSES[HeartbeatEvent.TYPE] = HeartbeatEvent
HEARTBEAT = HeartbeatEvent.TYPE
EVENT_CLASSES[TurnEvent.TYPE] = TurnEvent
TURN = TurnEvent.TYPE
EVENT_CLASSES[ColdStartPointEvent.TYPE] = ColdStartPointEvent
COLDSTART_POINT = ColdStartPointEvent.TYPE
EVENT_CLASSES[CacheArtifactsEvent.TYPE] = CacheArtifactsEvent
CACHE_ARTIFACTS = CacheArtifactsEvent.TYPE

#: Fields read into an enum on decode.
_ENUM_FIELDS: dict[str, type[_Words]] = {
    "phase": Phase,
    "kind": ErrorKind,
}
_STATUS_ENUMS: dict[type, type[_Words]] = {VariantDoneEvent: VariantStatus, DoneEvent: RunStatus}


class ProtocolMismatch(RuntimeError):
    """The worker speaks another protocol version than this app."""

    def __init__(self, worker_version: object, where: str = "the worker"):
        self.worker_version = worker_version
        super().__init__(
            f"{where} speaks protocol version {worker_version}, this app speaks version "
            f"{PROTOCOL_VERSION}: run the same Compile Studio version on both sides"
        )


def check_hello(hello: HelloEvent, where: str = "the worker") -> HelloEvent:
    """Return ``hello``, or raise :class:`ProtocolMismatch` when its version differs."""
    if hello.protocol != PROTOCOL_VERSION:
        raise ProtocolMismatch(hello.protocol, where)
    return hello


def to_dict(event: Event) -> dict[str, Any]:
    """The event as a plain JSON-ready dict with its ``type``."""
    data: dict[str, Any] = {"type": event.TYPE}
    for f in dataclasses.fields(event):
        data[f.name] = getattr(event, f.name)
    return data


def encode(event: Event) -> str:
    """One event as one line of JSON (no trailing newline)."""
    return json.dumps(to_dict(event), separators=(",", ":"), allow_nan=True)


def from_dict(data: dict[str, Any]) -> Event | None:
    """The typed event for a decoded dict; None when it is not a valid event.

    Keys this version does not know are ignored; a missing required field or
    an unknown enum value makes the line not an event.
    """
    cls = EVENT_CLASSES.get(data.get("type"))  # type: ignore[arg-type]
    if cls is None:
        return None
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        enum = _STATUS_ENUMS.get(cls) if f.name == "status" else _ENUM_FIELDS.get(f.name)
        if enum is not None and value is not None:
            try:
                value = enum.parse(value)
            except ValueError:
                return None
        kwargs[f.name] = value
    try:
        return cls(**kwargs)  # type: ignore[no-any-return]
    except TypeError:
        return None


def decode(line: str) -> Event | None:
    """Parse one stdout line; None when it is not a protocol event."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    return from_dict(data)
