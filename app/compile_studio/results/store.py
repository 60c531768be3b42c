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
from datetime import datetime
from pathlib import Path

from .run_load import load_run
from .run_result import RunResult
from .schema import RunDamaged

#: The record file of a sweep folder (``results.sweep_store``): such a folder is no run.
SWEEP_RECORDS = ("sweep.json", "shape_sweep.json")


def is_sweep_like(folder: Path) -> bool:
    """Whether ``folder`` holds a sweep (or shape-sweep) record rather than a run."""
    try:
        return folder.is_dir() and any((folder / name).is_file() for name in SWEEP_RECORDS)
    except OSError:
        return False


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
        when = when or datetime.now()
        base = f"{when:%Y%m%d-%H%M%S}_{re.sub(r'[^A-Za-z0-9_.+-]', '-', slug)[:80]}"
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

    def list_runs(self, samples: bool = True) -> list[RunListing]:
        """Every run folder, newest first; damaged ones listed with the reason.

        ``samples`` False reads each run.json alone (its stored summary), the
        samples when first needed (see :func:`load_run`).
        """
        if not self.root.is_dir():
            return []
        out = []
        try:
            entries = sorted(self.root.iterdir(), reverse=True)
        except OSError:
            return []
        for folder in entries:
            if not folder.is_dir() or folder.name.startswith(".") or is_sweep_like(folder):
                continue
            try:
                out.append(RunListing(folder, load_run(folder, samples=samples)))
            except RunDamaged as exc:
                out.append(RunListing(folder, None, str(exc)))
            except Exception as exc:  # noqa: BLE001 - one run never stops the listing
                out.append(RunListing(folder, None, f"cannot be read ({type(exc).__name__})"))
        return out

    def sweep_folders(self) -> list[Path]:
        """The sweep and shape-sweep folders in the store's folder, newest first (not runs:
        :meth:`list_runs` leaves them out)."""
        try:
            entries = sorted(self.root.iterdir(), reverse=True) if self.root.is_dir() else []
        except OSError:
            return []
        return [f for f in entries if not f.name.startswith(".") and is_sweep_like(f)]

    def delete(self, folder: str | Path) -> None:
        folder = Path(folder)
        if folder.resolve().parent != self.root.resolve():
            raise ValueError(f"{folder} is not a run of this store")
        shutil.rmtree(folder)
