"""A factory that takes the configuration's batch size and seed."""

from __future__ import annotations

import torch
from torch import nn


def make_model(batch_size=8, *, seed=0):
    model = nn.Sequential(nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))
    return model, torch.randn(batch_size, 16)


def make_needs_width(width):
    return nn.Linear(width, 4), torch.randn(2, width)


def make_with_options():
    return nn.Linear(16, 4), torch.randn(2, 16), None, {"compile": "yes"}
