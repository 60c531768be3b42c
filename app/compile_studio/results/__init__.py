"""Run results: data model, statistics, and the run store on disk (no Qt, no torch)."""

from .run_result import RunResult, SummaryRow, VariantResult, VariantSamples, summarize
from .store import RunDamaged, RunStore, RunWriter, load_run

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
