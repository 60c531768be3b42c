"""Run results: data model, statistics, and the run store on disk (no Qt, no torch)."""

from .run_files import RunWriter
from .run_load import load_run
from .run_result import RunResult, VariantResult
from .samples import VariantSamples
from .schema import RunDamaged
from .store import RunStore
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
