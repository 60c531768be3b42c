"""Writing a run's folder: run.json and the CSVs as text, and RunWriter appending them as a run goes.

``samples.csv`` is appended (and flushed) batch by batch while a run goes, so
a crash loses at most the batch in flight; ``run.json`` and ``summary.csv``
are replaced atomically (temp file + rename). Written by the supervising side
only, never by the worker. What is written here is read back, checked, by
run_load.py and csv_readers.py: the formats change in step.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from ..analysis.summary import SUMMARY_VERSION, SummaryRow, summarize
from ..records.run_result import GPU_STATE_COLUMNS, SCHEMA_VERSION, RunResult
from .file_io import atomic_write_text, fmt_value, json_safe, safe_cell

RUN_JSON = "run.json"
SAMPLES_CSV = "samples.csv"
SUMMARY_CSV = "summary.csv"
SAMPLES_COLUMNS = ["variant", "iteration", "phase", "wall_ms", "device_ms", "round"]
#: samples.csv of schema 1 (no rounds)
SAMPLES_COLUMNS_V1 = SAMPLES_COLUMNS[:5]
GPU_STATE_CSV = "gpu_state.csv"

def run_to_json(run: RunResult, summary: list[SummaryRow] | None = None) -> str:
    """run.json text: config, environment, status, per-variant diagnostics and stats.

    ``summary`` is stored as the run's summary (by default :func:`summarize`),
    with ``summary_version`` and ``summary_samples`` (each variant's number of
    samples it was computed from), so that a reader can use it as it is.
    """
    rows = summarize(run) if summary is None else summary
    counts = run.summary_counts if summary is not None else {
        name: len(v.samples) for name, v in run.variants.items()
    }
    variants = {}
    for name, v in run.variants.items():
        meta = v.meta_dict()
        st = v.stats()
        meta["stats"] = st.to_dict() if st else None
        variants[name] = meta
    doc = {
        "schema_version": SCHEMA_VERSION,
        "app_version": run.app_version,
        "run_id": run.run_id,
        "created": run.created,
        "status": run.status,
        "message": run.message,
        "config": run.config.to_dict() if run.config is not None else {},
        "environment": run.environment,
        "measurement": run.measurement,
        "variants": variants,
        "summary_version": SUMMARY_VERSION,
        "summary_samples": counts,
        "summary": [r.to_dict() for r in rows],
    }
    return json.dumps(json_safe(doc), indent=2, sort_keys=False) + "\n"


def summary_to_csv(run: RunResult) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SummaryRow.fields())
    for row in summarize(run):
        writer.writerow([safe_cell(v) for v in row.to_dict().values()])
    return buf.getvalue()


def _name_cell(name: str) -> str:
    """A name as one CSV cell (quoted where CSV needs it)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow([safe_cell(name)])
    return buf.getvalue()


def _sample_lines(
    name: str,
    iteration: list[int],
    phase: list[str],
    wall_ms: list[float],
    device_ms: list[float | None],
    round_index: list[int | None],
) -> str:
    """samples.csv lines (what csv.writer would write, built without it: it is the hot path)."""
    cell = _name_cell(name)
    return "".join(
        [
            f"{cell},{i},{p},{fmt_value(w)},{fmt_value(d)},{fmt_value(r)}\n"
            for i, p, w, d, r in zip(iteration, phase, wall_ms, device_ms, round_index)
        ]
    )


def samples_to_csv(run: RunResult) -> str:
    parts = [",".join(SAMPLES_COLUMNS) + "\n"]
    for name, v in run.variants.items():
        s = v.samples
        parts.append(_sample_lines(name, s.iteration, s.phase, s.wall_ms, s.device_ms, s.round))
    return "".join(parts)


def gpu_state_to_csv(run: RunResult) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(GPU_STATE_COLUMNS)
    for row in run.gpu_state:
        writer.writerow([safe_cell(row.get(c)) for c in GPU_STATE_COLUMNS])
    return buf.getvalue()


class RunWriter:
    """Writes one run's folder as events arrive."""

    def __init__(self, folder: Path, run: RunResult):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.run = run
        self._samples = open(self.folder / SAMPLES_CSV, "w", encoding="utf-8", newline="")
        self._csv = csv.writer(self._samples, lineterminator="\n")
        self._csv.writerow(SAMPLES_COLUMNS)
        self._samples.flush()
        self._gpu: Any = None
        self._gpu_csv: Any = None
        self.write_run_json()

    def append_samples(
        self,
        variant: str,
        first_iteration: int,
        phase: str,
        wall_ms: list[float],
        device_ms: list[float | None] | None,
        round_index: int | None = None,
    ) -> None:
        n = len(wall_ms)
        if device_ms is None or all(d is None for d in device_ms):
            # host-timed calls (the hot path): one value formatted per row, the same text
            head = f"{_name_cell(variant)},"
            tail = f",{str(phase)},"
            end = f",,{fmt_value(round_index)}\n"
            self._samples.write(
                "".join([
                    f"{head}{i}{tail}{fmt_value(float(w))}{end}"
                    for i, w in zip(range(first_iteration, first_iteration + n), wall_ms)
                ])
            )
            self._samples.flush()
            return
        dev = list(device_ms)
        self._samples.write(
            _sample_lines(
                variant,
                list(range(first_iteration, first_iteration + n)),
                [str(phase)] * n,
                [float(w) for w in wall_ms],
                [None if d is None else float(d) for d in dev],
                [round_index] * n,
            )
        )
        self._samples.flush()

    def append_gpu_state(self, rows: list[dict[str, Any]]) -> None:
        """Append GPU state readings to gpu_state.csv (created with the first ones)."""
        if self._gpu is None:
            self._gpu = open(self.folder / GPU_STATE_CSV, "w", encoding="utf-8", newline="")
            self._gpu_csv = csv.writer(self._gpu, lineterminator="\n")
            self._gpu_csv.writerow(GPU_STATE_COLUMNS)
        for row in rows:
            self._gpu_csv.writerow([safe_cell(row.get(c)) for c in GPU_STATE_COLUMNS])
        self._gpu.flush()

    def write_run_json(self) -> None:
        """run.json with the summary computed last (at the end of a variant), not computed again."""
        atomic_write_text(self.folder / RUN_JSON, run_to_json(self.run, self.run.last_summary()))

    def finish(self) -> None:
        """Close the CSVs being appended and write summary.csv and the final run.json."""
        self.close()
        summarize(self.run)
        atomic_write_text(self.folder / SUMMARY_CSV, summary_to_csv(self.run))
        self.write_run_json()

    def close(self) -> None:
        for fh in (self._samples, self._gpu):
            if fh is not None and not fh.closed:
                fh.close()

