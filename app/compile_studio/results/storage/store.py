"""The run store: the folder of saved runs, one sub-folder per run.

Each run folder holds run.json, samples.csv, summary.csv (and gpu_state.csv),
written by run_files.py (RunWriter) and read back, every value checked, by
run_load.py (load_run), csv_readers.py and summary_cache.py; atomic writes
are in file_io.py.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..records.run_result import RunResult
from ..records.schema import RunDamaged
from .run_load import load_run

#: The record file of a sweep folder (``results.storage.sweep_store``): such a folder is no run.
SWEEP_RECORDS = ("sweep.json", "shape_sweep.json")


def is_sweep_like(folder: Path) -> bool:
    """Whether ``folder`` holds a sweep (or shape-sweep) record rather than a run."""
    try:
        return folder.is_dir() and any((folder / name).is_file() for name in SWEEP_RECORDS)
    except OSError:
        return False


#: A folder name's leading time: ``20261206-031500Z`` (UTC, this version) or ``20261206-031500``
#: (the local clock of an older version).
_NAME_TIME = re.compile(r"^(\d{8}-\d{6})(Z?)")
#: run.json's ``created`` as this app writes it (near the top, before anything long).
_CREATED = re.compile(rb'"created"\s*:\s*"([0-9T:.+\-Z ]{10,40})"')


def folder_stamp(when: datetime | None = None) -> str:
    """The time at the start of a new folder's name: UTC with a ``Z`` (``20261206-031500Z``);
    a naive ``when`` (a caller's own clock) is written as given, without the ``Z``."""
    if when is None:
        when = datetime.now(timezone.utc)
    elif when.tzinfo is not None:
        when = when.astimezone(timezone.utc)
    else:
        return f"{when:%Y%m%d-%H%M%S}"
    return f"{when:%Y%m%d-%H%M%S}Z"


def creation_time(created: str, name: str = "") -> float:
    """When a run (or record) was created, as POSIX seconds: from its ``created`` (UTC with an
    offset; a time without one, as older versions wrote, is this machine's local time), else
    from its folder name's time, else 0 (the oldest)."""
    try:
        return datetime.fromisoformat(created.strip().replace("Z", "+00:00")).timestamp()
    except (TypeError, ValueError, OverflowError, OSError):
        pass
    found = _NAME_TIME.match(name)
    if found is not None:
        try:
            when = datetime.strptime(found.group(1), "%Y%m%d-%H%M%S")
            if found.group(2):
                when = when.replace(tzinfo=timezone.utc)
            return when.timestamp()
        except (ValueError, OverflowError, OSError):
            pass
    return 0.0


def _created_of(folder: Path, names: tuple[str, ...] = ("run.json",)) -> str:
    """The ``created`` of the folder's record (run.json; a sweep's sweep.json), read from the
    file's first bytes (no whole parse); "" if none."""
    head = b""
    for name in names:
        try:
            with open(folder / name, "rb") as fh:
                head = fh.read(64 * 1024)
            break
        except OSError:
            continue
    found = _CREATED.search(head)
    return found.group(1).decode("ascii", "replace") if found else ""


@dataclass
class RunListing:
    """One entry of the run store: a readable run, or a damaged folder and why."""

    folder: Path
    run: RunResult | None
    problem: str | None = None

    @property
    def damaged(self) -> bool:
        return self.run is None


class RunStore:
    """The folder of saved runs (one sub-folder per run)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def new_run_folder(self, slug: str, when: datetime | None = None) -> Path:
        """A new, empty run folder named after the time (UTC, see :func:`folder_stamp`) and ``slug``."""
        base = f"{folder_stamp(when)}_{re.sub(r'[^A-Za-z0-9_.+-]', '-', slug)[:80]}"
        self.root.mkdir(parents=True, exist_ok=True)
        for k in range(1000):
            name = base if k == 0 else f"{base}_{k}"
            folder = self.root / name
            try:
                folder.mkdir()
                return folder
            except FileExistsError:
                continue
        raise RuntimeError("cannot create a unique run folder")  # pragma: no cover

    def run_folders(self) -> list[Path]:
        """The run folders of the store, newest first: the one list every command and the
        window's history number from (``list``'s row 1 is ``show 1`` is ``latest``).

        Sweep and shape-sweep folders are not runs (:meth:`sweep_folders`), hidden ones are
        left out. Newest is by the creation time in run.json (UTC), not by the folder's name,
        which is only a label; the name breaks ties.
        """
        try:
            entries = list(self.root.iterdir()) if self.root.is_dir() else []
        except OSError:
            return []
        folders = []
        for folder in entries:
            try:
                if not folder.is_dir() or folder.name.startswith(".") or is_sweep_like(folder):
                    continue
            except OSError:
                continue
            folders.append((creation_time(_created_of(folder), folder.name), folder.name, folder))
        folders.sort(key=lambda item: (item[0], item[1]), reverse=True)
        return [folder for _, _, folder in folders]

    def list_runs(self, samples: bool = True) -> list[RunListing]:
        """Every run folder (:meth:`run_folders`, newest first); damaged ones listed with the reason.

        ``samples`` False reads each run.json alone (its stored summary), the
        samples when first needed (see :func:`load_run`).
        """
        out = []
        for folder in self.run_folders():
            try:
                out.append(RunListing(folder, load_run(folder, samples=samples)))
            except RunDamaged as exc:
                out.append(RunListing(folder, None, str(exc)))
            except Exception as exc:  # noqa: BLE001 - one run never stops the listing
                out.append(RunListing(folder, None, f"cannot be read ({type(exc).__name__})"))
        return out

    def sweep_folders(self) -> list[Path]:
        """The sweep and shape-sweep folders in the store's folder, newest first by their
        records' UTC creation time, as runs are (not runs: :meth:`list_runs` leaves them out)."""
        try:
            entries = list(self.root.iterdir()) if self.root.is_dir() else []
        except OSError:
            return []
        found = [f for f in entries if not f.name.startswith(".") and is_sweep_like(f)]
        found.sort(key=lambda f: (creation_time(_created_of(f, SWEEP_RECORDS), f.name), f.name), reverse=True)
        return found

    def delete(self, folder: str | Path) -> None:
        folder = Path(folder)
        if folder.resolve().parent != self.root.resolve():
            raise ValueError(f"{folder} is not a run of this store")
        shutil.rmtree(folder)
