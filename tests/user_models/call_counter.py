"""A model whose forward counts its calls in a Python attribute (each new value is guarded)."""

from __future__ import annotations

import torch
from torch import nn


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 8)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.lin(x) * (1.0 + 0.0 * self.calls)


def make_model(batch_size: int = 4):
    return Counting(), torch.randn(batch_size, 16)
