"""Run results (no Qt, no torch), grouped by purpose in sub-packages.

``storage`` is the run store on disk (run folders and their files, job record
folders, atomic writes, locks, the default location); ``records`` what each
job kind records and the checks every value read back passes; ``analysis`` the
statistics, samples, summary table and verdicts; ``explain`` why a variant is
as fast as it is; ``suggestions`` what to try and the verdicts of trying it;
``report`` a run in words and files for people (formatting, terminal text,
export). The names below are the ones most callers need.
"""

from .analysis.samples import VariantSamples
from .analysis.summary import SummaryRow, summarize
from .records.run_result import RunResult, VariantResult
from .records.schema import RunDamaged
from .storage.run_files import RunWriter
from .storage.run_load import load_run
from .storage.store import RunStore

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
