"""One variant of a benchmark: a model (eager, an A/A copy of eager, or compiled) and its step.

The step is what the timed loop calls: inference (the caller holds
``inference_mode``) or one training step (forward, loss, backward, SGD
step) — with ``torch.compile`` around the model alone or around the whole
step, as the configuration says.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..core.config import BenchmarkConfig
from ..core.variants import is_eager, records_cudagraphs
from .workloads import Workload, build_workload, call_model, dtype_name, kwargs_of, output_leaves


def _unique_function(fn: Callable[..., Any], variant: str) -> Callable[..., Any]:
    """``fn`` with a code object of its own, so Dynamo's cache is per variant."""
    name = f"{fn.__name__}_{variant.replace('-', '_')}"
    code = fn.__code__.replace(co_name=name)
    return types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)


def compile_kwargs(config: BenchmarkConfig, name: str, modes: list[str]) -> dict[str, Any]:
    """``torch.compile`` arguments for variant ``name`` (a mode of Inductor or a backend)."""
    kwargs: dict[str, Any] = {"fullgraph": config.fullgraph}
    if config.dynamic in ("true", "false"):
        kwargs["dynamic"] = config.dynamic == "true"
    if name in modes:
        kwargs["backend"] = "inductor"
        if name != "default":
            kwargs["mode"] = name
    else:
        kwargs["backend"] = name
    return kwargs


@dataclass
class Variant:
    """A built variant and what the run learns about it."""

    name: str
    model: torch.nn.Module
    #: one call: the model on the inputs (a tuple), or one training step
    step: Callable[[tuple[Any, ...]], Any]
    optimizer: torch.optim.Optimizer | None = None
    compiled: bool = False
    uses_cudagraphs: bool = False
    iteration: int = 0
    #: frames Dynamo compiled during this variant's own calls after the first
    recompiles: int = 0
    #: ... of which inside the timed window
    recompiles_in_window: int = 0
    first_output: CheckedOutput | None = None
    first_grads: list[torch.Tensor] | None = None
    #: the training check's starting point, saved at build: parameters (fp64, CPU), ...
    initial_params: list[torch.Tensor] | None = None
    #: ... buffers (CPU copies) and optimizer state tensors (by parameter index, CPU copies)
    initial_buffers: list[torch.Tensor] | None = None
    initial_optimizer: dict[int, dict[str, torch.Tensor]] | None = None
    cudagraph_skips: list[str] = field(default_factory=list)
    cudagraph_record_ms: float | None = None
    clock_start: dict[str, Any] | None = None
    clock_end: dict[str, Any] | None = None
    clock_max_change: float | None = None
    pipelined_ms: float | None = None
    #: median ms per call with no thread pinned, as in a user's own program (pinned runs only)
    unpinned_ms: float | None = None
    #: device-timed calls in the timed window, and those whose launch outlasted the sleep
    device_samples: int = 0
    uncovered: int = 0
    failed: bool = False

    def params_cpu(self) -> list[torch.Tensor]:
        return [p.detach().to("cpu", torch.float64) for p in self.model.parameters()]

    def snapshot(self) -> None:
        """Save the starting point :meth:`restore` goes back to (call right after build)."""
        self.initial_params = self.params_cpu()
        self.initial_buffers = [b.detach().to("cpu", copy=True) for b in self.model.buffers()]
        saved: dict[int, dict[str, torch.Tensor]] = {}
        if self.optimizer is not None:
            for i, p in enumerate(self.model.parameters()):
                state = self.optimizer.state.get(p, {})
                saved[i] = {
                    k: t.detach().to("cpu", copy=True)
                    for k, t in state.items()
                    if isinstance(t, torch.Tensor)
                }
        self.initial_optimizer = saved

    def restore(self) -> None:
        """Parameters, buffers and optimizer state back to the snapshot, in place.

        The tensors keep their addresses: CUDA graphs and Dynamo's guards stay valid.
        Optimizer state made after the snapshot is zeroed: for SGD with momentum (the
        step's optimizer) a zero momentum buffer gives the same update as none (the
        first step takes the gradient itself). Parameters come back exactly: their
        fp64 copies hold every value of their dtype.
        """
        assert self.initial_params is not None
        saved = self.initial_optimizer or {}
        with torch.no_grad():
            for p, p0 in zip(self.model.parameters(), self.initial_params):
                p.copy_(p0)
            for b, b0 in zip(self.model.buffers(), self.initial_buffers or []):
                b.copy_(b0)
            if self.optimizer is None:
                return
            for i, p in enumerate(self.model.parameters()):
                for k, t in self.optimizer.state.get(p, {}).items():
                    if isinstance(t, torch.Tensor):
                        before = saved.get(i, {}).get(k)
                        if before is not None:
                            t.copy_(before)
                        else:
                            t.zero_()

    def grads_cpu(self) -> list[torch.Tensor]:
        return [
            (p.grad if p.grad is not None else torch.zeros_like(p)).detach().to("cpu", torch.float64)
            for p in self.model.parameters()
        ]


def build_variant(
    config: BenchmarkConfig,
    name: str,
    device: torch.device,
    dtype: torch.dtype | None,
    modes: list[str],
) -> Variant:
    """The model of variant ``name`` on ``device`` at ``dtype`` (None: as built), compiled
    unless it is eager."""
    workload = build_workload(config, name).to(device, dtype)
    return variant_of(config, name, workload, device, modes)


def variant_of(
    config: BenchmarkConfig, name: str, workload: Workload, device: torch.device, modes: list[str]
) -> Variant:
    """Variant ``name`` of a built workload (already on its device and dtype)."""
    model = workload.model
    loss_fn = workload.loss
    assert loss_fn is not None
    training = config.workload == "training"
    model.train(training)
    optimizer = (
        torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9) if training else None
    )
    compiled = not is_eager(name)
    cudagraphs = compiled and device.type == "cuda" and records_cudagraphs(name)
    kwargs = compile_kwargs(config, name, modes) if compiled else {}

    if not training:
        model.eval()
        call: Callable[..., Any] = torch.compile(model, **kwargs) if compiled else model
        if cudagraphs:
            mark = torch.compiler.cudagraph_mark_step_begin

            def step(inputs: tuple[Any, ...]) -> Any:
                mark()
                return call(*inputs, **kwargs_of(inputs))

            return Variant(name, model, step, None, compiled, cudagraphs)

        def plain(inputs: tuple[Any, ...]) -> Any:
            return call(*inputs, **kwargs_of(inputs))

        return Variant(name, model, plain, None, compiled, cudagraphs)

    assert optimizer is not None
    whole_step = compiled and config.compile_scope == "step"
    forward = torch.compile(model, **kwargs) if compiled and not whole_step else model

    def train_step(inputs: tuple[Any, ...], keywords: dict[str, Any]) -> Any:
        optimizer.zero_grad(set_to_none=True)
        out = forward(*inputs, **keywords)
        loss_fn(out).backward()
        optimizer.step()
        return out.detach() if isinstance(out, torch.Tensor) else out

    # the keyword inputs travel apart: the compiled step sees a plain tuple and a dict
    inner_step: Callable[[tuple[Any, ...], dict[str, Any]], Any] = train_step
    if whole_step:
        inner_step = torch.compile(_unique_function(train_step, name), **kwargs)

    def fn(inputs: tuple[Any, ...]) -> Any:
        return inner_step(tuple(inputs), kwargs_of(inputs))

    if cudagraphs:
        mark = torch.compiler.cudagraph_mark_step_begin
        inner = fn

        def fn(inputs: tuple[Any, ...]) -> Any:
            mark()
            return inner(inputs)

    return Variant(name, model, fn, optimizer, compiled, cudagraphs)


@dataclass(frozen=True)
class CheckedOutput:
    """A call's output as the checks see it.

    ``tensors``: every floating tensor leaf of the output tree, in tree order, as
    fp64 on the CPU; they are compared together, as one vector. ``structure``:
    one line per leaf (its path and what it is, floating tensors by shape alone,
    as the fp64 reference differs in dtype), which must match the reference's.
    Integer and bool tensors (token ids, argmax predictions) and non-tensor leaves
    are not compared: a rounding-level change of the floats they come from can
    flip them without anything being wrong; ``not_compared`` names them.
    """

    tensors: list[torch.Tensor]
    structure: tuple[str, ...]
    not_compared: tuple[str, ...] = ()

    def max_abs_diff(self, other: CheckedOutput) -> float:
        """Largest elementwise difference from ``other`` (of the same structure)."""
        return max(
            (float((a - b).abs().max()) for a, b in zip(self.tensors, other.tensors) if a.numel()),
            default=0.0,
        )

    def structure_difference(self, reference: CheckedOutput, what: str = "the reference") -> str | None:
        """Why this output's tree does not match ``reference``'s, in words; None when it does."""
        mine, theirs = self.structure, reference.structure
        if mine == theirs:
            return None
        for a, b in zip(mine, theirs):
            if a != b:
                return f"the output's structure differs from {what}'s: {a} here, {b} there"
        return (
            f"the output's structure differs from {what}'s: {len(mine)} leaves here, "
            f"{len(theirs)} there"
        )


def checked_output(out: Any) -> CheckedOutput:
    """The floating tensors of ``out`` (fp64, CPU, detached) and its structure."""
    tensors: list[torch.Tensor] = []
    structure: list[str] = []
    not_compared: list[str] = []
    for path, leaf in output_leaves(out):
        if isinstance(leaf, torch.Tensor):
            shape = "×".join(str(n) for n in leaf.shape) or "scalar"
            if leaf.is_floating_point():
                tensors.append(leaf.detach().to("cpu", torch.float64))
                structure.append(f"{path}: floating tensor {shape}")
            else:
                kind = dtype_name(leaf.dtype)
                structure.append(f"{path}: {kind} tensor {shape}")
                not_compared.append(f"{path} ({kind})")
        else:
            structure.append(f"{path}: {type(leaf).__name__}")
            if leaf is not None:
                not_compared.append(f"{path} ({type(leaf).__name__})")
    return CheckedOutput(tensors, tuple(structure), tuple(not_compared))


def first_tensor(out: Any) -> torch.Tensor:
    """The first floating tensor of an output tree (the first tensor when none is floating).

    What the shape sweep compares; the run compares every leaf (:func:`checked_output`).
    """
    tensors = [leaf for _, leaf in output_leaves(out) if isinstance(leaf, torch.Tensor)]
    if not tensors:
        raise ValueError("the model's output holds no tensor")
    return next((t for t in tensors if t.is_floating_point()), tensors[0])


def reference_output(
    workload: Workload,
    training: bool,
    reseed: Callable[[], None] | None = None,
    device: torch.device | None = None,
    dtype: torch.dtype | None = torch.float64,
) -> tuple[CheckedOutput, list[torch.Tensor] | None]:
    """The output (and, for training, parameter gradients) the variants are checked against.

    By default fp64 on the CPU; ``device``/``dtype`` give another (the eager fallback
    in the run's dtype, ``dtype`` None: as the workload is). Converts the workload's
    model in place. ``reseed`` runs just before the call (a random model's reference
    takes the same random numbers as each variant).
    """
    ref = workload.to(device or torch.device("cpu"), dtype)
    model = ref.model
    if not training:
        model.eval()
        with torch.no_grad():
            if reseed is not None:
                reseed()
            return checked_output(call_model(model, ref.inputs)), None
    model.train()
    model.zero_grad(set_to_none=True)
    if reseed is not None:
        reseed()
    out = call_model(model, ref.inputs)
    assert ref.loss is not None
    ref.loss(out).backward()
    grads = [
        (p.grad if p.grad is not None else torch.zeros_like(p)).detach().to("cpu", torch.float64, copy=True)
        for p in model.parameters()
    ]
    return checked_output(out), grads
