"""How the CLI runs any job to its end: Ctrl+C stops it, then its table, where it is kept, the exit code.

A sweep, a shape sweep and a "try it" comparison each end the same way on a
terminal (a run adds its live table and stderr tail, ``commands.cmd_run``):
the job runs with Ctrl+C and SIGTERM asking it to stop (once, keeping what it
measured); a configuration the worker refused is listed, with where the job
is kept; otherwise the job's table is printed, then ``saved: FOLDER`` (or
what could not be written), and the exit code says how it ended.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TextIO

from ..core.config import ConfigProblem
from ..jobs.job import Job
from ..results.report.terminal import escape_controls
from .common import (
    EXIT_BAD_CONFIG,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    interrupts_stop,
    print_problems,
)

__all__ = ["JobEnd", "report_end", "run_to_end"]


class JobEnd(Protocol):
    """What a job's ``run()`` returns, as far as the terminal needs it."""

    record: Any
    folder: Path
    stop_requested: bool
    write_error: str | None


def run_to_end(job: Job, keeping: str) -> Any:
    """Run ``job`` (blocking) with Ctrl+C/SIGTERM stopping it once; returns its outcome.

    ``keeping``: what a stop keeps, in the line it prints ("the points done").
    """

    def on_signal() -> None:
        sys.stderr.write(f"interrupted: stopping, keeping {keeping}…\n")
        sys.stderr.flush()
        job.request_stop("interrupted")

    with interrupts_stop(lambda: job.stop_requested, on_signal):
        return job.run()


def report_end(outcome: JobEnd, what: str, print_record: Callable[[Any, TextIO], object]) -> int:
    """A job's end on the terminal and its exit code.

    ``outcome.refused`` (a configuration the worker refused, where the kind
    has it) is listed on stderr: exit 2. Otherwise ``print_record`` prints the
    table on stdout, then where it is saved; exit 130 when stopped, 3 when
    ``outcome.failed`` (a reason in words is printed) or the record could not
    be written, else 0.
    """
    refused: list[ConfigProblem] | None = getattr(outcome, "refused", None)
    if refused is not None:
        print_problems(refused, f"The {what} cannot run")
        sys.stderr.write(escape_controls(f"the {what} is kept in {outcome.folder}\n"))
        return EXIT_BAD_CONFIG
    print_record(outcome.record, sys.stdout)
    if outcome.write_error:
        sys.stdout.write(escape_controls(f"not saved in full: {outcome.write_error}\n"))
    else:
        sys.stdout.write(escape_controls(f"saved: {outcome.folder}\n"))
    if outcome.stop_requested:
        return EXIT_INTERRUPTED
    failed = getattr(outcome, "failed", None)
    if isinstance(failed, str):
        sys.stderr.write(escape_controls(f"error: {failed}\n"))
    if failed or outcome.write_error:
        return EXIT_FAILED
    return EXIT_OK
