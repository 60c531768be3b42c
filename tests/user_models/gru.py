"""A GRU over a short sequence: Dynamo gives up on it unless torch._dynamo.config.allow_rnn is set."""

from __future__ import annotations

import torch
from torch import nn


class Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(8, 16, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out[:, -1])


def make_model():
    return Recurrent(), torch.randn(2, 5, 8)
