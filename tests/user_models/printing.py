"""A model that prints in ``forward``, as users debug: the CLI shows what it prints."""

from __future__ import annotations

import torch
from torch import nn


class Printing(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        print("forward sees", tuple(x.shape))
        return self.lin(x)


def make_model():
    print("building the printing model")
    return Printing(), torch.randn(2, 4)
