"""An MLP with Dropout (active in training mode), and one drawing noise with Python's RNG."""

from __future__ import annotations

import random

import torch
from torch import nn


def make_model():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 8))
    return model, torch.randn(4, 16)


class PythonNoise(nn.Module):
    """Random with any torch seed: the noise comes from Python's own generator."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * (1.0 + random.random())


def make_python_noise():
    return PythonNoise(), torch.randn(4, 16)
