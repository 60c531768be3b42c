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

from ..config import AA_CONTROL, CUDAGRAPH_VARIANTS, BenchmarkConfig
from .models import Workload, build_workload


def is_eager(name: str) -> bool:
    """Eager and its A/A control run without torch.compile."""
    return name in ("eager", AA_CONTROL)


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
    first_output: torch.Tensor | None = None
    first_grads: list[torch.Tensor] | None = None
    initial_params: list[torch.Tensor] | None = None
    cudagraph_skips: list[str] = field(default_factory=list)
    cudagraph_record_ms: float | None = None
    clock_start: dict[str, Any] | None = None
    clock_end: dict[str, Any] | None = None
    clock_max_change: float | None = None
    pipelined_ms: float | None = None
    failed: bool = False

    def params_cpu(self) -> list[torch.Tensor]:
        return [p.detach().to("cpu", torch.float64) for p in self.model.parameters()]

    def grads_cpu(self) -> list[torch.Tensor]:
        return [
            (p.grad if p.grad is not None else torch.zeros_like(p)).detach().to("cpu", torch.float64)
            for p in self.model.parameters()
        ]


def build_variant(
    config: BenchmarkConfig,
    name: str,
    device: torch.device,
    dtype: torch.dtype,
    modes: list[str],
) -> Variant:
    """The model of variant ``name`` on ``device``, compiled unless it is eager."""
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
    cudagraphs = compiled and device.type == "cuda" and name in CUDAGRAPH_VARIANTS
    kwargs = compile_kwargs(config, name, modes) if compiled else {}

    if not training:
        model.eval()
        call: Callable[..., Any] = torch.compile(model, **kwargs) if compiled else model
        if cudagraphs:
            mark = torch.compiler.cudagraph_mark_step_begin

            def step(inputs: tuple[Any, ...]) -> Any:
                mark()
                return call(*inputs)

            return Variant(name, model, step, None, compiled, cudagraphs)

        def plain(inputs: tuple[Any, ...]) -> Any:
            return call(*inputs)

        return Variant(name, model, plain, None, compiled, cudagraphs)

    assert optimizer is not None
    whole_step = compiled and config.compile_scope == "step"
    forward = torch.compile(model, **kwargs) if compiled and not whole_step else model

    def train_step(inputs: tuple[Any, ...]) -> Any:
        optimizer.zero_grad(set_to_none=True)
        out = forward(*inputs)
        loss_fn(out).backward()
        optimizer.step()
        return out.detach() if isinstance(out, torch.Tensor) else out

    fn: Callable[[tuple[Any, ...]], Any] = train_step
    if whole_step:
        fn = torch.compile(_unique_function(train_step, name), **kwargs)
    if cudagraphs:
        mark = torch.compiler.cudagraph_mark_step_begin
        inner = fn

        def fn(inputs: tuple[Any, ...]) -> Any:
            mark()
            return inner(inputs)

    return Variant(name, model, fn, optimizer, compiled, cudagraphs)


def first_tensor(out: Any) -> torch.Tensor:
    """The output compared with the reference: the tensor, or a tuple's first tensor."""
    if isinstance(out, (tuple, list)):
        out = next(o for o in out if isinstance(o, torch.Tensor))
    return out


def reference_output(workload: Workload, training: bool) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
    """fp64 output (and, for training, parameter gradients) of the workload on the CPU."""
    ref = workload.to(torch.device("cpu"), torch.float64)
    model = ref.model
    if not training:
        model.eval()
        with torch.no_grad():
            return first_tensor(model(*ref.inputs)).detach(), None
    model.train()
    model.zero_grad(set_to_none=True)
    out = model(*ref.inputs)
    assert ref.loss is not None
    ref.loss(out).backward()
    grads = [
        (p.grad if p.grad is not None else torch.zeros_like(p)).detach().clone()
        for p in model.parameters()
    ]
    return first_tensor(out).detach(), grads
