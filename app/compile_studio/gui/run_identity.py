"""A run's identity in the window: the folder (or file) it was read from, never the id inside it.

A run's ``run.json`` names a ``run_id``, but a copied or renamed folder, a
sweep point or a crafted file can name any id: two folders with the same id
inside are two runs, and a run's diagnostics are those of its own folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..results import RunResult


def run_folder(run: RunResult | None) -> Path | None:
    """The folder ``run`` was read from (its why.json, traces and code live there), or None."""
    source = run.source if run is not None else None
    return source if source is not None and source.is_dir() else None


class RunKeys:
    """Short, stable names for the runs shown in one window (plot and table keys).

    A run read from disk is named after its folder (or file, without the suffix), with
    ``#2``, ``#3``… when another folder of the same name is already named. A
    run not read from disk is named by its id.
    """

    def __init__(self) -> None:
        self._by_place: dict[str, str] = {}
        self._taken: set[str] = set()

    def of_place(self, place: Path | None, fallback: str) -> str:
        """The key of the run read from ``place`` (``fallback`` when there is none)."""
        if place is None:
            return fallback
        where = os.path.abspath(place)
        key = self._by_place.get(where)
        if key is None:
            named = Path(where)
            base = (named.name if named.is_dir() else named.stem) or fallback
            key, n = base, 1
            while key in self._taken:
                n += 1
                key = f"{base}#{n}"
            self._by_place[where] = key
            self._taken.add(key)
        return key

    def of(self, run: RunResult) -> str:
        """The key of ``run``."""
        return self.of_place(run.source, run.run_id)
