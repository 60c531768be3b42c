"""``compile-studio-cli advise RUN``: what to try next, from a saved run's evidence, ranked.

Reads the run (run.json) and its diagnostics (why.json) and prints the
suggestions of the advice rules, ranked by the effect the evidence allows:
what compile did not run as one graph first, then the time of every call,
then the one-off compile time. Each says what the run showed, the change —
a configuration delta, or a code change at a file:line (shown, not tried) —
and the PyTorch page recommending it. RUN is resolved as ``show`` resolves
it. docs/advice.md lists the rules.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..results import RunDamaged, RunStore, load_run
from ..results.advice import advice_text, gather, load_why
from ..results.advice_rules import advise
from ..results.locations import default_run_store
from ..results.summary_cache import summary_of
from ..results.terminal import escape_controls
from .common import EXIT_BAD_CONFIG as EXIT_BAD
from .common import EXIT_FAILED, EXIT_OK, RUN_REF_HELP, RunNotFound, resolve_run


def add_parser(sub: Any) -> None:
    """Add the ``advise`` command to the CLI's subparsers."""
    parser = sub.add_parser(
        "advise", help="what to try next for a saved run, ranked by the effect its evidence allows",
        description=__doc__, epilog=RUN_REF_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", metavar="RUN", help="run id, unique prefix, latest, latest~N, list index or path")
    parser.add_argument("--out", type=Path, metavar="DIR", help="run store folder (default: the app's)")
    parser.set_defaults(handler=main)


#: The name ``cli.py`` registers command modules by.
register = add_parser


def main(args: argparse.Namespace) -> int:
    """Print the ranked suggestions for ``args.run``; the CLI's exit code."""
    out, err = sys.stdout, sys.stderr
    store = RunStore(args.out or default_run_store())
    try:
        path = resolve_run(args.run, store)
    except RunNotFound as exc:
        err.write(escape_controls(f"error: {exc}\n"))
        return EXIT_BAD
    try:
        run = load_run(path)
    except RunDamaged as exc:
        err.write(escape_controls(f"error: {path}: {exc}\n"))
        return EXIT_FAILED
    folder = path if path.is_dir() else path.parent
    report = load_why(folder)
    facts = gather(run, report, summary_of(run))
    out.write(escape_controls(f"{run.title()}  [{run.status}]  run {run.run_id}\n\n"))
    if report.absent:
        out.write(escape_controls(f"note: {report.absent}; only the run's own figures were read\n\n"))
    out.write(advice_text(advise(facts)))
    return EXIT_OK
