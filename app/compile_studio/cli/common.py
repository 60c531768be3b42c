"""What the CLI's commands share: exit codes, run references, the trust flag, Ctrl+C, ``compare``.

The command modules (``cli``, ``cli_sweep``, ``cli_sweep_show``, ``cli_targets``, ``cli_why``) import
from here, never from each other upward.
"""

from __future__ import annotations

import argparse
import difflib
import re
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.config import BenchmarkConfig, ConfigProblem
from ..results import RunDamaged, RunResult, RunStore, load_run, summarize
from ..results.report.formatting import (
    SUMMARY_HEADERS,
    fmt_speedup_ratio,
    plural,
    summary_cells,
    text_table,
)
from ..results.report.terminal import escape_controls
from ..results.storage.locations import default_run_store
from ..results.storage.summary_cache import summary_of

if TYPE_CHECKING:
    from ..jobs.trust import Agreement

EXIT_OK = 0
EXIT_BAD_CONFIG = 2
EXIT_FAILED = 3
EXIT_INTERRUPTED = 130
#: ``show … | head``: the reader closed the pipe (128 + SIGPIPE, as a shell reports it)
EXIT_BROKEN_PIPE = 141

RUN_REF_HELP = """\
RUN is any of:
  20261202-153333_mlp…   a run id as `list` prints it, or any unique prefix of it
  latest, latest~1, …    the newest run, the one before it, …
  1, 2, …                the row number `list` prints (1 = newest)
  PATH                   a run folder, run.json or samples.csv anywhere
A run that cannot be found is a usage error (exit 2) listing close matches."""



class RunNotFound(Exception):
    """A run reference that names no run (or several); the message says which and lists close matches."""



_LATEST = re.compile(r"^latest(?:~(\d+))?$")

#: A row of ``list``: ``3`` or ``#3`` (a bare number that is no row may begin a run id).
_INDEX = re.compile(r"^#?(\d{1,7})$")



def store_folders(store: RunStore) -> list[Path]:
    """The run folders of ``store`` in the order ``list`` prints them (newest first): the store's
    own listing (:meth:`RunStore.run_folders`), so a row number, ``latest`` and ``list`` agree."""
    return store.run_folders()



def resolve_run(ref: str, store: RunStore) -> Path:
    """The path of the run ``ref`` names; raises :class:`RunNotFound` saying why not.

    An existing path wins; then ``latest``/``latest~N``, a row number of
    ``list`` (1 = newest), an exact run id, a unique prefix of one.
    """
    path = Path(ref).expanduser()
    if path.exists():
        return path
    folders = store_folders(store)
    where = f"the run store {store.root}"
    latest = _LATEST.match(ref)
    index = _INDEX.match(ref)
    if index and not ref.startswith("#") and not 1 <= int(index.group(1)) <= len(folders):
        # a bare number beyond the list's rows may still be the start of a run id
        if any(f.name.startswith(ref) for f in folders):
            index = None
    if latest or index:
        k = int(latest.group(1) or 0) if latest else int(index.group(1)) - 1 if index else 0
        if not folders:
            raise RunNotFound(f"{ref}: {where} has no runs")
        if not 0 <= k < len(folders):
            raise RunNotFound(
                f"{ref}: {where} has {plural(len(folders), 'run')} "
                f"(latest … latest~{len(folders) - 1}, or 1 … {len(folders)})"
            )
        return folders[k]
    names = [f.name for f in folders]
    if ref in names:
        return store.root / ref
    matches = [n for n in names if n.startswith(ref)]
    if len(matches) == 1:
        return store.root / matches[0]
    if matches:
        shown = "\n".join(f"  {n}" for n in matches[:10])
        more = f"\n  … and {len(matches) - 10} more" if len(matches) > 10 else ""
        raise RunNotFound(
            f"{ref}: the prefix matches {plural(len(matches), 'run')} in {where}; "
            f"give more of the id:\n{shown}{more}"
        )
    close = [n for n in names if ref.lower() in n.lower()]
    close += [n for n in difflib.get_close_matches(ref, names, n=5, cutoff=0.5) if n not in close]
    if not folders:
        hint = f"{where} has no runs"
    elif close:
        hint = "close matches:\n" + "\n".join(f"  {n}" for n in close[:5])
    else:
        hint = "`compile-studio-cli list` shows the runs there"
    raise RunNotFound(f"{ref}: no such file, and no run with this id in {where}; {hint}")



def add_trust_flag(parser: argparse.ArgumentParser) -> None:
    """``--trust-code``: run the code a received file names without asking."""
    parser.add_argument(
        "--trust-code", action="store_true",
        help="run the factory or backend modules named by --config or a resumed folder without "
        "asking (without it: asked on a terminal, refused otherwise)",
    )



def code_agreed(
    configs: BenchmarkConfig | list[BenchmarkConfig], source: str, args: argparse.Namespace,
    from_flags: bool = True,
) -> Agreement | None:
    """The agreement to run the code ``configs`` (every configuration the job will run) name,
    ``source`` being the file they came from; None when not agreed (said on stderr).

    A field the user gave as a flag is theirs (not asked); with ``from_flags``
    False (a resumed folder) every named piece of code is asked about. The job runs
    the agreed copies (:meth:`Agreement.apply`, :meth:`Agreement.sessions`).
    """
    from ..jobs.trust import CodeChanged, agree, agreed_in_terminal, code_of_configs

    given = set()
    if from_flags:
        given = {name for name in ("factory", "backend_modules") if getattr(args, name, None) is not None}
    refs = code_of_configs(configs if isinstance(configs, list) else [configs], given)
    if not agreed_in_terminal(refs, source, bool(getattr(args, "trust_code", False))):
        return None
    try:
        return agree(refs)
    except CodeChanged as exc:
        sys.stderr.write(escape_controls(f"error: {exc}\n"))
    except OSError as exc:
        sys.stderr.write(f"error: cannot keep a copy of the agreed code: {exc.strerror or exc}\n")
    return None



@contextmanager
def interrupts_stop(stopping: Callable[[], bool], stop: Callable[[], None]) -> Iterator[None]:
    """While the block runs, Ctrl+C and SIGTERM call ``stop`` once (not while ``stopping()``);
    the previous handlers come back afterwards."""

    def handler(*_: object) -> None:
        if not stopping():
            stop()

    old = signal.signal(signal.SIGINT, handler)
    old_term = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        signal.signal(signal.SIGTERM, old_term)



def print_problems(problems: list[ConfigProblem], heading: str = "The configuration cannot run") -> None:
    """Every problem on stderr, one line each, under ``heading``."""
    sys.stderr.write(f"{heading}:\n")
    for p in problems:
        sys.stderr.write(f"  - {p.field}: {p.message}\n")



def load_or_report(path: Path, samples: bool = True) -> RunResult | None:
    """The run at ``path``; ``samples`` False: its stored summary without its samples where it
    has one (a run of an older version is summarised once and cached)."""
    try:
        run = load_run(path, samples=samples)
        if not samples:
            summary_of(run)
        return run
    except RunDamaged as exc:
        sys.stderr.write(f"error: {path}: {exc}\n")
        return None



def resolve_all(refs: list[str], out: Path | None) -> list[Path] | None:
    """The paths of ``refs``; None (after saying why on stderr) when any names no run."""
    store = RunStore(out or default_run_store())
    paths, ok = [], True
    for ref in refs:
        try:
            paths.append(resolve_run(ref, store))
        except RunNotFound as exc:
            sys.stderr.write(f"error: {exc}\n")
            ok = False
    return paths if ok else None



#: Configuration fields that change what one call computes: runs that differ in any of them
#: have latencies that say nothing about each other (the batch size is handled per sample).
SIZE_FIELDS = ("model", "layers", "transformer", "cnn", "factory", "model_path", "workload")


def size_differences(runs: list[RunResult]) -> tuple[list[str], bool]:
    """How the runs differ from run #1 in what one call computes: the :data:`SIZE_FIELDS`
    that differ (their names), and whether the batch sizes differ."""
    if not runs or runs[0].config is None:
        return [], False
    first = runs[0].config
    fields: list[str] = []
    batch_differs = False
    for run in runs[1:]:
        if run.config is None:
            continue
        for name in SIZE_FIELDS:
            if getattr(run.config, name) != getattr(first, name) and name not in fields:
                fields.append(name)
        if run.batch() != runs[0].batch():
            batch_differs = True
    return fields, batch_differs


def _per_sample_ms(median_ms: float | None, batch: int | None) -> float | None:
    return median_ms / batch if median_ms is not None and batch else None


def compare_table(runs: list[RunResult]) -> str:
    """Runs side by side: one row per (run, variant), with each variant's speed against run #1.

    ``vs #1`` is run #1's median of the same variant over this one's: above
    1 it is faster here than in run #1. Runs of different batch sizes (a
    batch-size sweep) are compared per sample (median ÷ batch) and the column
    says so; runs whose calls compute different things (another model, layer
    sizes, workload) get no ``vs #1`` column, and a note says why. Each run is
    named by its number; the legend above the table gives its full id, label
    and model.
    """
    fields, batch_differs = size_differences(runs)
    per_sample = batch_differs and not fields and all(r.batch() for r in runs)
    comparable = not fields and (per_sample or not batch_differs)
    ratio_header = "vs #1 per sample" if per_sample else "vs #1"
    headers = ["run", *([ratio_header] if comparable else []), *SUMMARY_HEADERS]
    rows = []
    reference: dict[str, float | None] = {}
    if runs:
        ref_batch = runs[0].batch()
        reference = {
            r.name: _per_sample_ms(r.median_ms, ref_batch) if per_sample else r.median_ms
            for r in summarize(runs[0])
        }
    for k, run in enumerate(runs, 1):
        for r in summarize(run):
            cells = [f"#{k}"]
            if comparable:
                ms = _per_sample_ms(r.median_ms, run.batch()) if per_sample else r.median_ms
                ratio = (
                    "ref" if k == 1 and r.median_ms is not None
                    else fmt_speedup_ratio(reference.get(r.name), ms)
                )
                cells.append(ratio)
            rows.append([*cells, *summary_cells(r)])
    legend = "\n".join(
        f"#{k} {run.run_id}" + (f" ({run.label})" if run.label else "") + f": {run.title()} [{run.status}]"
        for k, run in enumerate(runs, 1)
    )
    if fields:
        note = (
            f"no vs #1 column: the runs differ in {', '.join(fields)}, so one call does different "
            "work in each and their latencies are not comparable; each run's speedup is against "
            "its own eager"
        )
    elif batch_differs and not per_sample:
        note = (
            "no vs #1 column: the runs differ in batch size and a batch is not known for each; "
            "each run's speedup is against its own eager"
        )
    elif per_sample:
        batches = ", ".join(f"#{k}: {run.batch()}" for k, run in enumerate(runs, 1))
        note = (
            f"the runs differ in batch size ({batches}): vs #1 per sample = run #1's median per "
            "sample (median ÷ batch) of the same variant / this run's (above 1.00×: less time per "
            "sample than in run #1); the latencies themselves are per call of each run's batch"
        )
    else:
        note = (
            "vs #1 = run #1's median of the same variant / this run's "
            "(above 1.00×: faster than in run #1)"
        )
    return legend + "\n\n" + text_table(headers, rows, left=3 if comparable else 2) + "\n" + note



def cmd_compare(args: argparse.Namespace) -> int:
    paths = resolve_all(args.runs, args.out)
    if paths is None:
        return EXIT_BAD_CONFIG
    runs = [load_or_report(p, samples=False) for p in paths]
    ok = [r for r in runs if r is not None]
    if not ok:
        return EXIT_FAILED
    sys.stdout.write(compare_table(ok) + "\n")
    return EXIT_OK if len(ok) == len(runs) else EXIT_FAILED
