"""A forward that pins its dtype (``x.to(torch.float32)``, as mixed-precision code does): no fp64 run."""

from __future__ import annotations

import torch
from torch import nn


class Pinned(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 32)
        self.head = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(torch.float32)
        h = torch.relu(self.proj(x)).to(torch.float32)
        return self.head(h)


def make_model():
    return Pinned(), torch.randn(4, 16)
