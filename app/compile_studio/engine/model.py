"""The benchmarked model: an MLP built from layer sizes."""

from __future__ import annotations

import types

import torch
from torch import nn

_ACTIVATIONS = {
    "gelu": nn.GELU,
    "relu": nn.ReLU,
    "silu": nn.SiLU,
    "tanh": nn.Tanh,
    "none": nn.Identity,
}

TORCH_DTYPES = {
    "fp32": torch.float32,
    "tf32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
}


class MLP(nn.Module):
    """Linear layers of the given widths with an activation between them."""

    def __init__(self, sizes: list[int], activation: str = "gelu"):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
        self.act = _ACTIVATIONS[activation]()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < last:
                x = self.act(x)
        return x


def mlp_class_for(variant: str) -> type[MLP]:
    """A subclass of MLP whose ``forward`` has a code object of its own.

    Dynamo caches compiled code per code object; giving each variant its own
    keeps one variant's graphs from counting as another's recompiles (and from
    using up the recompile limit when several variants live side by side).
    """
    code = MLP.forward.__code__.replace(co_name=f"forward_{variant.replace('-', '_')}")
    forward = types.FunctionType(code, MLP.forward.__globals__, code.co_name)
    return type(f"MLP_{variant.replace('-', '_')}", (MLP,), {"forward": forward})


def build_model(sizes: list[int], activation: str, seed: int, variant: str = "") -> MLP:
    """The MLP with weights drawn from ``seed`` (identical for every variant), on CPU, fp32."""
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        cls = mlp_class_for(variant) if variant else MLP
        return cls(sizes, activation)
    finally:
        torch.random.set_rng_state(gen_state)
