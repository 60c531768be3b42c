"""The timed loop: builds each variant, compiles it, warms it up, measures it in rounds.

Measurement runs in rounds: with R rounds every variant's timed calls are
split into R blocks run in alternating order (A B A B …), so drift and load
changes hit every variant alike and show as spread between rounds. Before
the rounds: the fp64 reference, each variant's first call (compile time,
reported on its own), then — every compile done, the timing thread pinned,
the harness floor taken — the warm-up of all variants together, alternating
(a number of calls each and a minimum time in all), so round 1 starts with
the clocks already up. After them, outside any timed window: a steady-state
call checked against the first, the correctness verdict (for training, a
fixed number of steps from the same starting point compared with eager's),
a pipelined throughput figure, and the variant's own peak memory.

The timing thread is pinned to its core only while nothing compiles: the
processes and threads a compile starts (Inductor's compile workers, the C++
compiler) inherit the affinity of the thread that starts them.

Reports everything through an :class:`EventSink` (protocol events); holds no
state a supervisor needs after the fact. Pure torch, no Qt.

Longer than most modules, on purpose: the timed loop and the checks around it
share one runner's state (inputs, reference, timer, memory meter, clock); the
pieces that stand alone live in timing, checks, memory, clocks, cache_flush,
cudagraphs, variant and models.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import torch

from .. import affinity, protocol
from ..config import BenchmarkConfig, format_bytes
from . import checks
from .cache_flush import CacheFlush
from .clocks import CLOCK_CHANGE_WARN, ClockProbe, clock_change
from .cudagraphs import CudagraphSkipLog
from .diagnostics import WhyCollector
from .gpu_monitor import nvml_handle
from .memory import PeakMeter
from .models import (
    Workload,
    batch_of,
    build_workload,
    conversion_dtype,
    conversions,
    count_flops,
    describe_inputs,
    dtype_name,
    lowest_precision,
    model_dtype,
    move_inputs,
)
from .timing import CallTimer
from .variant import (
    CheckedOutput,
    Variant,
    build_variant,
    checked_output,
    is_eager,
    reference_output,
    variant_of,
)

#: Back-to-back calls timed with one synchronisation for the pipelined figure.
PIPELINED_CALLS = 50
#: Training steps every variant runs from the same starting point for the parameters check.
DRIFT_STEPS = 5


class EventSink(Protocol):
    def event(self, event: protocol.Event) -> None: ...

    def sample(
        self,
        variant: str,
        phase: str,
        iteration: int,
        wall_ms: float,
        device_ms: float | None,
        round_index: int | None = None,
    ) -> None: ...

    def flush(self) -> None: ...


class Stopped(Exception):
    """Raised inside the loop when a stop was asked for."""


class _RunFailed(Exception):
    """Raised when the run cannot go on (already reported)."""


def classify_error(exc: BaseException) -> protocol.ErrorKind:
    """Protocol error kind for an exception raised while running a variant."""
    if isinstance(exc, MemoryError) or "bad_alloc" in str(exc) or "MemoryError" in str(exc):
        return protocol.ErrorKind.OOM
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(exc, oom_type):
        return protocol.ErrorKind.OOM
    text = str(exc)
    if "out of memory" in text.lower() or "not enough memory" in text.lower() or (
        "can't allocate memory" in text.lower()
    ):
        return protocol.ErrorKind.OOM
    mod = type(exc).__module__
    if mod.startswith(("torch._dynamo", "torch._inductor")) or "Compiler" in type(exc).__name__:
        return protocol.ErrorKind.COMPILE_FAILED
    return protocol.ErrorKind.INTERNAL


def _alloc_size(text: str) -> str | None:
    m = re.search(r"allocate (\d+) bytes", text)
    if m:
        return format_bytes(int(m.group(1)))
    m = re.search(r"allocate ([\d.]+ [KMGT]i?B)", text)
    return m.group(1) if m else None


def _first_line(exc: BaseException, limit: int = 600) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # Dynamo wraps the real cause: prefer its most specific line.
    msg = lines[0] if lines else text
    for ln in lines:
        if "Error" in ln and ln is not lines[0] and len(ln) < 300:
            msg = f"{msg} — {ln.strip()}"
            break
    return msg[:limit]


def _dynamo_counts() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return {
        "frames": int(counters["frames"].get("total", 0)),
        "graphs": int(counters["stats"].get("unique_graphs", 0)),
        "breaks": int(sum(counters["graph_break"].values())),
    }


def _break_reasons() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return dict(counters["graph_break"])


def _compile_threads() -> int | None:
    """Inductor's ``compile_threads`` (sized from the cores this process may use at its import)."""
    try:
        import torch._inductor.config as inductor_config

        n = inductor_config.compile_threads
    except Exception:  # noqa: BLE001 - a torch without Inductor
        return None
    return n if isinstance(n, int) else None


def _short_reason(reason: str) -> str:
    lines = [ln.strip() for ln in reason.splitlines() if ln.strip()]
    head = lines[0] if lines else reason
    expl = next((ln for ln in lines if ln.startswith("Explanation:")), "")
    return f"{head} — {expl[len('Explanation:'):].strip()}" if expl else head


def resolve_device(device: str) -> str:
    if device == "auto":
        if torch.cuda.is_available():
            return "cuda:0"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    return "cuda:0" if device == "cuda" else device


def make_input(config: BenchmarkConfig) -> torch.Tensor:
    """The first input (fp32, on the CPU) of the config's model, drawn from its seed."""
    return build_workload(config).inputs[0]


def first_call_ms(config: BenchmarkConfig, name: str, fallback_random: bool = False) -> float:
    """Milliseconds of variant ``name``'s first call (its compile), CUDA-graph recording included.

    ``fallback_random``: Inductor draws random numbers as eager does (set for a random model,
    as the run itself compiles it).
    """
    from .environment import compile_modes

    device = torch.device(resolve_device(config.device))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    BenchmarkRunner._apply_precision(config.dtype)
    if fallback_random:
        use_eager_random_numbers()
    workload = build_workload(config, name).to(device, conversion_dtype(config.dtype))
    x = workload.inputs
    v = variant_of(config, name, workload, device, compile_modes())
    timer = CallTimer(device)
    training = config.workload == "training"
    grad = contextlib.nullcontext() if training else torch.inference_mode()
    # one untimed eager call first, on the same inputs in the same grad mode (for training
    # with its backward): the device's and libraries' one-off start-up (cuBLAS handles,
    # lazily loaded CUDA modules, the autograd engine, CPU library init) is not compile time
    with grad:
        out = workload.model(*x)
        if training and workload.loss is not None:
            workload.loss(out).backward()
    del out
    workload.model.zero_grad(set_to_none=True)
    timer.sync()
    with grad:
        timer.sync()
        t0 = time.perf_counter_ns()
        v.step(x)
        if v.uses_cudagraphs:
            v.step(x)
        timer.sync()
    return (time.perf_counter_ns() - t0) / 1e6


def use_eager_random_numbers() -> None:
    """Inductor's random operators fall back to eager's: the same seed gives the same numbers."""
    import torch._inductor.config as inductor_config

    inductor_config.fallback_random = True


#: How a model is random: ``seeded`` (the same output under the same torch seed) or
#: ``unseeded`` (a different output even then: a random source other than torch's).
SEEDED, UNSEEDED = "seeded", "unseeded"

RANDOMNESS_TEXT = {
    SEEDED: "the model's output changes from call to call (random operators such as Dropout in "
    "training mode); outputs are compared with the RNG reseeded before each call, and a variant "
    "whose output still differs is not judged",
    UNSEEDED: "the model's output changes from call to call even with torch's RNG reseeded before "
    "each call (a random source other than torch's, such as Python's random, or state the model "
    "keeps between calls); the output check is skipped",
}


def round_blocks(iterations: int, rounds: int) -> list[int]:
    """Timed calls per round: ``iterations`` split as evenly as possible."""
    rounds = max(1, min(rounds, iterations))
    base, extra = divmod(iterations, rounds)
    return [base + (1 if r < extra else 0) for r in range(rounds)]


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Python's garbage collector off during a timed block (as ``timeit`` does)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class BenchmarkRunner:
    """Runs one validated :class:`BenchmarkConfig` and reports through a sink."""

    def __init__(
        self,
        config: BenchmarkConfig,
        sink: EventSink,
        stop: threading.Event | None = None,
        device: str | None = None,
        clock_probe: ClockProbe | None = None,
        isolated_compile: Callable[[str], float] | None = None,
    ):
        self.config = config
        self.sink = sink
        self.stop = stop or threading.Event()
        self.device = torch.device(device or resolve_device(config.device))
        self.is_cuda = self.device.type == "cuda"
        if self.is_cuda:
            # CUDA events and streams belong to the current device
            torch.cuda.set_device(self.device)
        #: what model and inputs are converted to; None: as the factory made them
        self.dtype = conversion_dtype(config.dtype)
        #: the dtype whose bounds judge the outputs (as given: the model's, once it is built)
        self.check_dtype = config.dtype if self.dtype is not None else "fp32"
        #: None, SEEDED or UNSEEDED: how the model's output is random (see _detect_randomness)
        self.random_kind: str | None = None
        self.model_dtype: str | None = None
        self.conversions: list[str] = []
        self.given_mismatch: str | None = None
        self.training = config.workload == "training"
        self.timer = CallTimer(
            self.device, use_events=self.is_cuda and config.timer in ("auto", "cuda_events")
        )
        found = nvml_handle(self.device) if clock_probe is None else None
        #: the NVML UUID of the GPU measured (NVML and torch agree on it, whatever the index)
        self.gpu_uuid = found[2] if found else None
        self.clock = clock_probe or (
            ClockProbe.for_device(self.device, found[1], found[0])
            if found
            else ClockProbe.for_device(self.device)
        )
        self.memory = PeakMeter(self.device)
        self.flush: CacheFlush | None = None
        self.skip_log = CudagraphSkipLog()
        #: why each variant is as fast as it is (evidence sent after its timed window)
        self.why = WhyCollector(config.diagnostics)
        self.eager_output_dev: checks.Deviation | None = None
        self.eager_grads_dev: checks.Deviation | None = None
        #: parameters (fp64, CPU) after the training check's DRIFT_STEPS, by variant
        self.drift_params: dict[str, list[torch.Tensor]] = {}
        #: where the timing thread ran, in words (known at the first pinning)
        self.cpu_pinning: str | None = None
        #: Inductor's compile_threads, read before anything is pinned
        self.compile_threads: int | None = None
        self._pinned = False
        self._unpinned_mask: set[int] | None = None
        self._info_sent = False
        #: times a variant's first call in a fresh process (the reported compile time)
        self.isolated_compile = isolated_compile

    # -- public -----------------------------------------------------------
    def run(self) -> protocol.RunStatus:
        """Run every variant: ``complete``, ``stopped``, or ``failed`` (nothing could run)."""
        cfg = self.config
        self._set_precision()
        self.compile_threads = _compile_threads()
        try:
            self._prepare_inputs()
        except BaseException as exc:  # noqa: BLE001 - reported; nothing was measured yet
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._error(None, exc, "preparing the input and the fp64 reference")
            return protocol.RunStatus.FAILED
        try:
            if cfg.rounds > 1:
                self._run_rounds()
            else:
                self._run_one_round()
            self._start_timing()  # nothing was timed: the run info is still sent
        except Stopped:
            self.sink.flush()
            return protocol.RunStatus.STOPPED
        except _RunFailed:
            self.sink.flush()
            return protocol.RunStatus.FAILED
        finally:
            self.skip_log.close()
            self.why.close()
        self.sink.flush()
        return protocol.RunStatus.COMPLETE

    def _run_one_round(self) -> None:
        """Each variant in turn: first call, warm-up, timed window, checks."""
        cfg = self.config
        last_compiled = max((i for i, n in enumerate(cfg.variants) if not is_eager(n)), default=-1)
        for i, name in enumerate(cfg.variants):
            if not is_eager(name):
                self._unpin()  # what this compile starts gets every core
            v = self._prepare(name)
            if i >= last_compiled:
                self._no_more_compiles()
            if v is None:
                continue
            self._start_timing(later_compiles=i < last_compiled)
            if not self._warm_up_one(v):
                continue
            self._calls(v, protocol.Phase.MEASURE, cfg.iterations, measure=True)
            self._finish(v)
            del v
            if self.is_cuda:
                torch.cuda.empty_cache()

    def _start_timing(self, later_compiles: bool = False) -> None:
        """Before a timed call (warm-up included): the timing thread pinned, the run info sent once.

        ``later_compiles``: more variants compile after this one (the thread is unpinned for them).
        """
        self._pin(later_compiles)
        if self._info_sent:
            return
        self._info_sent = True
        try:
            self._report_run_info()
        except BaseException as exc:  # noqa: BLE001 - reported; nothing is timed without it
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._error(None, exc, "measuring the harness floor")
            raise _RunFailed from exc

    def _pin(self, later_compiles: bool = False) -> None:
        if self._pinned:
            return
        try:
            before: set[int] | None = set(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            before = None
        pinned, text = self._pin_timing_thread()
        if self.cpu_pinning is None:
            self.cpu_pinning = text + (
                "; it left its core while later variants compiled" if pinned and later_compiles else ""
            )
        if pinned:
            self._pinned = True
            self._unpinned_mask = before

    def _unpin(self) -> None:
        """The timing thread back on the cores it had (a compile follows)."""
        if not self._pinned:
            return
        self._pinned = False
        if self._unpinned_mask:
            with contextlib.suppress(AttributeError, OSError):
                os.sched_setaffinity(0, self._unpinned_mask)

    # -- steps -------------------------------------------------------------
    def _prepare_inputs(self) -> None:
        """The input batch, and the fp64 reference every variant is checked against.

        No step here changes the model that the reference is computed from: FLOPs
        are counted, and randomness looked for, on copies.
        """
        cfg = self.config
        workload = build_workload(cfg)
        self._read_dtypes(workload)
        # FLOPs do not depend on the dtype: a model converted to one is counted in fp32
        self.flops_per_call = count_flops(
            workload, self.training, None if self.dtype is None else torch.float32
        )
        self.x = move_inputs(workload.inputs, self.device, self.dtype)
        self.random_kind = self._detect_randomness(workload)
        if self.random_kind is not None and any(not is_eager(n) for n in cfg.variants):
            use_eager_random_numbers()
            if hasattr(self.isolated_compile, "fallback_random"):
                # the compiles timed in fresh processes compile as this run does
                setattr(self.isolated_compile, "fallback_random", True)  # noqa: B010
        # converts the model in place: one copy of the weights at a time
        self.reference, self.reference_grads = reference_output(
            workload, self.training, self._reseed if self.random_kind else None
        )
        del workload
        if cfg.cold_l2:
            self.flush = CacheFlush.for_device(self.device)
        self.timer.sync()

    def _read_dtypes(self, workload: Workload) -> None:
        """The dtypes the model runs in, the tolerances that judge it, and every conversion."""
        cfg = self.config
        given = model_dtype(workload.model)
        floating_inputs = {
            x.dtype for x in workload.inputs if isinstance(x, torch.Tensor) and x.is_floating_point()
        }
        ran = given if self.dtype is None or given is None else self.dtype
        self.model_dtype = dtype_name(ran) if ran is not None else None
        if self.dtype is None:
            self.check_dtype = checks.tolerance_key(ran or lowest_precision(floating_inputs))
            odd = sorted(dtype_name(d) for d in floating_inputs if d != given)
            if given is not None and odd:
                self.given_mismatch = (
                    f"the factory's model is {dtype_name(given)} and its inputs "
                    f"{' and '.join(odd)}: they run as given, unconverted"
                )
        if cfg.model == "custom":
            self.conversions = conversions(workload, self.dtype, cfg.dtype)

    def _reseed(self) -> None:
        """Torch's RNG back to the run's seed: a random model draws the same numbers again."""
        torch.manual_seed(self.config.seed)

    def _detect_randomness(self, workload: Workload) -> str | None:
        """How the model's output is random: None, SEEDED or UNSEEDED.

        Eager, on a copy of the model (as each variant runs it: on the device, at
        the run's dtype, in training or eval mode), called three times on the
        inputs: with the seed reset before the first two, then once more with the
        RNG as the second left it. Outputs count as the same when bit-identical or
        apart by no more than the dtype's error floor (a non-deterministic
        reduction on a GPU is not randomness). A model that fails here is left to
        fail in its variants; torch's random state is put back after. The built-in
        models are not random: only a factory's model is looked at.
        """
        if self.config.model != "custom":
            return None
        model = copy.deepcopy(workload.model)
        model = model.to(self.device) if self.dtype is None else model.to(self.device, self.dtype)
        model.train(self.training)
        grad = torch.no_grad() if self.training else torch.inference_mode()
        devices = [self.device.index or 0] if self.is_cuda else []

        outputs: list[CheckedOutput] = []
        try:
            with torch.random.fork_rng(devices=devices), grad:
                for reseed in (True, True, False):
                    if reseed:
                        self._reseed()
                    outputs.append(checked_output(model(*self.x)))
                    self.timer.sync()
        except Exception:  # noqa: BLE001 - the variants report the model's own failure
            return None
        finally:
            del model
            if self.is_cuda:
                torch.cuda.empty_cache()
        first, again, moved = outputs
        if not self._same_output(first, again):
            return UNSEEDED
        if not self._same_output(first, moved):
            return SEEDED
        return None

    def _same_output(self, a: CheckedOutput, b: CheckedOutput) -> bool:
        if a.structure != b.structure:
            return False
        if all(
            torch.allclose(x, y, rtol=0.0, atol=0.0, equal_nan=True)
            for x, y in zip(a.tensors, b.tensors)
        ):
            return True  # bit for bit (NaN where NaN)
        dev = checks.deviation(a.tensors, b.tensors)
        return dev.finite and dev.error <= checks.ERROR_FLOOR[self.check_dtype]

    def _report_run_info(self) -> None:
        floor_host, floor_device = self.timer.floor()
        self.sink.event(
            protocol.RunInfoEvent(
                harness_floor_ms=floor_host,
                harness_floor_device_ms=floor_device,
                timer="cuda_events" if self.timer.use_events else "host",
                memory_kind=self.memory.kind,
                clock_source=self.clock.source,
                torch_threads=torch.get_num_threads(),
                cache_flush_bytes=self.flush.nbytes if self.flush else None,
                correctness_rule=checks.rule_text(self.check_dtype),
                gpu_uuid=self.gpu_uuid,
                flops_per_call=self.flops_per_call,
                cpu_pinning=self.cpu_pinning,
                compile_threads=self.compile_threads,
                inputs=describe_inputs(self.x),
                batch_size=batch_of(self.x),
                model_dtype=self.model_dtype,
                conversions=list(self.conversions),
                randomness=RANDOMNESS_TEXT.get(self.random_kind or ""),
            )
        )
        if self.random_kind is not None:
            self.sink.event(protocol.WarningEvent(message=RANDOMNESS_TEXT[self.random_kind]))
        if self.given_mismatch is not None:
            self.sink.event(protocol.WarningEvent(message=self.given_mismatch))

    def _pin_timing_thread(self) -> tuple[bool, str]:
        """Give this (the timing) thread the core the launcher chose: (pinned?, words for run.json).

        Called once every compile before the timed calls is done: whatever a compile starts
        inherits this thread's cores.
        """
        cpu = affinity.timing_cpu_from_env()
        if cpu is None:
            return False, "not pinned (a remote worker, one core, or turned off)"
        if cpu not in affinity.available_cpus():
            return False, f"not pinned: CPU {cpu} is not available to the worker"
        if torch.get_num_threads() > 1:
            # start torch's thread pool now, from a thread on every core: threads it
            # starts later would inherit the timing thread's one core
            torch.empty(1 << 20).fill_(1.0)
        if not affinity.pin_timing_thread(cpu):
            return False, f"not pinned: the system refused CPU {cpu}"
        try:
            others = max(0, len(os.listdir("/proc/self/task")) - 1)
        except OSError:
            others = 0
        return True, (
            f"timing thread alone on CPU {cpu}; {torch.get_num_threads()} torch threads, "
            f"{others} other threads on the other cores"
        )

    def _set_precision(self) -> None:
        self._apply_precision(self.config.dtype)

    @staticmethod
    def _apply_precision(dtype: str) -> None:
        """The same TF32 setting for every variant (and the isolated compiles)."""
        tf32 = dtype == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.set_float32_matmul_precision("high" if tf32 else "highest")

    def _check_stop(self) -> None:
        if self.stop.is_set():
            raise Stopped

    def _phase(self, name: str, phase: protocol.Phase, planned: int) -> None:
        self.sink.event(protocol.PhaseEvent(variant=name, phase=phase, iterations=planned))

    def _error(self, name: str | None, exc: BaseException, what: str) -> None:
        kind = classify_error(exc)
        msg = _first_line(exc)
        if kind == protocol.ErrorKind.OOM:
            size = _alloc_size(str(exc))
            est = format_bytes(self.config.estimated_memory_bytes())
            tried = f"tried to allocate {size}; " if size else ""
            msg = (
                f"out of memory on {self.device} while {what} "
                f"({tried}this model and batch need about {est}). "
                "Use a smaller batch or model."
            )
        elif kind == protocol.ErrorKind.COMPILE_FAILED:
            msg = f"torch.compile failed for {name}: {msg}"
        self.sink.event(
            protocol.ErrorEvent(
                kind=kind,
                message=msg,
                variant=name or None,
                traceback="".join(traceback.format_exception(exc))[-8000:],
            )
        )

    def _warn(self, name: str, message: str) -> None:
        self.sink.event(protocol.WarningEvent(message=message, variant=name))

    def _no_grad(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext() if self.training else torch.inference_mode()

    def _prepare(self, name: str) -> Variant | None:
        """Build and compile (first call) one variant; None if it failed."""
        from .environment import compile_modes

        cfg = self.config
        self._check_stop()
        self._phase(name, protocol.Phase.BUILD, 0)
        try:
            v = build_variant(cfg, name, self.device, self.dtype, compile_modes())
        except Stopped:
            raise
        except BaseException as exc:  # noqa: BLE001 - reported, others go on
            self._error(name, exc, "building the model")
            return None
        # CUDA-graph pools created from here on are this variant's
        self.memory.mark_built(name)
        if self.training:
            v.snapshot()
        compile_s: float | None = None
        if v.compiled:
            self._phase(name, protocol.Phase.COMPILE, 1)
            if self.isolated_compile is not None:
                try:
                    compile_s = self.isolated_compile(name)
                except Stopped:
                    raise
                except BaseException as exc:  # noqa: BLE001
                    self._check_stop()
                    self._error(name, exc, "compiling in a fresh process")
                    return None
        self.why.first_call_starts(name)
        before = _dynamo_counts()
        reasons_before = _break_reasons()
        skips_before = self.skip_log.count()
        try:
            # what the model prints on its first call (a compile) goes to the log
            with self._no_grad(), contextlib.redirect_stdout(sys.stderr):
                if self.random_kind is not None:
                    self._reseed()
                t0 = time.perf_counter_ns()
                out = v.step(self.x)
                self.timer.sync()
                first_ms = (time.perf_counter_ns() - t0) / 1e6
                v.first_output = checked_output(out)
                if self.training:
                    v.first_grads = v.grads_cpu()
                if v.uses_cudagraphs:
                    # the second call records the CUDA graph: a one-off cost like the compile
                    t0 = time.perf_counter_ns()
                    v.step(self.x)
                    self.timer.sync()
                    v.cudagraph_record_ms = (time.perf_counter_ns() - t0) / 1e6
        except Stopped:
            raise
        except BaseException as exc:  # noqa: BLE001
            self._error(name, exc, "compiling" if v.compiled else "running the first call")
            return None
        self.memory.mark_recorded(name)
        after = _dynamo_counts()
        self.why.first_call_done(name, first_ms + (v.cudagraph_record_ms or 0.0))
        v.cudagraph_skips = self.skip_log.since(skips_before)
        if v.compiled:
            reasons = {
                k: n - reasons_before.get(k, 0)
                for k, n in _break_reasons().items()
                if n - reasons_before.get(k, 0) > 0
            }
            self.sink.event(
                protocol.CompiledEvent(
                    variant=name,
                    compile_s=compile_s
                    if compile_s is not None
                    else (first_ms + (v.cudagraph_record_ms or 0.0)) / 1000.0,
                    compile_timing="isolated" if compile_s is not None else "in_run",
                    first_call_ms=first_ms,
                    graphs=after["graphs"] - before["graphs"],
                    graph_breaks=after["breaks"] - before["breaks"],
                    break_reasons=[_short_reason(r) for r in reasons],
                    recompiles=0,
                )
            )
        return v

    def _warm_up_one(self, v: Variant) -> bool:
        """One variant's warm-up, right before its timed window; False if it failed."""
        try:
            self._warm_up(v)
        except Stopped:
            raise
        except BaseException as exc:  # noqa: BLE001
            self._error(v.name, exc, "warming up")
            return False
        return True

    def _warm_up(self, v: Variant) -> None:
        """``warmup`` calls, then more until ``warmup_min_ms`` has passed (clocks ramp up)."""
        cfg = self.config
        if cfg.warmup <= 0 and cfg.warmup_min_ms <= 0:
            return
        self._phase(v.name, protocol.Phase.WARMUP, cfg.warmup)
        deadline = time.monotonic() + cfg.warmup_min_ms / 1000.0
        self._calls(v, protocol.Phase.WARMUP, cfg.warmup)
        while time.monotonic() < deadline:
            self._calls(v, protocol.Phase.WARMUP, max(1, cfg.warmup // 4 or 1))

    def _calls(
        self,
        v: Variant,
        phase: protocol.Phase,
        count: int,
        measure: bool = False,
        round_index: int | None = None,
    ) -> None:
        """``count`` timed calls of one variant; recompiles they caused are its own.

        Variants never run concurrently, so the change of Dynamo's global frame
        counter around a group of one variant's calls belongs to that variant
        (also in rounds, where another variant may compile in between).
        """
        before = _dynamo_counts()["frames"]
        step, x, sink, time_call = v.step, self.x, self.sink, self.timer.time
        flush = self.flush
        name = v.name

        def call() -> Any:
            return step(x)

        if measure:
            start = self.clock.read()
            skips_before = self.skip_log.count()
            self.memory.start()
        try:
            with self._no_grad(), _no_gc():
                for _ in range(count):
                    if self.stop.is_set():
                        raise Stopped
                    if flush is not None:
                        flush.evict()
                        self.timer.sync()
                    wall, device_ms = time_call(call)
                    sink.sample(name, phase, v.iteration, wall, device_ms, round_index)
                    v.iteration += 1
        finally:
            new = _dynamo_counts()["frames"] - before
            v.recompiles += new
            if new:
                self.why.recompiled(name, measure)
            if measure:
                v.recompiles_in_window += new
                self.memory.stop(name)
                # a CUDA graph skipped (or re-recorded) after its first call
                v.cudagraph_skips.extend(self.skip_log.in_window(skips_before))
                end = self.clock.read()
                if v.clock_start is None:
                    v.clock_start = start.to_dict()
                v.clock_end = end.to_dict()
                change = clock_change(start, end)
                if change is not None and (
                    v.clock_max_change is None or abs(change) > abs(v.clock_max_change)
                ):
                    v.clock_max_change = change

    def _warm_up_together(self, live: list[Variant]) -> list[Variant]:
        """All variants warmed up alternating (A B A B …), right before round 1; those left.

        Blocks of ``max(1, warmup // 4)`` calls in turn until each variant has had
        ``warmup`` calls and ``warmup_min_ms`` has passed since the first.
        """
        cfg = self.config
        live = list(live)
        if not live or (cfg.warmup <= 0 and cfg.warmup_min_ms <= 0):
            return live
        for v in live:
            self._phase(v.name, protocol.Phase.WARMUP, cfg.warmup)
        block = max(1, cfg.warmup // 4)
        done = {v.name: 0 for v in live}
        deadline = time.monotonic() + cfg.warmup_min_ms / 1000.0
        while live:
            for v in list(live):
                short = cfg.warmup - done[v.name]
                if short <= 0 and time.monotonic() >= deadline:
                    continue
                count = min(block, short) if short > 0 else block
                try:
                    self._calls(v, protocol.Phase.WARMUP, count)
                except Stopped:
                    raise
                except BaseException as exc:  # noqa: BLE001
                    self._error(v.name, exc, "warming up")
                    live.remove(v)
                    continue
                done[v.name] += count
            if time.monotonic() >= deadline and all(done[v.name] >= cfg.warmup for v in live):
                break
        return live

    def _run_rounds(self) -> None:
        cfg = self.config
        live = [v for v in (self._prepare(n) for n in cfg.variants) if v is not None]
        self._no_more_compiles()
        if not live:
            return
        self._start_timing()
        blocks = round_blocks(cfg.iterations, cfg.rounds)
        gc.collect()
        live = self._warm_up_together(live)
        for v in live:
            self._phase(v.name, protocol.Phase.MEASURE, cfg.iterations)
        for r, block in enumerate(blocks):
            for v in list(live):
                try:
                    self._calls(v, protocol.Phase.MEASURE, block, measure=True, round_index=r)
                except Stopped:
                    raise
                except BaseException as exc:  # noqa: BLE001
                    self._error(v.name, exc, "measuring")
                    live.remove(v)
        eager = next((v for v in live if v.name == "eager"), None)
        if eager is not None and self.training:
            # eager's check steps first: the others are compared with them
            try:
                self._drift_steps(eager)
            except Stopped:
                raise
            except BaseException as exc:  # noqa: BLE001
                self._error(eager.name, exc, "running the training check's steps")
                live.remove(eager)
        for v in live:
            self._finish(v)

    def _no_more_compiles(self) -> None:
        """Every variant is compiled: whatever timed the compiles stops before the timed calls."""
        close = getattr(self.isolated_compile, "close", None)
        if callable(close):
            close()

    # -- after the timed window ---------------------------------------------------
    def _finish(self, v: Variant) -> None:
        """Checks outside the timed window, then ``variant_done``.

        A random model's numeric differences (not a different output structure) do
        not make a variant incorrect: its check is skipped, saying why.
        """
        dtype = self.check_dtype
        try:
            late = self._steady_state_output(v)
            v.pipelined_ms = self._pipelined(v)
            self._drift_steps(v)
        except Stopped:
            raise
        except BaseException as exc:  # noqa: BLE001
            self._error(v.name, exc, "checking the steady-state output")
            return
        assert v.first_output is not None
        first, ref = v.first_output, self.reference
        #: a different output tree: wrong whatever the numbers
        structural: list[str] = []
        problems: list[str] = []
        eager_like = is_eager(v.name)
        baseline = None if v.name == "eager" else self.eager_output_dev
        out_dev: checks.Deviation | None = None
        shape_problem = first.structure_difference(ref)
        if shape_problem is not None:
            structural.append(f"first call: {shape_problem}")
        else:
            out_dev = checks.deviation(first.tensors, ref.tensors)
            if v.name == "eager":
                self.eager_output_dev = out_dev
            ok, why = checks.judge(dtype, out_dev, baseline)
            if not ok:
                problems.append(f"first call: {why}")
        replay_diff: float | None = None
        if late is not None:
            late_shape = late.structure_difference(first, "the first call")
            if late_shape is not None:
                structural.append(f"steady state: {late_shape}")
            else:
                replay_diff = late.max_abs_diff(first)
            if late_shape is None and shape_problem is None:
                late_ok, late_why = checks.judge(
                    dtype, checks.deviation(late.tensors, ref.tensors), baseline
                )
                if not late_ok:
                    problems.append(f"steady state: {late_why}")
                elif replay_diff != 0.0 and self.random_kind is None:
                    self._warn(
                        v.name,
                        f"{v.name}: a steady-state call differs from the first call by up to "
                        f"{replay_diff:.3g} (not bit-identical, but within the correctness rule)",
                    )
        grads_dev: checks.Deviation | None = None
        params_drift: float | None = None
        drift_bound: float | None = None
        if self.training and v.first_grads is not None and self.reference_grads is not None:
            grads_dev = checks.deviation(v.first_grads, self.reference_grads)
            if v.name == "eager":
                self.eager_grads_dev = grads_dev
            g_ok, g_why = checks.judge(
                dtype, grads_dev, None if v.name == "eager" else self.eager_grads_dev
            )
            if not g_ok:
                problems.append(f"gradients: {g_why}")
            params_drift, drift_bound, drift_why = self._params_drift(v)
            if drift_why:
                problems.append(f"parameters: {drift_why}")
        skipped: list[str] = []
        if self.random_kind == UNSEEDED or (self.random_kind == SEEDED and problems):
            skipped, problems = problems, [
                "output check skipped: the model's output is random "
                + (
                    "even with torch's RNG reseeded"
                    if self.random_kind == UNSEEDED
                    else "and this variant's differs from the reference even with the RNG reseeded"
                )
                + "; a difference here does not say that compile is wrong"
            ]
        problems = structural + problems
        correct: bool | None = not problems
        if structural:
            self._warn(v.name, f"{v.name} is not correct: " + "; ".join(problems))
        elif problems and self.random_kind is not None:
            correct = None
            self._warn(v.name, f"{v.name}: " + "; ".join(problems))
        elif problems:
            self._warn(v.name, f"{v.name} is not correct: " + "; ".join(problems))
        self._cudagraph_report(v)
        clock = self._clock_report(v)
        in_window = v.recompiles_in_window
        if v.compiled and in_window:
            self._warn(
                v.name,
                f"{v.name} recompiled {in_window}x inside the timed window: "
                "its samples are not steady state",
            )
        self.sink.event(
            protocol.VariantDoneEvent(
                variant=v.name,
                status=protocol.VariantStatus.DONE,
                recompiles=v.recompiles if v.compiled else None,
                recompiles_in_window=in_window if v.compiled else None,
                max_abs_error=first.max_abs_diff(ref) if shape_problem is None else None,
                max_rel_error=out_dev.error if out_dev is not None and out_dev.finite else None,
                allclose=correct,
                peak_memory_bytes=self.memory.peak(v.name),
                memory_kind=self.memory.kind_of(v.name),
                checks={
                    "rule": checks.rule_text(dtype),
                    "output": out_dev.to_dict() if out_dev is not None else None,
                    "eager_output": self.eager_output_dev.to_dict()
                    if self.eager_output_dev and not eager_like
                    else None,
                    "gradients": grads_dev.to_dict() if grads_dev else None,
                    "params_drift": params_drift,
                    "params_drift_bound": drift_bound,
                    "replay_max_diff": replay_diff,
                    "problems": problems,
                    "not_compared": list(first.not_compared),
                    "skipped": skipped,
                },
                cudagraphs=self._cudagraph_state(v),
                cudagraph_skips=list(v.cudagraph_skips),
                cudagraph_record_ms=v.cudagraph_record_ms,
                pipelined_ms=v.pipelined_ms,
                clock=clock,
            )
        )
        self.why.report(
            self, v.name, v.step, v.compiled, {"cudagraph_skips": list(v.cudagraph_skips)},
            ms_per_call=v.pipelined_ms,
        )

    def _steady_state_output(self, v: Variant) -> CheckedOutput | None:
        """Inference: one more call after the window, to compare with the first."""
        if self.training:
            return None
        with torch.inference_mode():
            if self.random_kind is not None:
                self._reseed()
            out = v.step(self.x)
            late = checked_output(out)
        self.timer.sync()
        return late

    def _pipelined(self, v: Variant) -> float:
        calls = max(1, min(PIPELINED_CALLS, self.config.iterations))
        with self._no_grad():
            return self.timer.pipelined(lambda: v.step(self.x), calls)

    def _drift_steps(self, v: Variant) -> None:
        """Training: DRIFT_STEPS steps from the variant's starting point, parameters kept.

        Parameters, buffers and optimizer state go back to where they were at build,
        in place (CUDA-graph addresses and Dynamo's guards stay valid); then every
        variant, eager included, runs the same steps on the same inputs, whatever
        its warm-up and timed calls were. Outside any timed window.
        """
        if not self.training or self.random_kind is not None or v.initial_params is None:
            return
        if v.name in self.drift_params:
            return
        v.restore()
        with self._no_grad():
            for _ in range(DRIFT_STEPS):
                self._check_stop()
                v.step(self.x)
        self.timer.sync()
        self.drift_params[v.name] = v.params_cpu()

    def _params_drift(self, v: Variant) -> tuple[float | None, float | None, str | None]:
        """(drift, its bound, why it is wrong) of the training check; Nones where not judged.

        drift = ‖p − p_eager‖ / ‖p_eager − p₀‖ after the same DRIFT_STEPS steps from the
        same p₀, judged by :func:`checks.judge_drift`. Eager is the yardstick (None);
        a random model's steps draw other numbers per variant (None).
        """
        params = self.drift_params.get(v.name)
        if v.name == "eager" or params is None or not v.initial_params:
            return None, None, None
        self.drift_params.pop(v.name, None)
        eager = self.drift_params.get("eager")
        if eager is None:
            return None, None, None
        moved = sum(float((e - p0).square().sum()) for e, p0 in zip(eager, v.initial_params))
        if moved == 0.0:
            return None, None, None  # the updates are below the dtype's resolution
        apart = sum(float((p - e).square().sum()) for p, e in zip(params, eager))
        drift = (apart / moved) ** 0.5
        resolution = sum(
            (checks.unit_roundoff(p.dtype) * float(p0.norm())) ** 2
            for p, p0 in zip(v.model.parameters(), v.initial_params)
        )
        ok, why = checks.judge_drift(self.check_dtype, drift, moved**0.5, resolution**0.5)
        if ok is None:
            return drift, None, None
        return drift, checks.drift_bound(self.check_dtype), None if ok else why

    def _cudagraph_state(self, v: Variant) -> str | None:
        from ..config import CUDAGRAPH_VARIANTS

        if v.name not in CUDAGRAPH_VARIANTS:
            return None
        if not self.is_cuda:
            return f"not used: there are no CUDA graphs on {self.device.type}"
        if v.cudagraph_skips:
            return "skipped: " + v.cudagraph_skips[0]
        return "used"

    def _cudagraph_report(self, v: Variant) -> None:
        state = self._cudagraph_state(v)
        if state and state != "used":
            self._warn(v.name, f"{v.name}: CUDA graphs {state}; it ran without them")

    def _clock_report(self, v: Variant) -> dict[str, Any]:
        change = v.clock_max_change
        if change is not None and abs(change) > CLOCK_CHANGE_WARN:
            self._warn(
                v.name,
                f"{v.name}: the {self.clock.source.replace('_', ' ')} changed by "
                f"{change * 100:+.0f} % inside a timed window",
            )
        return {
            "source": self.clock.source,
            "start": v.clock_start,
            "end": v.clock_end,
            "max_change": change,
        }
