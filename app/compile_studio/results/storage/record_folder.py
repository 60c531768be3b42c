"""The one folder class every job kind's record lives in: saved whole, atomically, after every change.

A sweep, a shape sweep and a "try it" comparison each keep one record in a
folder of their own (:class:`~results.storage.sweep_store.SweepFolder`,
:class:`~results.storage.sweep_store.ShapeSweepFolder`,
:class:`~results.records.trial_record.TrialFolder`): a :class:`RecordFolder` that names
its files and serialisers. The files are replaced atomically (temp file +
rename), so a job stopped or killed at any moment keeps what it finished; the
owner lock (owner_lock.py) keeps two processes from running one folder.
"""

from __future__ import annotations

import errno
import os
import re
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from .file_io import atomic_write_text
from .owner_lock import OWNER_LOCK, RecordBusy, fcntl, open_lock
from .store import folder_stamp

FolderT = TypeVar("FolderT", bound="RecordFolder")


class RecordFolder:
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
    #: the record's field that holds the folder's name
    id_field = "sweep_id"

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
    def create(cls: type[FolderT], root: Path, slug: str, record: Any, when: datetime | None = None) -> FolderT:
        """A new folder under ``root`` named ``<time>_<name_word>_<slug>``; writes the record's files."""
        folder: FolderT = cls._create(root, slug, record, when)
        return folder

    @classmethod
    def _create(cls, root: Path, slug: str, record: Any, when: datetime | None) -> Any:
        stamp = folder_stamp(when)
        when = when or datetime.now(timezone.utc)
        safe = re.sub(r"[^A-Za-z0-9_.+-]", "-", slug)[:80].lstrip(".-") or cls.name_word
        base = f"{stamp}_{cls.name_word}_{safe}"
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
        setattr(record, cls.id_field, path.name)
        record.created = record.created or when.isoformat(timespec="seconds")
        folder = cls(path, record)
        folder.save(raise_errors=True)
        return folder

    def save(self, raise_errors: bool = False) -> bool:
        """Write the JSON and the CSV (atomically); returns whether it worked."""
        with self._lock:
            try:
                atomic_write_text(self.path / self.json_name, self._to_json(self.record))
                if self.csv_name:
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
