"""What every step of a run shares: the runner's state (device, inputs, reference, meters), its helpers.

:class:`RunState` is the base of :class:`~.runner.BenchmarkRunner`; the steps
that live in modules of their own (:mod:`.first_call`, :mod:`.randomness`,
:mod:`.finish`) take it as their first argument.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, Protocol

import torch

from ..core import protocol
from ..core.config import BenchmarkConfig
from . import checks
from .cache_flush import CacheFlush
from .clocks import ClockProbe
from .cudagraphs import CudagraphSkipLog
from .diagnostics import WhyCollector
from .gpu_monitor import nvml_handle
from .memory import PeakMeter
from .pinning import TimingThreadPin
from .run_errors import Stopped, error_event
from .timing import CallTimer
from .turns import TurnGate, Turns
from .variant import CheckedOutput
from .workloads import conversion_dtype


class EventSink(Protocol):
    """Where a run's events and samples go."""

    def event(self, event: protocol.Event) -> None: ...

    def sample(
        self,
        variant: str,
        phase: str,
        iteration: int,
        wall_ms: float,
        device_ms: float | None,
        round_index: int | None = None,
        start_ns: int | None = None,
    ) -> None: ...

    def samples(
        self,
        variant: str,
        phase: str,
        first_iteration: int,
        walls_ns: list[int],
        round_index: int | None,
        starts_ns: list[int],
    ) -> None: ...

    def flush(self) -> None: ...

    def hold(self, on: bool) -> None: ...


def resolve_device(device: str) -> str:
    """The torch device a config's ``device`` means (``auto``: CUDA, else MPS, else the CPU)."""
    if device == "auto":
        if torch.cuda.is_available():
            return "cuda:0"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    return "cuda:0" if device == "cuda" else device


def apply_precision(dtype: str) -> None:
    """The same TF32 setting for every variant (and the isolated compiles)."""
    tf32 = dtype == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")


#: Dynamo's own values of the flags a configuration may set, read before the first change
_DYNAMO_DEFAULTS: dict[str, object] = {}


def apply_dynamo_config(config: BenchmarkConfig) -> list[str]:
    """The configuration's ``torch._dynamo.config`` flags set, the others at Dynamo's own values.

    Returns the flags this torch does not have (not set), for a warning.
    """
    import torch._dynamo.config as dynamo_config

    from ..core.config import DYNAMO_FLAGS, parse_dynamo_config

    wanted = parse_dynamo_config(config.dynamo_config)
    absent: list[str] = []
    for name in DYNAMO_FLAGS:
        if not hasattr(dynamo_config, name):
            if name in wanted:
                absent.append(name)
            continue
        _DYNAMO_DEFAULTS.setdefault(name, getattr(dynamo_config, name))
        setattr(dynamo_config, name, wanted.get(name, _DYNAMO_DEFAULTS[name]))
    return absent


class RunState:
    """One run's state: its config, device, timer, meters and (once prepared) inputs and reference."""

    #: the input batch on the device, at the run's dtype (set when the inputs are prepared)
    x: tuple[Any, ...]
    #: the fp64 reference output (and, for training, parameter gradients) on the CPU
    reference: CheckedOutput
    reference_grads: list[torch.Tensor] | None
    flops_per_call: int | None

    def __init__(
        self,
        config: BenchmarkConfig,
        sink: EventSink,
        stop: threading.Event | None = None,
        device: str | None = None,
        clock_probe: ClockProbe | None = None,
        isolated_compile: Callable[[str], float] | None = None,
        turn_gate: TurnGate | None = None,
    ):
        self.config = config
        self.sink = sink
        self.stop = stop or threading.Event()
        #: blocks of timed calls and the pauses between them (see :mod:`.turns`)
        self.turns = Turns(sink, turn_gate)
        #: the variant whose calls were timed last: a block of another starts with untimed calls
        self.last_timed: str | None = None
        self.device = torch.device(device or resolve_device(config.device))
        self.is_cuda = self.device.type == "cuda"
        if self.is_cuda:
            # CUDA events and streams belong to the current device
            torch.cuda.set_device(self.device)
        #: what model and inputs are converted to; None: as the factory made them
        self.dtype = conversion_dtype(config.dtype)
        #: the dtype whose bounds judge the outputs (as given: the model's, once it is built)
        self.check_dtype = config.dtype if self.dtype is not None else "fp32"
        #: None, SEEDED or UNSEEDED: how the model's output is random (see randomness)
        self.random_kind: str | None = None
        self.model_dtype: str | None = None
        self.conversions: list[str] = []
        self.given_mismatch: str | None = None
        #: dynamo_config flags this torch does not have
        self.dynamo_flags_absent: list[str] = []
        #: what the outputs are checked against: "fp64", or "eager fp32" where fp64 failed
        self.reference_kind = "fp64"
        #: why the reference is not fp64, in words (None: it is)
        self.reference_note: str | None = None
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
        #: the timing thread on its own core while nothing compiles (where, in words, once pinned)
        self.pin = TimingThreadPin()
        #: Inductor's compile_threads, read before anything is pinned
        self.compile_threads: int | None = None
        #: a first call (or an untimed eager call) has run: one-off start-up is paid
        self.libraries_started = False
        self._info_sent = False
        #: times a variant's first call in a fresh process (the reported compile time)
        self.isolated_compile = isolated_compile

    # -- helpers every step uses ----------------------------------------------------
    def reseed(self) -> None:
        """Torch's RNG back to the run's seed: a random model draws the same numbers again."""
        torch.manual_seed(self.config.seed)

    def check_stop(self) -> None:
        """Raise :class:`Stopped` once the run was asked to stop."""
        if self.stop.is_set():
            raise Stopped

    def send_phase(self, name: str, phase: protocol.Phase, planned: int) -> None:
        """Tell the front end that variant ``name`` enters ``phase`` (``planned`` calls)."""
        self.sink.event(protocol.PhaseEvent(variant=name, phase=phase, iterations=planned))

    def send_error(self, name: str | None, exc: BaseException, what: str) -> None:
        """Report ``exc``, raised while doing ``what`` (for variant ``name``, None: the run)."""
        self.sink.event(error_event(name, exc, what, self.device, self.config))

    def send_warning(self, name: str, message: str) -> None:
        """Report a warning about variant ``name``."""
        self.sink.event(protocol.WarningEvent(message=message, variant=name))

    def no_grad(self) -> contextlib.AbstractContextManager[Any]:
        """Inference mode, unless the run trains."""
        return contextlib.nullcontext() if self.training else torch.inference_mode()
