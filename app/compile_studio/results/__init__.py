"""Run results: data model, statistics, and the run store on disk (no Qt, no torch)."""

from .run_result import RunResult, VariantResult
from .samples import VariantSamples
from .store import RunDamaged, RunStore, RunWriter, load_run
from .summary import SummaryRow, summarize

__all__ = [
    "RunResult",
    "SummaryRow",
    "VariantResult",
    "VariantSamples",
    "summarize",
    "RunDamaged",
    "RunStore",
    "RunWriter",
    "load_run",
]
