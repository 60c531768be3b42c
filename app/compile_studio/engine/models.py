"""The benchmarked models of every kind, and their example inputs.

Kinds: ``mlp`` (Linear layers with an activation), ``mlp_ln_residual`` (blocks
of LayerNorm(x + Linear(act(Linear(x))))), ``transformer`` (encoder layers of
``nn.TransformerEncoderLayer``), ``cnn`` (conv stages with pooling and a
linear head) and ``custom`` (the user's own factory, imported here, in the
worker only). Weights and inputs come from the config's seed, so every
variant and the fp64 reference see the same numbers.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..config import BenchmarkConfig
from ..model_specs import factory_file, parse_cnn_spec, parse_transformer_spec
from .backends import import_file
from .model import _ACTIVATIONS, MLP


class FactoryError(ValueError):
    """The user's model factory could not give a model; the message says why."""


class ResidualMLP(nn.Module):
    """Blocks of LayerNorm(x + W2·act(W1·x)) at width ``sizes[0]``, hidden ``sizes[i]``."""

    def __init__(self, sizes: list[int], activation: str = "gelu"):
        super().__init__()
        width = sizes[0]
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(width, h), _ACTIVATIONS[activation](), nn.Linear(h, width))
            for h in sizes[1:]
        )
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in sizes[1:])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block, norm in zip(self.blocks, self.norms):
            x = norm(x + block(x))
        return x


class SmallCNN(nn.Module):
    """Conv stages (conv, activation, 2×2 max-pool) then a linear head."""

    def __init__(self, channels: list[int], kernel: int, image: int, activation: str = "relu"):
        super().__init__()
        layers: list[nn.Module] = []
        c_in = 3
        size = image
        for c in channels:
            layers += [nn.Conv2d(c_in, c, kernel, padding=kernel // 2), _ACTIVATIONS[activation]()]
            if size >= 2:
                layers.append(nn.MaxPool2d(2))
                size //= 2
            c_in = c
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(c_in * size * size, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))


class Encoder(nn.Module):
    """``layers`` encoder layers (batch first, no dropout)."""

    def __init__(self, d_model: int, heads: int, ffn: int, layers: int):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=0.0, batch_first=True)
            for _ in range(layers)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


@dataclass
class Workload:
    """A model (fp32, CPU) with its example inputs, and the loss a training step uses."""

    model: nn.Module
    inputs: tuple[Any, ...]
    loss: Callable[[Any], torch.Tensor] | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def to(self, device: torch.device, dtype: torch.dtype) -> Workload:
        """Model and floating inputs at ``dtype`` on ``device`` (integer inputs keep theirs)."""
        model = self.model.to(device, dtype)
        return Workload(model, move_inputs(self.inputs, device, dtype), self.loss, self.options)


def move_inputs(inputs: tuple[Any, ...], device: torch.device, dtype: torch.dtype) -> tuple[Any, ...]:
    """Floating inputs at ``dtype`` on ``device``; integer inputs keep their dtype."""
    return tuple(_move(x, device, dtype) for x in inputs)


def _move(x: Any, device: torch.device, dtype: torch.dtype) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(device, dtype) if x.is_floating_point() else x.to(device)
    return x


def default_loss(out: Any) -> torch.Tensor:
    """Mean of squares of the output (the first tensor of a tuple)."""
    if isinstance(out, (tuple, list)):
        out = out[0]
    return out.float().square().mean()


def own_forward(model: nn.Module, variant: str) -> nn.Module:
    """``model`` with a ``forward`` of its own code object for ``variant``.

    Dynamo caches compiled code per code object; giving each variant its own
    keeps one variant's graphs from counting as another's recompiles.
    """
    if not variant:
        return model
    cls = type(model)
    forward = cls.forward
    tag = variant.replace("-", "_")
    code = forward.__code__.replace(co_name=f"{forward.__name__}_{tag}")
    new_forward = types.FunctionType(
        code, forward.__globals__, code.co_name, forward.__defaults__, forward.__closure__
    )
    model.__class__ = type(f"{cls.__name__}_{tag}", (cls,), {"forward": new_forward})
    return model


def _seeded(seed: int, build: Callable[[], Any]) -> Any:
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        return build()
    finally:
        torch.random.set_rng_state(state)


def build_workload(config: BenchmarkConfig, variant: str = "") -> Workload:
    """The config's model and inputs (fp32, CPU), the same for every variant."""
    kind = config.model
    gen = torch.Generator().manual_seed(config.seed + 1)
    b = config.batch_size
    if kind == "custom":
        workload = load_factory(config.factory, config.model_path, config.seed)
    elif kind == "transformer":
        d, heads, ffn, seq, layers = parse_transformer_spec(config.transformer)
        model = _seeded(config.seed, lambda: Encoder(d, heads, ffn, layers))
        workload = Workload(model, (torch.randn(b, seq, d, generator=gen),))
    elif kind == "cnn":
        image, kernel, channels = parse_cnn_spec(config.cnn)
        model = _seeded(config.seed, lambda: SmallCNN(channels, kernel, image, config.activation))
        workload = Workload(model, (torch.randn(b, 3, image, image, generator=gen),))
    else:
        sizes = config.layer_sizes()
        cls = ResidualMLP if kind == "mlp_ln_residual" else MLP
        model = _seeded(config.seed, lambda: cls(sizes, config.activation))
        workload = Workload(model, (torch.randn(b, sizes[0], generator=gen),))
    if workload.loss is None:
        workload.loss = default_loss
    own_forward(workload.model, variant)
    return workload


# -- the user's own factory --------------------------------------------------------------

def _import_factory(spec: str, model_path: str) -> Callable[[], Any]:
    target, _, name = spec.rpartition(":")
    if not target or not name:
        raise FactoryError(f"'{spec}' is not FILE.py:FUNCTION or package.module:FUNCTION")
    path = factory_file(spec)
    try:
        if path is not None:
            path = path.resolve()
            if not path.is_file():
                raise FactoryError(f"the model file {path} does not exist")
            module = import_file(path, "compile_studio_user_model")
        else:
            if model_path:
                folder = str(Path(model_path).expanduser().resolve())
                if folder not in sys.path:
                    sys.path.insert(0, folder)
            module = importlib.import_module(target)
    except FactoryError:
        raise
    except SyntaxError as exc:
        raise FactoryError(
            f"syntax error in {exc.filename}, line {exc.lineno}: {exc.msg}"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - the user's code: any failure is theirs, said so
        raise FactoryError(f"importing {target} failed: {type(exc).__name__}: {exc}") from exc
    factory = getattr(module, name, None)
    if not callable(factory):
        raise FactoryError(f"{target} has no function {name}")
    return factory  # type: ignore[no-any-return]


def load_factory(spec: str, model_path: str, seed: int) -> Workload:
    """Call the user's factory: ``(model, inputs[, loss[, options]])``, checked."""
    factory = _import_factory(spec, model_path)
    try:
        made = _seeded(seed, factory)
    except Exception as exc:  # noqa: BLE001
        raise FactoryError(f"the factory {spec} raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(made, tuple) or not 2 <= len(made) <= 4:
        raise FactoryError(
            f"the factory {spec} must return (model, inputs[, loss[, options]]), "
            f"got {type(made).__name__}"
        )
    model, inputs, *rest = made
    if not isinstance(model, nn.Module):
        raise FactoryError(f"the factory's model is a {type(model).__name__}, not a torch.nn.Module")
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    if not all(isinstance(x, torch.Tensor) for x in inputs):
        raise FactoryError("the factory's inputs must be a tensor or a tuple of tensors")
    devices = {x.device.type for x in inputs} | {p.device.type for p in model.parameters()}
    if devices - {"cpu"}:
        raise FactoryError(
            "the factory must return the model and inputs on the CPU: the app moves them to the "
            f"chosen device (found {', '.join(sorted(devices))})"
        )
    loss = rest[0] if rest else None
    if loss is not None and not callable(loss):
        raise FactoryError("the factory's loss must be callable: loss(output) -> scalar tensor")
    options = rest[1] if len(rest) > 1 else {}
    if not isinstance(options, dict):
        raise FactoryError("the factory's options must be a dict")
    return Workload(model.float(), inputs, loss, dict(options))


def count_flops(workload: Workload, training: bool) -> int | None:
    """FLOPs of one call (a forward, or forward + backward) counted by ``FlopCounterMode``."""
    try:
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:  # pragma: no cover - very old torch
        return None
    model = workload.model
    try:
        counter = FlopCounterMode(display=False)
        if training:
            model.train()
            with counter:
                out = model(*workload.inputs)
                (workload.loss or default_loss)(out).backward()
            model.zero_grad(set_to_none=True)
        else:
            # train mode: eval-mode fused paths (TransformerEncoderLayer's) escape the counter
            model.train()
            with counter, torch.no_grad():
                model(*workload.inputs)
            model.eval()
        return int(counter.get_total_flops())
    except Exception:  # noqa: BLE001 - a model the counter cannot follow has no FLOP figure
        return None
