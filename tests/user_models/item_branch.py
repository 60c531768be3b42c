"""A branch on a value read with ``.item()``: dropping ``.item()`` still leaves a data-dependent branch."""

from __future__ import annotations

import torch
from torch import nn


class ItemBranch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(16, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        if h.mean().item() > 0.0:
            h = h * 2.0
        return self.out(h)


def make_model():
    return ItemBranch(), torch.randn(4, 16)
