"""``compile-studio-cli why RUN [VARIANT]``: why a saved run's variants are as fast as they are.

Prints, per variant, the sentence (launch-, dispatch- or compute-bound and
what compile changes), the top operators or kernels of the profiled calls,
compile time by phase, graph breaks and recompiles with their reasons and
source lines, CUDA-graph skips, the output code files and the Chrome trace
(for ui.perfetto.dev). RUN is resolved as ``show`` resolves it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..results import RunDamaged, RunStore, load_run
from ..results.explain.why import why_text
from ..results.explain.why_files import load_why
from ..results.storage.locations import default_run_store
from .common import EXIT_BAD_CONFIG as EXIT_BAD
from .common import EXIT_FAILED, EXIT_OK, RUN_REF_HELP, RunNotFound, resolve_run


def register(sub: Any) -> None:
    """Add the ``why`` command to the CLI's subparsers."""
    parser = sub.add_parser(
        "why", help="why a saved run's variants are faster or slower (profile, compile, breaks)",
        description=__doc__, epilog=RUN_REF_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", metavar="RUN", help="run id, unique prefix, latest, latest~N, list index or path")
    parser.add_argument("variant", metavar="VARIANT", nargs="?", help="one variant (default: all)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="run store folder (default: the app's)")
    parser.set_defaults(handler=cmd_why)


def cmd_why(args: argparse.Namespace) -> int:
    store = RunStore(args.out or default_run_store())
    try:
        path = resolve_run(args.run, store)
    except RunNotFound as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_BAD
    try:
        run = load_run(path)
    except RunDamaged as exc:
        sys.stderr.write(f"error: {path}: {exc}\n")
        return EXIT_FAILED
    folder = path if path.is_dir() else path.parent
    report = load_why(folder)
    if args.variant and not report.absent and args.variant not in report.variants:
        known = ", ".join(report.variants) or "none"
        sys.stderr.write(f"error: {args.variant}: no diagnostics for this variant (there are: {known})\n")
        return EXIT_BAD
    sys.stdout.write(f"{run.title()}  [{run.status}]  run {run.run_id}\n\n")
    sys.stdout.write(why_text(run, report, args.variant))
    return EXIT_OK if not report.absent else EXIT_FAILED
