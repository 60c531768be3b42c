"""A token model called as Hugging Face models are: ``model(input_ids=..., attention_mask=...)``."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class MaskedOutput:
    """Shaped like a Hugging Face ModelOutput: named tensors, one of them an integer tensor."""

    logits: torch.Tensor
    pooled: torch.Tensor
    top: torch.Tensor


class MaskedTokens(nn.Module):
    def __init__(self, vocab: int = 40, d: int = 16) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.proj = nn.Linear(d, d)
        self.head = nn.Linear(d, vocab)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        scale: torch.Tensor | None = None,
    ) -> MaskedOutput:
        h = torch.tanh(self.proj(self.emb(input_ids)))
        if scale is not None:
            h = h * scale
        mask = attention_mask.unsqueeze(-1).to(h.dtype) if attention_mask is not None else 1.0
        pooled = (h * mask).sum(1) / mask.sum(1).clamp_min(1.0) if attention_mask is not None else h.mean(1)
        logits = self.head(h)
        return MaskedOutput(logits, pooled, logits.argmax(-1))


def _batch(batch_size: int = 4, seq: int = 32) -> dict[str, torch.Tensor]:
    ids = torch.randint(0, 40, (batch_size, seq))
    mask = torch.ones(batch_size, seq, dtype=torch.int64)
    mask[:, seq - 4:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def make_model(batch_size: int = 4):
    """Keyword inputs alone: a dict, as a tokenizer gives."""
    return MaskedTokens(), _batch(batch_size)


def make_positional_and_keyword():
    """``model(ids, attention_mask=..., scale=...)``: a tuple ending with the keywords."""
    inputs = _batch()
    return MaskedTokens(), (inputs["input_ids"], {"attention_mask": inputs["attention_mask"],
                                                  "scale": torch.full((1, 1, 16), 0.5)})
