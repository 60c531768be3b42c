"""Reading a run's CSVs back (samples.csv, gpu_state.csv), every row checked.

samples.csv is parsed a few MiB at a time as numpy columns, row by row from
the first piece that holds anything but plain rows.

Everything read goes through results.records.schema: regular files under a size
cap, typed and bounded values, one bad row or field skipped and counted.
The formats are written by run_files.py.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from ...core.protocol import Phase
from ..records.run_result import GPU_STATE_COLUMNS, NO_ROUND, PHASE_NAMES, RunResult
from ..records.schema import (
    MAX_CSV_BYTES,
    MAX_CSV_LINE,
    MAX_TIMING_MS,
    MAX_VARIANTS,
    CsvLines,
    RunDamaged,
    cell_float,
    cell_int,
    cell_name,
    check_regular_file,
    timing_ms_ok,
)
from .file_io import read_cell
from .run_files import SAMPLES_COLUMNS, SAMPLES_COLUMNS_V1

_SAMPLE_PHASES = frozenset(str(p) for p in Phase)
_PHASE_CODE = {name: code for code, name in enumerate(PHASE_NAMES)}
_PHASE_BYTES = {name.encode(): code for name, code in _PHASE_CODE.items() if name in _SAMPLE_PHASES}
#: Bytes of samples.csv parsed at a time by the fast reader.
_FAST_PIECE = 4 * 1024 * 1024
_NOT_NUMBER = re.compile(rb"[^0-9.eE+\-]")
_NOT_DIGIT = re.compile(rb"[^0-9]")


class _Columns:
    """Sample columns of one variant gathered row by row (the slow reader's), appended at once."""

    def __init__(self) -> None:
        self.iteration: list[int] = []
        self.phase: list[int] = []
        self.wall: list[float] = []
        self.device: list[float] = []
        self.round: list[int] = []

    def flush_into(self, run: RunResult, name: str) -> None:
        run.variant(name).samples.append_arrays(
            np.asarray(self.iteration, dtype=np.int64),
            np.asarray(self.phase, dtype=np.int8),
            np.asarray(self.wall, dtype=np.float64),
            np.asarray(self.device, dtype=np.float64),
            np.asarray(self.round, dtype=np.int64),
        )


def read_header(path: Path) -> tuple[list[str], int]:
    """The header of samples.csv and the byte offset after it; RunDamaged when it is not the samples header."""
    check_regular_file(path, MAX_CSV_BYTES)
    try:
        with open(path, "rb") as fh:
            raw = fh.readline(MAX_CSV_LINE + 1)
    except OSError as exc:
        raise RunDamaged(f"cannot read {path.name}: {exc.strerror or exc}") from None
    header: list[str] | None = None
    try:
        header = next(csv.reader([raw.decode("utf-8")]), None)
    except (UnicodeDecodeError, csv.Error):
        header = None
    if header not in (SAMPLES_COLUMNS, SAMPLES_COLUMNS_V1) or not raw.endswith(b"\n"):
        raise RunDamaged(
            f"{path.name} does not start with the header {','.join(SAMPLES_COLUMNS)}"
        )
    return header, len(raw)  # type: ignore[return-value]


def _slow_rows(path: Path, start: int, width: int, run: RunResult) -> int:
    """Rows from byte ``start`` to the end, each checked on its own (any damage); the rows skipped."""
    lines = CsvLines(path, start=start)
    reader = csv.reader(lines)
    skipped = 0
    columns: dict[str, _Columns] = {}
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error:
            skipped += 1
            continue
        if len(row) != width:
            skipped += 1
            continue
        try:
            variant = cell_name(read_cell(row[0]))
            iteration = cell_int(row[1])
            phase = row[2]
            if phase not in _SAMPLE_PHASES:
                raise ValueError("unknown phase")
            wall_ms = cell_float(row[3])
            device_ms = cell_float(row[4], optional=True)
            if not timing_ms_ok(wall_ms) or (device_ms is not None and not timing_ms_ok(device_ms)):
                raise ValueError("not a timing")
            round_index = cell_int(row[5], optional=True) if width > 5 else None
        except ValueError:
            skipped += 1
            continue
        if variant not in run.variants and variant not in columns:
            if len(run.variants) + len(columns) >= MAX_VARIANTS:
                skipped += 1
                continue
            run.variant(variant)
        c = columns.setdefault(variant, _Columns())
        c.iteration.append(iteration)  # type: ignore[arg-type]
        c.phase.append(_PHASE_CODE[phase])
        c.wall.append(wall_ms)  # type: ignore[arg-type]
        c.device.append(math.nan if device_ms is None else device_ms)
        c.round.append(NO_ROUND if round_index is None else round_index)  # type: ignore[arg-type]
    for name, c in columns.items():
        c.flush_into(run, name)
    return skipped + lines.skipped


def _fast_piece(piece: bytes, width: int, run: RunResult) -> int | None:
    """Whole lines of samples.csv parsed as columns; the rows skipped (not a timing: see timing_ms_ok).

    None when the piece holds anything but plain rows (quotes, odd bytes,
    other widths, unknown names or phases, numbers that do not fit): the
    caller then reads it row by row, as every row used to be read.
    """
    if b'"' in piece or b"\r" in piece or b"\0" in piece:
        return None
    raw = np.frombuffer(piece, dtype=np.uint8)
    ends = np.flatnonzero(raw == 10)
    commas = np.flatnonzero(raw == 44)
    per_line = np.diff(np.searchsorted(commas, ends), prepend=0)
    if not np.all(per_line == width - 1):
        return None
    if ends.size and int(np.diff(ends, prepend=-1).max()) > MAX_CSV_LINE:
        return None
    flat = piece.replace(b"\n", b",").split(b",")
    cols = [flat[k : len(flat) - 1 : width] for k in range(width)]
    n = len(cols[0])
    names = {}
    for cell in dict.fromkeys(cols[0]):
        try:
            names[cell] = cell_name(read_cell(cell.decode("utf-8")))
        except (UnicodeDecodeError, ValueError):
            return None
    new = [x for x in dict.fromkeys(names.values()) if x not in run.variants]
    if len(run.variants) + len(new) > MAX_VARIANTS:
        return None
    if not set(dict.fromkeys(cols[2])) <= _PHASE_BYTES.keys():
        return None
    for k in (1, 5) if width > 5 else (1,):
        if _NOT_DIGIT.search(b"".join(cols[k])):
            return None
    for k in (3, 4):
        if _NOT_NUMBER.search(b"".join(cols[k])) or max(map(len, cols[k]), default=0) > 90:
            return None
    try:
        iteration = np.fromiter(map(int, cols[1]), np.int64, n)
        wall = np.fromiter(map(float, cols[3]), np.float64, n)
        device = (
            np.fromiter((float(d) if d else math.nan for d in cols[4]), np.float64, n)
            if any(cols[4]) else np.full(n, math.nan)
        )
        if width > 5:
            rounds = {r: (int(r) if r else NO_ROUND) for r in dict.fromkeys(cols[5])}
            round_index = np.fromiter(map(rounds.__getitem__, cols[5]), np.int64, n)
        else:
            round_index = np.full(n, NO_ROUND, dtype=np.int64)
    except (ValueError, OverflowError):
        return None
    phase = np.fromiter(map(_PHASE_BYTES.__getitem__, cols[2]), np.int8, n)
    with np.errstate(invalid="ignore"):  # the same rule as timing_ms_ok (NaN device: none measured)
        keep = (wall >= 0) & (wall <= MAX_TIMING_MS) & (
            np.isnan(device) | ((device >= 0) & (device <= MAX_TIMING_MS))
        )
    skipped = n - int(np.count_nonzero(keep))
    order = list(dict.fromkeys(cols[0]))
    codes = {cell: k for k, cell in enumerate(order)}
    which = np.fromiter(map(codes.__getitem__, cols[0]), np.int32, n) if len(order) > 1 else None
    for k, cell in enumerate(order):
        rows = keep if which is None else keep & (which == k)
        run.variant(names[cell]).samples.append_arrays(
            iteration[rows], phase[rows], wall[rows], device[rows], round_index[rows]
        )
    return skipped


def read_samples_csv(path: Path, run: RunResult) -> int:
    """Load samples.csv rows into ``run``; returns the number of rows skipped.

    A row that does not fit (a last line cut short by a crash, undecodable
    bytes, an overlong field, a timing that is negative, not finite or over MAX_TIMING_MS) is skipped
    and counted, not fatal. Raises :class:`RunDamaged` when the file cannot be
    read or does not start with the samples header.

    Plain rows are parsed a few MiB at a time as numpy columns; from the
    first piece that holds anything else on, rows are read and checked one
    by one (the same checks, one bad row skipped and counted).
    """
    header, offset = read_header(path)
    width = len(header)
    skipped = 0
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            carry = b""
            while True:
                data = fh.read(_FAST_PIECE)
                if not data:
                    break
                data = carry + data
                cut = data.rfind(b"\n") + 1
                piece, carry = data[:cut], data[cut:]
                if not piece:
                    continue
                got = _fast_piece(piece, width, run)
                if got is None:
                    return skipped + _slow_rows(path, offset, width, run)
                skipped += got
                offset += len(piece)
    except OSError as exc:
        raise RunDamaged(f"cannot read {path.name}: {exc.strerror or exc}") from None
    if carry:
        # a last line without its end (a run cut short): read on its own
        skipped += _slow_rows(path, offset, width, run)
    return skipped


def _whole(text: str) -> int | None:
    """A whole reading ('' is None) written either way: ``1980`` or ``1980.0``."""
    value = cell_float(text, optional=True)
    if value is None:
        return None
    if value != int(value):
        raise ValueError(f"{text[:20]!r} is not a whole number")
    return int(value)


_GPU_CELLS: dict[str, Any] = {
    "t_s": lambda t: cell_float(t, optional=True),
    "gpu": lambda t: cell_int(t, optional=True),
    "variant": lambda t: cell_name(read_cell(t)) if t else None,
    "iteration": lambda t: cell_int(t, optional=True),
    "sm_clock_mhz": _whole,
    "temperature_c": _whole,
    "power_w": lambda t: cell_float(t, optional=True),
}


def read_gpu_state_csv(path: Path, problems: list[str] | None = None) -> list[dict[str, Any]]:
    """GPU state readings from gpu_state.csv (rows that do not fit are skipped and counted)."""
    rows: list[dict[str, Any]] = []
    skipped = 0
    try:
        lines = CsvLines(path)
        reader = csv.reader(lines)
        try:
            header = next(reader, None)
        except csv.Error:
            header = None
        if header != GPU_STATE_COLUMNS:
            raise RunDamaged(f"{path.name} does not start with its header")
        while True:
            try:
                raw = next(reader)
            except StopIteration:
                break
            except csv.Error:
                skipped += 1
                continue
            if len(raw) != len(GPU_STATE_COLUMNS):
                skipped += 1
                continue
            try:
                rows.append({c: _GPU_CELLS[c](v) for c, v in zip(GPU_STATE_COLUMNS, raw)})
            except ValueError:
                skipped += 1
        skipped += lines.skipped
    except RunDamaged as exc:
        if problems is not None:
            problems.append(str(exc))
        return rows
    if skipped and problems is not None:
        problems.append(f"{path.name}: {skipped} unreadable rows skipped")
    return rows
