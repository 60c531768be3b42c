"""A sweep's folder on disk: its record saved whole (JSON and CSV, atomically) after every change.

A sweep folder holds sweep.json, sweep.csv and each point's run folder; a
shape-sweep folder holds shape_sweep.json and shape_sweep.csv. Both files
are replaced atomically (temp file + rename) after every change of a point,
so a sweep stopped or killed at any moment keeps the points done. The
records are in sweep_record.py and shape_record.py, their checked reading in
sweep_load.py, the owner lock in owner_lock.py.
"""

from __future__ import annotations

import errno
import os
import re
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from .file_io import atomic_write_text
from .owner_lock import OWNER_LOCK, RecordBusy, fcntl, open_lock
from .shape_record import (
    SHAPE_CSV,
    SHAPE_JSON,
    ShapeSweepRecord,
    shape_record_to_csv,
    shape_record_to_json,
)
from .store import SWEEP_RECORDS
from .sweep_load import load_sweep, sweep_folder_of
from .sweep_record import (
    SWEEP_CSV,
    SWEEP_JSON,
    SweepPoint,
    SweepRecord,
    record_to_csv,
    record_to_json,
)

assert SWEEP_JSON in SWEEP_RECORDS and SHAPE_JSON in SWEEP_RECORDS


class _RecordFolder:
    """A folder holding one record, saved whole (JSON and CSV, each atomically) after every change.

    Safe to share between threads: :meth:`update` changes the record under a
    lock and saves it; :meth:`snapshot` gives a copy to read. A subclass names
    its files, its serialisers and the word its folders and messages use.
    """

    #: the word in the folder's name (``<time>_<word>_<slug>``)
    name_word = ""
    #: what a message calls it
    what = ""
    json_name = ""
    csv_name = ""

    def __init__(self, path: Path, record: Any):
        self.path = Path(path)
        self.record = record
        self._lock = threading.RLock()
        #: why the last save failed (None: saved)
        self.write_error: str | None = None
        self._owner_fd: int | None = None

    def claim(self) -> None:
        """Hold the folder's owner lock until :meth:`release` (or this process ends).

        Raises :class:`RecordBusy` when another process holds it: two owners
        would run the same points and both rewrite the record. A folder the lock
        file cannot be made in (read-only) is run without one: nothing can be
        saved there either.
        """
        if fcntl is None or self._owner_fd is not None:
            return
        try:
            fd = open_lock(self.path, create=True)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EISDIR, errno.EMLINK):
                raise RecordBusy(
                    f"{self.path / OWNER_LOCK} is not a regular file: this {self.what} folder "
                    "cannot be run safely (remove that entry first)"
                ) from None
            return
        if fd is None:  # pragma: no cover - created above
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid, host = getattr(self.record, "owner_pid", 0), getattr(self.record, "owner_host", "")
            who = f" (pid {pid} on {host})" if pid and host else ""
            raise RecordBusy(
                f"this {self.what} is being run by another process{who}: wait for it to end "
                "or stop it there, then resume"
            ) from None
        except OSError:
            os.close(fd)
            return
        self._owner_fd = fd

    def release(self) -> None:
        """Let go of the owner lock (another process may resume the folder then)."""
        fd, self._owner_fd = self._owner_fd, None
        if fd is not None:
            os.close(fd)

    @staticmethod
    def _to_json(record: Any) -> str:
        raise NotImplementedError

    @staticmethod
    def _to_csv(record: Any) -> str:
        raise NotImplementedError

    @classmethod
    def _create(cls, root: Path, slug: str, record: Any, when: datetime | None) -> Any:
        when = when or datetime.now()
        base = f"{when:%Y%m%d-%H%M%S}_{cls.name_word}_{re.sub(r'[^A-Za-z0-9_.+-]', '-', slug)[:80]}"
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        for k in range(1000):
            path = root / (base if k == 0 else f"{base}_{k}")
            try:
                path.mkdir()
                break
            except FileExistsError:
                continue
        else:  # pragma: no cover - a thousand sweeps in one second
            raise OSError(f"cannot create a unique {cls.what.replace(' ', '-')} folder in {root}")
        record.sweep_id = path.name
        record.created = record.created or when.isoformat(timespec="seconds")
        folder = cls(path, record)
        folder.save(raise_errors=True)
        return folder

    def save(self, raise_errors: bool = False) -> bool:
        """Write the JSON and the CSV (atomically); returns whether it worked."""
        with self._lock:
            try:
                atomic_write_text(self.path / self.json_name, self._to_json(self.record))
                atomic_write_text(self.path / self.csv_name, self._to_csv(self.record))
            except OSError as exc:
                self.write_error = f"cannot write the {self.what} in {self.path}: {exc.strerror or exc}"
                if raise_errors:
                    raise
                return False
            self.write_error = None
            return True

    def update(self, change: Any = None) -> Any:
        """Apply ``change(record)`` (if given) under the lock, save, and return a copy of the record."""
        with self._lock:
            if change is not None:
                change(self.record)
            self.save()
            return self.record.copy()

    def snapshot(self) -> Any:
        with self._lock:
            return self.record.copy()


class SweepFolder(_RecordFolder):
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


class ShapeSweepFolder(_RecordFolder):
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

