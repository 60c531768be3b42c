"""A model that normalises by a Python float it reads with ``.item()`` each call (a graph break)."""

from __future__ import annotations

import torch
from torch import nn


class Normalised(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.out = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.inp(x))
        scale = h.abs().max().item()
        return self.out(h / (scale + 1.0))


def make_model(batch_size: int = 8):
    return Normalised(), torch.randn(batch_size, 16)
