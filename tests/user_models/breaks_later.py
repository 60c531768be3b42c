"""A model that works for its first few calls in the process, then raises on every call."""

from __future__ import annotations

import torch
from torch import nn


class BreaksLater(nn.Module):
    calls = 0  # on the class: shared by every copy the run makes

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        type(self).calls += 1
        if type(self).calls > 8:
            raise RuntimeError("the model's state ran out")
        return self.lin(x)


def make_model():
    return BreaksLater(), torch.randn(2, 4)
