"""An MLP whose factory takes the batch size, as a Compile Studio factory.

A factory may take keyword parameters named like configuration fields: the
run passes ``batch_size`` (the form's *Batch*, ``--batch-size``), so a batch
sweep builds new inputs at each point:

    compile-studio-cli sweep --param batch_size --values 1,16,256 \\
        --factory examples/mlp_batch.py:make_model --variants eager,default
"""

import torch
from torch import nn


def make_model(batch_size: int = 32):
    model = nn.Sequential(
        nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 10)
    )
    inputs = torch.randn(batch_size, 256)
    return model, inputs
