"""tf32 matmuls that truncate (as Triton's do) pass the checks; a 1 % scale error still fails."""

from __future__ import annotations

import torch

from compile_studio.engine import checks

#: the 13 low mantissa bits fp32 has and tf32 has not
_LOW_BITS = (1 << 13) - 1


def _truncated(t: torch.Tensor) -> torch.Tensor:
    """fp64 → fp32 → tf32 by dropping the low bits (toward zero), back in fp64."""
    bits = t.to(torch.float32).view(torch.int32)
    return (bits & ~_LOW_BITS).view(torch.float32).to(torch.float64)


def _rounded(t: torch.Tensor) -> torch.Tensor:
    """fp64 → fp32 → tf32 rounded to nearest (as cuBLAS converts), back in fp64."""
    bits = t.to(torch.float32).view(torch.int32)
    return ((bits + (1 << 12)) & ~_LOW_BITS).view(torch.float32).to(torch.float64)


def _mlp(x: torch.Tensor, layers, operand=lambda t: t) -> torch.Tensor:
    """The benchmark MLP (GELU between layers); matmul operands through ``operand``, fp32 sums."""
    for i, (w, b) in enumerate(layers):
        x = (operand(x) @ operand(w).T).to(torch.float32).to(torch.float64) + b
        if i < len(layers) - 1:
            x = torch.nn.functional.gelu(x)
    return x


def test_truncating_tf32_is_correct_and_a_one_percent_scale_error_is_not():
    torch.manual_seed(0)
    sizes = [1024, 1024, 512, 10]  # the default model
    layers = [
        (lin.weight.detach().double(), lin.bias.detach().double())
        for lin in (torch.nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
    ]
    x = torch.randn(256, sizes[0], dtype=torch.float64)
    ref = _mlp(x, layers)
    eager = checks.deviation(_mlp(x, layers, _rounded), ref)
    truncated = checks.deviation(_mlp(x, layers, _truncated), ref)
    assert checks.judge("tf32", eager, None)[0]
    # the truncation's bias is real: far beyond the old 2e-4 gain bound
    assert abs(truncated.gain - 1.0) > 1e-3
    ok, why = checks.judge("tf32", truncated, eager)
    assert ok, why
    scaled = checks.deviation(_mlp(x, layers, _truncated) * 1.01, ref)
    ok, why = checks.judge("tf32", scaled, eager)
    assert not ok and "scaled by" in why
