"""``compile-studio-cli advise RUN``: what to try next, from a saved run's evidence, ranked — and trying it.

Reads the run (run.json) and its diagnostics (why.json) and prints the
suggestions of the advice rules, ranked by the effect the evidence allows:
what compile did not run as one graph first, then the time of every call,
then the one-off compile time. Each says what the run showed, the change —
a configuration delta, or a code change at a file:line (shown, not tried) —
and the PyTorch page recommending it. RUN is resolved as ``show`` resolves
it. Below the suggestions: what was tried on this run, and what it gave.

``--try N`` (a number of the list; ``1,3`` for several) or ``--try all``
(every configuration change) measures the run's configuration (A) against
each suggestion's (B): A then each B, for ``--rounds`` rounds (default 3),
each run a whole run kept in ``RUN/trials/<time>_trial_<rules>/`` with
trial.json. Each suggestion is judged on the figure it changes (time per
call; per sample for a batch change; the first call for a cache change)
with the verdict words of a run — faster, slower, cannot tell, incorrect —
with A run twice per round, before and after B, as the A/A control. Ctrl+C keeps the rounds
measured. docs/advice.md lists the rules and how a suggestion is tried.
Exit codes: 0 done (whatever the verdict), 2 bad input or a refusal, 3
failure (the run's own configuration could not run), 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.config import ConfigError
from ..results import RunDamaged, RunResult, RunStore, load_run
from ..results.explain.why_files import WhyReport
from ..results.records.trial_record import (
    COMPLETE,
    MAX_TRIAL_ROUNDS,
    MIN_TRIAL_ROUNDS,
    ROLE_A,
    ROLE_A_END,
    RUNNING,
    TrialRecord,
)
from ..results.report.terminal import escape_controls
from ..results.storage.locations import default_run_store
from ..results.storage.summary_cache import summary_of
from ..results.suggestions.advice import Suggestion, advice_text, gather, load_why
from ..results.suggestions.advice_rules import advise
from ..results.suggestions.trial_judge import fmt_figure
from ..results.suggestions.what_to_try import WhatToTry, round_figures, trial_table, tried_lines
from .common import EXIT_BAD_CONFIG as EXIT_BAD
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    RUN_REF_HELP,
    RunNotFound,
    code_agreed,
    print_problems,
    resolve_run,
)
from .job_end import report_end, run_to_end


def add_parser(sub: Any) -> None:
    """Add the ``advise`` command to the CLI's subparsers."""
    parser = sub.add_parser(
        "advise", help="what to try next for a saved run, ranked by the effect its evidence allows; "
        "--try measures it",
        description=__doc__, epilog=RUN_REF_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", metavar="RUN", help="run id, unique prefix, latest, latest~N, list index or path")
    parser.add_argument("--out", type=Path, metavar="DIR", help="run store folder (default: the app's)")
    parser.add_argument(
        "--try", dest="try_", metavar="N|all",
        help="measure suggestion N of the list (1,3 for several; all: every configuration change) "
        "against the run's configuration, in alternating rounds",
    )
    parser.add_argument(
        "--rounds", type=int, default=None, metavar="K",
        help=f"with --try: rounds of A then each B ({MIN_TRIAL_ROUNDS}–{MAX_TRIAL_ROUNDS}, "
        f"default {MIN_TRIAL_ROUNDS})",
    )
    parser.add_argument(
        "--trust-code", action="store_true",
        help="with --try: run the factory or backend modules the run names without asking "
        "(without it: asked on a terminal, refused otherwise)",
    )
    parser.set_defaults(handler=main)


#: The name ``cli.py`` registers command modules by.
register = add_parser


def main(args: argparse.Namespace) -> int:
    """Print the ranked suggestions for ``args.run`` (and try them with ``--try``); the CLI's exit code."""
    err = sys.stderr
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
    suggestions = advise(facts)
    chosen = getattr(args, "try_", None)
    if chosen is None:
        if getattr(args, "rounds", None) is not None:
            err.write("error: --rounds goes with --try\n")
            return EXIT_BAD
        _print_advice(run, report, suggestions, folder)
        return EXIT_OK
    return _try(args, run, folder, suggestions, str(chosen))


def _print_advice(run: RunResult, report: WhyReport, suggestions: list[Suggestion], folder: Path) -> None:
    from ..results.records.trial_load import trials_of

    out = sys.stdout
    out.write(escape_controls(f"{run.title()}  [{run.status}]  run {run.run_id}\n\n"))
    if report.absent:
        out.write(escape_controls(f"note: {report.absent}; only the run's own figures were read\n\n"))
    out.write(advice_text(suggestions))
    lines = tried_lines(WhatToTry(suggestions=suggestions, trials=trials_of(folder, run.run_id)))
    if lines:
        out.write("\n" + escape_controls("\n".join(lines)) + "\n")


def _chosen(which: str, suggestions: list[Suggestion]) -> list[int] | str:
    """The 1-based numbers ``--try`` names, or a one-line reason why it names none."""
    from ..jobs.trial import not_tried_reason

    n = len(suggestions)
    if not n:
        return "nothing to try: no rule's evidence is in this run"
    if which.strip().lower() == "all":
        picked = [k for k, s in enumerate(suggestions, 1) if not_tried_reason(s) is None]
        if not picked:
            return (
                f"nothing to try: none of the {n} suggestions is a configuration change "
                "(code changes are shown, not tried)"
            )
        return picked
    picked = []
    for part in which.split(","):
        part = part.strip()
        if not part.isdigit() or not 1 <= int(part) <= n:
            return f"--try {which[:40]}: give a number of the list (1–{n}), several as 1,3, or all"
        if int(part) not in picked:
            picked.append(int(part))
    for k in picked:
        reason = not_tried_reason(suggestions[k - 1])
        if reason is not None:
            return f"suggestion {k} ({suggestions[k - 1].rule}): {reason}"
    return picked


def _label(record: TrialRecord, role: str) -> str:
    if role == ROLE_A:
        return "A (the run's configuration)"
    if role == ROLE_A_END:
        return "A again (the A/A control)"
    s = record.suggestion(role)
    return f"{role} ({s.rule}: {s.delta_text()})" if s is not None else role


def _progress(record: TrialRecord, r: int, role: str) -> None:
    """One line per run as it starts and ends, and each round's ratio once it is the one the
    final table holds (stderr): B's run gives its figure, A's run after it the round's ratio."""
    run = next((x for x in record.runs if x.round == r and x.role == role), None)
    if run is None:
        return
    where = f"round {r}/{record.rounds} · {_label(record, role)}"
    lines = []
    if run.status == RUNNING:
        text = f"{where}: running…"
    else:
        text = f"{where}: {run.status}" + (f": {run.message}" if run.message and run.status != COMPLETE else "")
        s = record.suggestion(role)
        rf = next((x for x in s.rounds if x.round == r), None) if s is not None else None
        if s is not None and rf is not None and rf.b is not None:
            # the ratio waits for A's run after B: A is the mean of the two that bracket B
            text += f" · {s.figure_text()}: B {fmt_figure(rf.b)} ms (the ratio follows A's run again)"
        elif role == ROLE_A_END:
            for s in record.suggestions:
                rf = next((x for x in s.rounds if x.round == r), None)
                if rf is not None and rf.ratio is not None:
                    lines.append(f"round {r}/{record.rounds} · {s.index}. {s.rule} · {s.figure_text()}: {round_figures(rf)}")
    for line in [text, *lines]:
        sys.stderr.write(escape_controls(line) + "\n")
    sys.stderr.flush()


def _try(args: argparse.Namespace, run: RunResult, folder: Path, suggestions: list[Suggestion], which: str) -> int:
    from ..jobs.sweep import local_session
    from ..jobs.trial import TrialRunner, new_trial, tried_configs

    err = sys.stderr
    picked = _chosen(which, suggestions)
    if isinstance(picked, str):
        err.write(escape_controls(f"error: {picked}\n"))
        return EXIT_BAD
    rounds = args.rounds if args.rounds is not None else MIN_TRIAL_ROUNDS
    if not MIN_TRIAL_ROUNDS <= rounds <= MAX_TRIAL_ROUNDS:
        err.write(f"error: --rounds must be {MIN_TRIAL_ROUNDS}–{MAX_TRIAL_ROUNDS}\n")
        return EXIT_BAD
    chosen = [(k, suggestions[k - 1]) for k in picked]
    try:
        configs = tried_configs(run, folder, chosen)
    except ConfigError as exc:
        print_problems(exc.problems, "Cannot try it")
        return EXIT_BAD
    agreement = code_agreed(configs, f"the run {folder}", args, from_flags=False)
    if agreement is None:
        return EXIT_BAD
    try:
        trial = new_trial(run, folder, chosen, rounds)
    except ConfigError as exc:
        print_problems(exc.problems, "Cannot try it")
        return EXIT_BAD
    except OSError as exc:
        err.write(escape_controls(
            f"error: cannot create the trial folder in {folder / 'trials'}: {exc.strerror or exc}\n"
        ))
        return EXIT_FAILED
    out = sys.stdout
    out.write(escape_controls(f"{run.title()}  [{run.status}]  run {run.run_id}\n"))
    record = trial.snapshot()
    out.write(
        f"trying {len(record.suggestions)} suggestion(s) in {rounds} rounds: A (the run's configuration), "
        "then each B (with the suggestion), then A again, round after round\n"
    )
    for s in record.suggestions:
        out.write(escape_controls(f"  {s.key} = {s.index}. {s.rule} ({s.delta_text()}): judged on {s.figure_text()}\n"))
    out.flush()
    runner = TrialRunner(trial, on_run=_progress, session_factory=agreement.sessions(local_session))
    outcome = run_to_end(runner, "the rounds measured")
    return report_end(outcome, "comparison", lambda record, to: to.write("\n" + escape_controls(trial_table(record))))
