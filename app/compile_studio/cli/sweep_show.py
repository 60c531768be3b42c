"""What a sweep folder shows on the command line: the sweep table, ``show SWEEP``, ``compare`` of sweeps.

Shape sweeps print one table per variant and dynamic mode. Strings from the
folder reach the terminal through the CLI's escaping stream.
"""

from __future__ import annotations

import argparse
import math
import re
import shlex
import sys
from pathlib import Path
from typing import Any, TextIO

from ..jobs.sweep_spec import describe_points, value_text
from ..results import RunDamaged, RunResult, load_run
from ..results.records.shape_record import ShapeSweepRecord, shape_speedup_text
from ..results.records.sweep_load import is_shape_sweep_folder, load_shape_sweep, load_sweep
from ..results.records.sweep_record import FAILED, SweepDamaged, SweepRecord
from ..results.report.formatting import (
    break_even_text,
    fmt_interval,
    fmt_ms,
    fmt_seconds,
    plural,
    rough_speedup_header,
    text_table,
)
from ..results.storage.locations import default_data_dir
from .common import (
    EXIT_BAD_CONFIG,
    EXIT_FAILED,
    EXIT_OK,
    cmd_compare,
    compare_table,
)


def default_sweep_root() -> Path:
    """Where sweep folders go by default: beside the run store."""
    return default_data_dir() / "sweeps"


# -- tables ----------------------------------------------------------------------------------

def speedup_text(v: Any) -> str:
    if v.speedup is None or not math.isfinite(v.speedup):
        return "–"
    return fmt_interval(v.variant, v.speedup, v.speedup_lo, v.speedup_hi)


def _break_even_text(v: Any) -> str:
    """As the run table shows it: only for a variant found faster; ``never`` when slower."""
    return break_even_text(v.variant, v.compile_s, v.verdict, v.break_even_calls)


def _correct_text(v: Any) -> str:
    return "–" if v.allclose is None else ("yes" if v.allclose else "NO")


def _count(v: int | None) -> str:
    return "–" if v is None else str(v)


SWEEP_HEADERS = [
    "variant", "status", "median ms", "p95 ms", "speedup [95% CI]", "verdict", "compile s",
    "break-even calls", "TFLOP/s", "correct", "recompiles",
]


def sweep_rows(record: SweepRecord) -> list[list[str]]:
    """The table of a sweep: one row per point × variant; a point not run yet has one row."""
    rows = []
    for p in record.points:
        value = value_text(p.value)
        if not p.variants:
            rows.append([value, "–", p.status, *["–"] * (len(SWEEP_HEADERS) - 2)])
            continue
        for v in p.variants:
            status = "not run" if v.status == "not_run" else v.status
            rows.append(
                [
                    value,
                    v.variant,
                    status,
                    fmt_ms(v.median_ms),
                    fmt_ms(v.p95_ms),
                    speedup_text(v),
                    v.verdict or "–",
                    fmt_seconds(v.compile_s),
                    _break_even_text(v),
                    "–" if v.tflops is None else f"{v.tflops:.3g}",
                    _correct_text(v),
                    _count(v.recompiles),
                ]
            )
    return rows


def print_sweep(record: SweepRecord, out: TextIO) -> None:
    """A sweep's title, its table, and what failed."""
    out.write(f"Sweep: {record.title()}  [{record.status}]\n")
    env = record.environment
    parts = [f"torch {env['torch']}" if isinstance(env.get("torch"), str) else "",
             record.config.workload, describe_points(record), f"sweep {record.sweep_id}"]
    out.write(" · ".join(p for p in parts if p) + "\n")
    out.write(text_table([record.param, *SWEEP_HEADERS], sweep_rows(record), left=3) + "\n")
    if any(v.tflops is not None for p in record.points for v in p.variants):
        out.write("TFLOP/s: achieved, FLOPs per call / median time per call (as each point's run shows it)\n")
    for p in record.points:
        if p.status == FAILED:
            out.write(f"! {record.param}={value_text(p.value)} failed: {p.message}\n")
    if record.message:
        out.write(f"note: {record.message}\n")
    for problem in record.load_problems[:10]:
        out.write(f"note: read with a problem: {problem}\n")


def sweep_path(ref: str) -> Path | None:
    """The sweep folder ``ref`` names: a sweep folder, its sweep.json, or a sweep's name in the
    default sweeps folder; None when it names none (it may then be a run)."""
    from ..results.records.sweep_load import is_sweep_folder, sweep_folder_of

    path = Path(ref).expanduser()
    if is_sweep_folder(path):
        return sweep_folder_of(path)
    if is_shape_sweep_folder(path):
        return path.parent if path.is_file() else path
    if "/" not in ref and ref not in ("", ".", ".."):
        named = default_sweep_root() / ref
        if is_sweep_folder(named) or is_shape_sweep_folder(named):
            return named
    return None


def is_sweep_ref(ref: str) -> bool:
    """Whether ``ref`` (as ``show`` takes it) names a sweep rather than a run."""
    return sweep_path(ref) is not None


def show_sweep(ref: str) -> int:
    """``show SWEEP``: the sweep's table (exit 3 when its sweep.json cannot be read); a shape
    sweep's tables per mode."""
    path = sweep_path(ref) or Path(ref)
    if is_shape_sweep_folder(path):
        try:
            shape = load_shape_sweep(path)
        except SweepDamaged as exc:
            sys.stderr.write(f"error: {ref}: {exc}\n")
            return EXIT_FAILED
        print_shape_sweep(shape, sys.stdout)
        return EXIT_OK
    try:
        record = load_sweep(path)
    except SweepDamaged as exc:
        sys.stderr.write(f"error: {ref}: {exc}\n")
        return EXIT_FAILED
    print_sweep(record, sys.stdout)
    hint = resume_hint(record, sweep_folder_of_path(path))
    if hint:
        sys.stdout.write(hint + "\n")
    return EXIT_OK


def sweep_folder_of_path(path: Path) -> Path:
    """The sweep folder of ``path`` (the folder, or the folder of its sweep.json)."""
    from ..results.records.sweep_load import sweep_folder_of

    return sweep_folder_of(path)


def resume_hint(record: SweepRecord, folder: Path) -> str:
    """The command that runs a sweep's missing points ("" when none is missing, or it runs)."""
    missing = [p for p in record.points if p.missing]
    if not missing or record.status == "running":
        return ""
    return (
        f"to run the {plural(len(missing), 'missing point')}: "
        f"compile-studio-cli sweep --resume {shlex.quote(str(folder))}"
    )


def latest_sweep(ref: str) -> Path | str | None:
    """The sweep folder ``latest`` / ``latest~N`` names: the newest sweep in the default sweeps
    folder, the one before it, …; a sentence when there is none such; None when ``ref`` is
    neither (nor an existing path)."""
    from ..results.records.sweep_load import is_sweep_folder

    found = re.fullmatch(r"latest(?:~(\d+))?", ref)
    if found is None or Path(ref).exists():
        return None
    root = default_sweep_root()
    try:
        folders = sorted((p for p in root.iterdir() if p.is_dir() and is_sweep_folder(p)), reverse=True)
    except OSError:
        folders = []
    k = int(found.group(1) or 0)
    if k >= len(folders):
        return f"no sweep {ref} in {root} ({plural(len(folders), 'sweep')} there)"
    return folders[k]


# -- compare ---------------------------------------------------------------------------------

def _point_runs(path: Path, record: SweepRecord) -> tuple[list[RunResult], list[str]]:
    runs, problems = [], []
    for p in record.points:
        if not p.run:
            continue
        try:
            runs.append(load_run(path / p.run))
        except RunDamaged as exc:
            problems.append(f"{record.param}={value_text(p.value)}: {exc}")
    return runs, problems


def compare_sweeps(records: list[SweepRecord]) -> str:
    """Sweeps side by side: per value and variant, each sweep's median and speedup."""
    headers = ["value", "variant"]
    for k in range(1, len(records) + 1):
        headers += [f"#{k} median ms", f"#{k} speedup"]
    keys: list[tuple[str, str]] = []
    cells: dict[tuple[str, str], dict[int, Any]] = {}
    for k, record in enumerate(records):
        for p in record.points:
            for v in p.variants:
                key = (value_text(p.value), v.variant)
                if key not in cells:
                    keys.append(key)
                    cells[key] = {}
                cells[key][k] = v
    rows = []
    for key in keys:
        row = list(key)
        for k in range(len(records)):
            cell = cells[key].get(k)
            row += [fmt_ms(cell.median_ms), speedup_text(cell)] if cell is not None else ["–", "–"]
        rows.append(row)
    legend = "\n".join(
        f"#{k} {r.sweep_id}: {r.title()} [{r.status}]" for k, r in enumerate(records, 1)
    )
    return legend + "\n\n" + text_table(headers, rows, left=2)


def cmd_compare_any(args: argparse.Namespace) -> int:
    """``compare``: runs as before; one sweep compares its points' runs; several sweeps side by side."""
    paths = [sweep_path(ref) for ref in args.runs]
    if not any(paths):
        return cmd_compare(args)
    if not all(paths):
        sys.stderr.write("error: compare takes runs or sweeps, not both\n")
        return EXIT_BAD_CONFIG
    records = []
    for ref, path in zip(args.runs, paths):
        assert path is not None
        if is_shape_sweep_folder(path):
            sys.stderr.write(f"error: {ref} is a shape sweep: `show` prints its tables\n")
            return EXIT_BAD_CONFIG
        try:
            records.append((path, load_sweep(path)))
        except SweepDamaged as exc:
            sys.stderr.write(f"error: {ref}: {exc}\n")
            return EXIT_FAILED
    if len(records) == 1:
        path, record = records[0]
        runs, problems = _point_runs(path, record)
        for problem in problems:
            sys.stderr.write(f"error: {problem}\n")
        if not runs:
            sys.stderr.write(f"error: {path}: no point of this sweep has run yet\n")
            return EXIT_FAILED
        sys.stdout.write(f"Sweep: {record.title()}\n")
        sys.stdout.write(compare_table(runs) + "\n")
        return EXIT_FAILED if problems else EXIT_OK
    sys.stdout.write(compare_sweeps([r for _, r in records]) + "\n")
    return EXIT_OK


__all__ = [
    "cmd_compare_any",
    "compare_sweeps",
    "default_sweep_root",
    "is_sweep_ref",
    "print_shape_sweep",
    "print_sweep",
    "show_sweep",
    "sweep_rows",
]


SHAPE_HEADERS = ["batch", "first call ms", "recompiles", "eager?", "median ms", "eager ms", "speedup", "correct"]


def shape_headers(record: ShapeSweepRecord) -> list[str]:
    """The columns of a series' table; the speedup's says it is rough and from how many calls."""
    size = f"{record.axis.split(':')[0]} axis {record.axis.split(':')[1]}" if record.axis else "batch"
    return [
        rough_speedup_header(record.repeats) if h == "speedup" else size if h == "batch" else h
        for h in SHAPE_HEADERS
    ]


def shape_rows(record: ShapeSweepRecord, variant: str, mode: str) -> list[list[str]]:
    """One series' table: a row per batch size (eager ms: eager timed beside the variant at that batch)."""
    rows = []
    for p in record.points_of(variant, mode):
        if p.error:
            rows.append([str(p.batch), "failed", "–", "–", "–", fmt_ms(p.eager_ms), "–", p.error[:60]])
            continue
        fell = "limit hit" if p.limit_hit else ("yes" if p.fell_back else "no")
        rows.append([
            str(p.batch),
            fmt_ms(p.first_call_ms),
            str(p.recompiles),
            fell,
            fmt_ms(p.median_ms),
            fmt_ms(p.eager_ms),
            shape_speedup_text(p, record.repeats),
            "–" if p.correct is None else ("yes" if p.correct else "NO"),
        ])
    return rows


def print_shape_sweep(record: ShapeSweepRecord, out: TextIO) -> None:
    """A shape sweep's title, a table per mode (and variant), and the recompile-limit warnings."""
    out.write(f"Shape sweep: {record.title()}  [{record.status}]\n")
    env = record.environment
    limit = f"recompile limit {record.recompile_limit}" if record.recompile_limit else ""
    parts = [f"torch {env['torch']}" if isinstance(env.get("torch"), str) else "",
             record.config.workload, f"{record.repeats} timed calls per point", limit, f"sweep {record.sweep_id}"]
    out.write(" · ".join(p for p in parts if p) + "\n")
    for variant, mode in record.series():
        points = record.points_of(variant, mode)
        total = sum(p.recompiles for p in points)
        out.write(f"\n{variant} · dynamic={mode} · {plural(total, 'recompile')} over {plural(len(points), 'size' if record.axis else 'batch size')}\n")
        out.write(text_table(shape_headers(record), shape_rows(record, variant, mode), left=1) + "\n")
    if not record.series():
        out.write("\nno compiled point has run yet\n")
    for warning in record.warnings():
        out.write(f"warning: {warning}\n")
    if record.message:
        out.write(f"note: {record.message}\n")
    for problem in record.load_problems[:10]:
        out.write(f"note: read with a problem: {problem}\n")
