"""The benchmarked models of every kind, and their example inputs.

Kinds: ``mlp`` (Linear layers with an activation), ``mlp_ln_residual`` (blocks
of LayerNorm(x + Linear(act(Linear(x))))), ``transformer`` (encoder layers of
``nn.TransformerEncoderLayer``), ``cnn`` (conv stages with pooling and a
linear head) and ``custom`` (the user's own factory, imported here, in the
worker only). Weights and inputs come from the config's seed, so every
variant and the fp64 reference see the same numbers.

A factory returns ``(model, inputs)`` or ``(model, inputs, loss)`` on the CPU,
in the dtypes it chose: the model is measured as given (dtype ``as_given``)
unless the configuration names a dtype to convert to. Its parameters named
like a configuration field (``batch_size``, ``seed``, ...) get that field's
value. What it prints goes to stderr, the log, never to the protocol.

A model's output may be a tensor or any tree of them: tuples, lists, dicts
(any ``Mapping``), dataclasses (Hugging Face ``ModelOutput``-like) and types
registered with ``torch.utils._pytree``; :func:`output_leaves` flattens it.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
import importlib.util
import inspect
import math
import random
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from ..core.config import AS_GIVEN, BenchmarkConfig, config_fields, parse_factory_args
from ..core.model_specs import factory_file, parse_cnn_spec, parse_transformer_spec
from .backends import import_file
from .mlp import _ACTIVATIONS, MLP, TORCH_DTYPES


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


class CallInputs(tuple):  # type: ignore[type-arg]
    """A call's inputs: the positional ones (the tuple itself) and the keyword ones (``kwargs``).

    What a factory's mapping of keyword inputs becomes (Hugging Face models are called
    ``model(**inputs)``): every step calls ``model(*inputs, **inputs.kwargs)``. A plain
    tuple is a call without keywords (:func:`kwargs_of`).
    """

    kwargs: dict[str, Any]

    def __new__(cls, args: Any = (), kwargs: Mapping[str, Any] | None = None) -> CallInputs:
        self = super().__new__(cls, tuple(args))
        self.kwargs = dict(kwargs or {})
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (CallInputs, (tuple(self), self.kwargs))

    def __deepcopy__(self, memo: dict[int, Any]) -> CallInputs:
        return CallInputs(copy.deepcopy(tuple(self), memo), copy.deepcopy(self.kwargs, memo))

    def __repr__(self) -> str:
        return f"CallInputs({tuple(self)!r}, {self.kwargs!r})"


_NO_KWARGS: dict[str, Any] = {}


def kwargs_of(inputs: tuple[Any, ...]) -> dict[str, Any]:
    """The keyword inputs of a call's inputs (none for a plain tuple)."""
    return getattr(inputs, "kwargs", _NO_KWARGS)


def named_inputs(inputs: tuple[Any, ...]) -> list[tuple[str, Any]]:
    """Every input with its name: ``input 0``, ``input 1`` for positional ones, the keyword's own."""
    return [(f"input {i}", x) for i, x in enumerate(inputs)] + list(kwargs_of(inputs).items())


def call_model(model: Callable[..., Any], inputs: tuple[Any, ...]) -> Any:
    """``model(*inputs, **keyword inputs)``."""
    return model(*inputs, **kwargs_of(inputs))


@dataclass
class Workload:
    """A model (CPU; fp32, or a factory's own dtypes) with its example inputs and training loss."""

    model: nn.Module
    inputs: tuple[Any, ...]
    loss: Callable[[Any], torch.Tensor] | None = None

    def to(self, device: torch.device, dtype: torch.dtype | None) -> Workload:
        """Model and floating inputs at ``dtype`` (None: as they are) on ``device``.

        Integer inputs keep their dtype. The model is converted in place.
        """
        model = self.model.to(device) if dtype is None else self.model.to(device, dtype)
        return Workload(model, move_inputs(self.inputs, device, dtype), self.loss)


def move_inputs(
    inputs: tuple[Any, ...], device: torch.device, dtype: torch.dtype | None
) -> tuple[Any, ...]:
    """Floating inputs at ``dtype`` (None: their own) on ``device``; integer inputs keep theirs.

    Keyword inputs (:class:`CallInputs`) are moved alike and stay keyword inputs.
    """
    moved = tuple(_move(x, device, dtype) for x in inputs)
    kwargs = kwargs_of(inputs)
    if not kwargs and not isinstance(inputs, CallInputs):
        return moved
    return CallInputs(moved, {k: _move(v, device, dtype) for k, v in kwargs.items()})


def _move(x: Any, device: torch.device, dtype: torch.dtype | None) -> Any:
    if isinstance(x, torch.Tensor):
        if dtype is not None and x.is_floating_point():
            return x.to(device, dtype)
        return x.to(device)
    return x


def conversion_dtype(dtype: str) -> torch.dtype | None:
    """The torch dtype a configuration's ``dtype`` converts model and inputs to; None: as given."""
    return None if dtype == AS_GIVEN else TORCH_DTYPES[dtype]


# -- dtypes in words ------------------------------------------------------------------------

_SHORT_NAMES = {
    torch.float32: "fp32",
    torch.float64: "fp64",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
    torch.complex64: "complex64",
    torch.complex128: "complex128",
}


def dtype_name(dtype: torch.dtype) -> str:
    """The short name of ``dtype``: fp32, bf16, fp16, fp64, int64, bool, ..."""
    return _SHORT_NAMES.get(dtype) or str(dtype).removeprefix("torch.")


def mantissa_bits(dtype: torch.dtype) -> int:
    """Explicit mantissa bits of a floating dtype: bf16 7, fp16 10, fp32 23, fp64 52."""
    return round(-math.log2(torch.finfo(dtype).eps))


def _precision_bits(dtype: torch.dtype) -> int:
    """Mantissa bits (lower: less precise); used to find a mix's lowest precision."""
    if dtype.is_floating_point:
        return mantissa_bits(dtype)
    return 1_000


def lowest_precision(dtypes: set[torch.dtype]) -> torch.dtype | None:
    """The least precise of ``dtypes`` (bf16 < fp16 < fp32 < fp64); None for none."""
    return min(dtypes, key=lambda d: (_precision_bits(d), str(d))) if dtypes else None


def floating_dtypes(model: nn.Module) -> set[torch.dtype]:
    """The dtypes of the model's floating parameters."""
    return {p.dtype for p in model.parameters() if p.is_floating_point()}


def model_dtype(model: nn.Module) -> torch.dtype | None:
    """The dtype the model's floating parameters are in: the lowest precision if mixed."""
    return lowest_precision(floating_dtypes(model))


def describe_inputs(inputs: tuple[Any, ...]) -> list[dict[str, Any]]:
    """One entry per input: ``{"shape": [...], "dtype": "bf16"}``, or ``{"type": name}``.

    A keyword input's entry also has its ``name`` (``input_ids``); positional ones come first.
    """
    out: list[dict[str, Any]] = []
    kwargs = kwargs_of(inputs)
    for name, x in [(None, x) for x in inputs] + list(kwargs.items()):
        entry: dict[str, Any] = {"name": name} if name is not None else {}
        if isinstance(x, torch.Tensor):
            entry.update(shape=[int(n) for n in x.shape], dtype=dtype_name(x.dtype))
        else:
            entry["type"] = type(x).__name__
        out.append(entry)
    return out


def batch_of(inputs: tuple[Any, ...]) -> int | None:
    """The leading dimension of the first tensor input with at least one dimension
    (positional inputs first, then keyword inputs)."""
    for x in [*inputs, *kwargs_of(inputs).values()]:
        if isinstance(x, torch.Tensor) and x.dim() >= 1:
            return int(x.shape[0])
    return None


# -- outputs as trees of tensors --------------------------------------------------------------

#: Deeper output trees are taken as cyclic: what lies below is one leaf.
MAX_OUTPUT_DEPTH = 64


def output_leaves(out: Any, path: str = "output") -> list[tuple[str, Any]]:
    """Every leaf of an output tree with its path (``output['logits']``, ``output.hidden[0]``).

    Tensors are leaves; tuples and lists (named tuples by field), ``Mapping`` types
    and dataclass instances are flattened recursively, as is any type registered
    with ``torch.utils._pytree``. Anything else (None, numbers, strings) is a leaf.
    """
    leaves: list[tuple[str, Any]] = []
    _flatten(out, path, leaves, 0)
    return leaves


def _flatten(obj: Any, path: str, leaves: list[tuple[str, Any]], depth: int) -> None:
    children = None if depth >= MAX_OUTPUT_DEPTH else _children(obj, path)
    if children is None:
        leaves.append((path, obj))
        return
    for child_path, child in children:
        _flatten(child, child_path, leaves, depth + 1)


def _children(obj: Any, path: str) -> list[tuple[str, Any]] | None:
    """The direct children of a tree node with their paths; None for a leaf."""
    if isinstance(obj, torch.Tensor) or obj is None or isinstance(obj, (str, bytes, int, float)):
        return None
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return [(f"{path}.{name}", v) for name, v in zip(obj._fields, obj)]
    if isinstance(obj, (tuple, list)):
        return [(f"{path}[{i}]", v) for i, v in enumerate(obj)]
    if isinstance(obj, Mapping):
        return [(f"{path}[{k!r}]", v) for k, v in obj.items()]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [(f"{path}.{f.name}", getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    if pytree.tree_is_leaf(obj):
        return None
    flat, _ = pytree.tree_flatten_with_path(obj)
    return [(path + pytree.keystr(keys), v) for keys, v in flat]


def floating_leaves(out: Any) -> list[torch.Tensor]:
    """The floating tensors of an output tree, in tree order."""
    if isinstance(out, torch.Tensor):
        return [out] if out.is_floating_point() else []
    return [
        leaf
        for _, leaf in output_leaves(out)
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point()
    ]


def default_loss(out: Any) -> torch.Tensor:
    """Mean of squares over every element of every floating tensor of the output.

    Computed in fp32 at least (fp64 outputs stay fp64).
    """
    tensors = floating_leaves(out)
    if not tensors:
        raise ValueError(
            "the model's output holds no floating tensor to take a loss of: give the factory a "
            "loss, (model, inputs, loss)"
        )
    if len(tensors) == 1:
        t = tensors[0]
        return t.to(torch.promote_types(t.dtype, torch.float32)).square().mean()
    total = torch.zeros((), dtype=torch.float32, device=tensors[0].device)
    for t in tensors:
        total = total + t.to(torch.promote_types(t.dtype, torch.float32)).square().sum()
    return total / sum(t.numel() for t in tensors)


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
    """The config's model and inputs (CPU), the same for every variant.

    Built-in models are fp32; a factory's model and inputs keep the dtypes it gave.
    """
    kind = config.model
    gen = torch.Generator().manual_seed(config.seed + 1)
    b = config.batch_size
    if kind == "custom":
        workload = load_factory(config)
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


#: The configuration fields a factory may take as arguments, by name.
FACTORY_ARGUMENTS = tuple(spec.name for spec in config_fields())


def factory_arguments(factory: Callable[..., Any], config: BenchmarkConfig) -> dict[str, Any]:
    """The keyword arguments ``factory`` gets: the config's value of each parameter named like a
    configuration field. A parameter without a default that names no field is a FactoryError."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a builtin or C function: nothing to read
        return {}
    kwargs: dict[str, Any] = {}
    missing: list[str] = []
    fields = set(FACTORY_ARGUMENTS)
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind != p.POSITIONAL_ONLY and p.name in fields:
            kwargs[p.name] = getattr(config, p.name)
        elif p.default is p.empty:
            missing.append(p.name)
    extra = parse_factory_args(config.factory_args)
    missing = [m for m in missing if m not in extra]
    if missing:
        raise FactoryError(
            f"the factory {config.factory} needs {', '.join(missing)}: the app passes only "
            "arguments named like a configuration field (batch_size, seed, dtype, device, "
            "workload, ...) and the factory arguments (--factory-args NAME=VALUE); give the "
            "others a default"
        )
    return {**kwargs, **extra}


def load_factory(config: BenchmarkConfig) -> Workload:
    """Call the config's factory: ``(model, inputs[, loss])``, checked, in the dtypes it chose.

    Parameters named like a configuration field get the config's values; what the factory
    prints goes to stderr.
    """
    spec = config.factory
    factory = _import_factory(spec, config.model_path)
    kwargs = factory_arguments(factory, config)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            made = _seeded(config.seed, lambda: factory(**kwargs))
    except Exception as exc:  # noqa: BLE001
        raise FactoryError(f"the factory {spec} raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(made, tuple) or not 2 <= len(made) <= 3:
        got = f"a tuple of {len(made)}" if isinstance(made, tuple) else type(made).__name__
        raise FactoryError(
            f"the factory {spec} must return (model, inputs) or (model, inputs, loss), got {got}"
        )
    model, inputs, *rest = made
    if not isinstance(model, nn.Module):
        raise FactoryError(f"the factory's model is a {type(model).__name__}, not a torch.nn.Module")
    inputs = factory_inputs(inputs)
    tensors = [x for _, x in named_inputs(inputs) if isinstance(x, torch.Tensor)]
    devices = {x.device.type for x in tensors} | {p.device.type for p in model.parameters()}
    if devices - {"cpu"}:
        raise FactoryError(
            "the factory must return the model and inputs on the CPU: the app moves them to the "
            f"chosen device (found {', '.join(sorted(devices))})"
        )
    loss = rest[0] if rest else None
    if loss is not None and not callable(loss):
        raise FactoryError("the factory's loss must be callable: loss(output) -> scalar tensor")
    return Workload(model, inputs, loss)


#: What a keyword input may be besides a tensor (``use_cache=False``, ``return_dict=True``).
_PLAIN_KEYWORD_VALUES = (bool, int, float, str, type(None))

_INPUTS_HINT = (
    "the factory's inputs must be a tensor, a tuple of tensors, a mapping of keyword inputs "
    "({'input_ids': ..., 'attention_mask': ...}: the model is called model(**inputs)) or a "
    "tuple of tensors ending with such a mapping (positional and keyword inputs)"
)


def factory_inputs(inputs: Any) -> tuple[Any, ...]:
    """A factory's inputs as a call's: a tuple, or :class:`CallInputs` with keyword inputs.

    A tensor is one positional input; a tuple of tensors, positional inputs; a ``Mapping``
    of names to tensors, keyword inputs; a tuple whose last item is such a mapping, both.
    Keyword inputs may also be plain values (``use_cache=False``). Anything else is a
    FactoryError saying what is accepted.
    """
    args: tuple[Any, ...]
    kwargs: Mapping[Any, Any] | None
    if isinstance(inputs, Mapping):
        args, kwargs = (), inputs
    elif isinstance(inputs, tuple) and inputs and isinstance(inputs[-1], Mapping):
        args, kwargs = tuple(inputs[:-1]), inputs[-1]
    else:
        args, kwargs = (inputs if isinstance(inputs, tuple) else (inputs,)), None
    if not all(isinstance(x, torch.Tensor) for x in args):
        raise FactoryError(_INPUTS_HINT)
    if kwargs is None:
        return tuple(args)
    named: dict[str, Any] = {}
    for key, value in kwargs.items():
        if not isinstance(key, str) or not key.isidentifier():
            raise FactoryError(f"the factory's keyword input {key!r} is not a Python name")
        if not isinstance(value, (torch.Tensor, *_PLAIN_KEYWORD_VALUES)):
            raise FactoryError(
                f"the factory's keyword input {key} is a {type(value).__name__}: {_INPUTS_HINT}"
            )
        named[key] = value
    return CallInputs(args, named)


def conversions(workload: Workload, dtype: torch.dtype | None, config_dtype: str) -> list[str]:
    """Sentences for every dtype conversion of a factory's model and inputs to ``dtype``."""
    if dtype is None:
        return []
    out: list[str] = []
    target = dtype_name(dtype)
    given = floating_dtypes(workload.model)
    if given and given != {dtype}:
        was = " and ".join(sorted(dtype_name(d) for d in given))
        out.append(
            f"the factory's model was {was}; it ran in {target} as the configuration's dtype "
            f"({config_dtype}) says"
        )
    for name, x in named_inputs(workload.inputs):
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != dtype:
            out.append(
                f"the factory's {name if name.startswith('input ') else 'input ' + name} was "
                f"{dtype_name(x.dtype)}; it ran in {target} as the configuration's dtype "
                f"({config_dtype}) says"
            )
    return out


def count_flops(workload: Workload, training: bool, dtype: torch.dtype | None = None) -> int | None:
    """FLOPs of one call (a forward, or forward + backward) counted by ``FlopCounterMode``.

    Counted on copies (the model and inputs at ``dtype``, None: as they are), with
    torch's and Python's random states put back after: the workload, its
    parameters, buffers (BatchNorm's running statistics) and the random numbers
    that follow are as they were.
    """
    try:
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:  # pragma: no cover - very old torch
        return None
    python_state = random.getstate()
    try:
        with torch.random.fork_rng(devices=[]):
            copied = Workload(
                copy.deepcopy(workload.model), copy.deepcopy(workload.inputs), workload.loss
            ).to(torch.device("cpu"), dtype)
            return _count(copied, training, FlopCounterMode)
    except Exception:  # noqa: BLE001 - a model the counter cannot follow has no FLOP figure
        return None
    finally:
        random.setstate(python_state)


def _count(workload: Workload, training: bool, counter_type: Any) -> int:
    model = workload.model
    counter = counter_type(display=False)
    # train mode also for inference: eval-mode fused paths (TransformerEncoderLayer's) escape
    # the counter; on a copy, so BatchNorm's running statistics of the workload stay
    model.train()
    if training:
        with counter:
            out = call_model(model, workload.inputs)
            (workload.loss or default_loss)(out).backward()
    else:
        with counter, torch.no_grad():
            call_model(model, workload.inputs)
    return int(counter.get_total_flops())
