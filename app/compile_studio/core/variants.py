"""The variant words: eager, its A/A control, and the variants that record CUDA graphs.

A variant is a name in the configuration's ``variants``: ``eager`` (the model
as written, the baseline every speedup is measured against), the A/A control
(a second, independent copy of eager, whose speedup measures this machine's
noise floor), or a torch.compile mode or backend. Every layer asks these
questions here, never by writing the names out.
"""

from __future__ import annotations

from collections.abc import Iterable

#: The model as written, without torch.compile: the baseline of every speedup.
EAGER = "eager"
#: A second, independent copy of eager: its speedup measures this machine's noise floor.
AA_CONTROL = "eager-aa"
#: Variants that run without torch.compile.
EAGER_VARIANTS = (EAGER, AA_CONTROL)
#: Compile modes and backends that record CUDA graphs (on a CUDA device).
CUDAGRAPH_VARIANTS = ("reduce-overhead", "max-autotune", "cudagraphs")
#: CUDA-graph based modes record on the first calls after warm-up starts; they
#: need a few warm-up calls before the timed window is steady state.
CUDAGRAPH_MIN_WARMUP = 3


def is_eager(name: str) -> bool:
    """Eager and its A/A control run without torch.compile."""
    return name in EAGER_VARIANTS


def is_aa_control(name: str) -> bool:
    """The A/A control: eager measured again as a second, independent copy."""
    return name == AA_CONTROL


def records_cudagraphs(name: str) -> bool:
    """A compile mode or backend that records CUDA graphs when it runs on a CUDA device."""
    return name in CUDAGRAPH_VARIANTS


def compiled_variants(names: Iterable[str]) -> list[str]:
    """The variants of ``names`` that run under torch.compile, in their order."""
    return [n for n in names if not is_eager(n)]
