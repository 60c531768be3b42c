"""A small transformer block whose output is a dict, or a dataclass like Hugging Face's outputs."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, vocab: int = 50, d: int = 32, heads: int = 4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, 64), nn.GELU(), nn.Linear(64, d))
        self.norm2 = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab)

    def hidden(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.emb(tokens)
        x = self.norm1(x + self.attn(x, x, x, need_weights=False)[0])
        return self.norm2(x + self.ffn(x))


class DictBlock(Block):
    def forward(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        hidden = self.hidden(tokens)
        return {"logits": self.lm_head(hidden), "hidden": hidden}


@dataclass
class BlockOutput:
    """Shaped like a Hugging Face ModelOutput: named tensors, some of them nested."""

    logits: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...]
    aux: dict[str, torch.Tensor]


class DataclassBlock(Block):
    def forward(self, tokens: torch.Tensor) -> BlockOutput:
        first = self.emb(tokens)
        hidden = self.hidden(tokens)
        logits = self.lm_head(hidden)
        aux = {"norm": hidden.norm(dim=-1), "top": logits.argmax(dim=-1)}
        return BlockOutput(logits, (first, hidden), aux)


def _tokens() -> torch.Tensor:
    return torch.randint(0, 50, (2, 8))


def make_model():
    return DictBlock(), _tokens()


def make_dataclass_model():
    return DataclassBlock(), _tokens()
