"""A data-dependent branch (``if h.sum() > 0:``) and, in ``make_two_breaks``, a second break."""

from __future__ import annotations

import torch
from torch import nn


class Branch(nn.Module):
    def __init__(self, second: bool = False) -> None:
        super().__init__()
        self.first = nn.Linear(16, 16)
        self.second_layer = nn.Linear(16, 8)
        self.second = second

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.first(x)
        if h.sum() > 0:
            h = h * 2.0
        if self.second:
            scale = float(h.abs().max())
            h = h / scale
        return self.second_layer(h)


def make_model():
    return Branch(), torch.randn(4, 16)


def make_two_breaks():
    return Branch(second=True), torch.randn(4, 16)
