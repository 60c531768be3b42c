"""A model and its inputs made in bf16, which the app must measure as given."""

from __future__ import annotations

import torch
from torch import nn


def make_model():
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8)).to(torch.bfloat16)
    return model, torch.randn(4, 16, dtype=torch.bfloat16)


def make_with_fp32_inputs():
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8)).to(torch.bfloat16)
    return model, torch.randn(4, 16)
