"""A pre-norm transformer block whose forward returns a dict, as a Compile Studio factory.

The Hugging Face convention: the output is a dict (``logits`` and
``hidden_states``); the correctness check compares every tensor in it, and a
training step's default loss is the mean of squares over all of them (here the
factory gives its own: cross-entropy on the logits).

    compile-studio-cli run --factory examples/transformer_dict.py:make_model --variants eager,default
"""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d: int, heads: int, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.lm_head = nn.Linear(d, vocab)

    def forward(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        x = self.embed(tokens)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.mlp(self.ln2(x))
        return {"logits": self.lm_head(x), "hidden_states": x}


def make_model():
    vocab = 256
    model = Block(d=64, heads=4, vocab=vocab)
    tokens = torch.randint(0, vocab, (2, 32))  # token ids stay integers on any dtype

    def loss(out: dict[str, torch.Tensor]) -> torch.Tensor:
        logits = out["logits"].float()
        return nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens.reshape(-1))

    return model, tokens, loss
