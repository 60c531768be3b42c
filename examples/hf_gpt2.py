"""A small GPT-2 from Hugging Face ``transformers``, called with keyword inputs, as a factory.

Built from a ``GPT2Config`` with random weights: nothing is downloaded. The
inputs are what a tokenizer gives — a dict of ``input_ids`` and
``attention_mask`` — and the model is called ``model(**inputs)``; its output
is a ``ModelOutput`` whose floating leaves (the logits) are checked:

    compile-studio-cli run --factory examples/hf_gpt2.py:make_model --variants eager,default

Needs ``pip install transformers``.
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def make_model(batch_size: int = 4, seed: int = 0):
    config = GPT2Config(
        vocab_size=512, n_positions=64, n_embd=64, n_layer=2, n_head=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
    )
    model = GPT2LMHeadModel(config)
    generator = torch.Generator().manual_seed(seed)
    seq = 32
    input_ids = torch.randint(0, config.vocab_size, (batch_size, seq), generator=generator)
    attention_mask = torch.ones(batch_size, seq, dtype=torch.int64)
    attention_mask[:, -4:] = 0  # a padded tail, as a batch of unequal texts has
    return model, {"input_ids": input_ids, "attention_mask": attention_mask}
