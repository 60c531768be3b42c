"""A sweep's folder on disk: its record saved whole (JSON and CSV, atomically) after every change.

A sweep folder holds sweep.json, sweep.csv and each point's run folder; a
shape-sweep folder holds shape_sweep.json and shape_sweep.csv. Both files
are replaced atomically (temp file + rename) after every change of a point,
so a sweep stopped or killed at any moment keeps the points done. The
records are in sweep_record.py and shape_record.py, their checked reading in
sweep_load.py, the folder class every job's record uses in record_folder.py.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from ..records.shape_record import (
    SHAPE_CSV,
    SHAPE_JSON,
    ShapeSweepRecord,
    shape_record_to_csv,
    shape_record_to_json,
)
from ..records.sweep_load import load_sweep, sweep_folder_of
from ..records.sweep_record import (
    SWEEP_CSV,
    SWEEP_JSON,
    SweepPoint,
    SweepRecord,
    record_to_csv,
    record_to_json,
)
from .record_folder import RecordFolder
from .store import SWEEP_RECORDS

assert SWEEP_JSON in SWEEP_RECORDS and SHAPE_JSON in SWEEP_RECORDS


class SweepFolder(RecordFolder):
    """A sweep's folder and its record (sweep.json, sweep.csv), saved as a whole after every change."""

    name_word = "sweep"
    what = "sweep"
    json_name = SWEEP_JSON
    csv_name = SWEEP_CSV
    record: SweepRecord
    _to_json = staticmethod(record_to_json)
    _to_csv = staticmethod(record_to_csv)

    @classmethod
    def create(cls, root: Path, slug: str, record: SweepRecord, when: datetime | None = None) -> SweepFolder:
        """A new sweep folder under ``root`` named ``<time>_sweep_<slug>``; writes sweep.json."""
        folder: SweepFolder = cls._create(root, slug, record, when)
        return folder

    @classmethod
    def open(cls, path: str | Path) -> SweepFolder:
        path = sweep_folder_of(Path(path))
        return cls(path, load_sweep(path))

    def run_folder(self, point: SweepPoint) -> Path | None:
        """The folder of ``point``'s run; None before it started."""
        return self.path / point.run if point.run else None


class ShapeSweepFolder(RecordFolder):
    """A shape sweep's folder and record (shape_sweep.json, .csv), saved whole after every point."""

    name_word = "shape"
    what = "shape sweep"
    json_name = SHAPE_JSON
    csv_name = SHAPE_CSV
    record: ShapeSweepRecord
    _to_json = staticmethod(shape_record_to_json)
    _to_csv = staticmethod(shape_record_to_csv)

    @classmethod
    def create(
        cls, root: Path, slug: str, record: ShapeSweepRecord, when: datetime | None = None
    ) -> ShapeSweepFolder:
        """A new folder under ``root`` named ``<time>_shape_<slug>``; writes shape_sweep.json."""
        folder: ShapeSweepFolder = cls._create(root, slug, record, when)
        return folder

