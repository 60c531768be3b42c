"""Short names that tell the runs of one window apart, the same in the history, the legends,
the summary's axis, the table and an export's caption.

A run is named by its label, else by its date and time (``12-06 14:02:31``). Where two
runs would share a name, each of them gets its time (``fp32 test · 14:02:31``), then its
date and time, then ``#2``, ``#3``…: two runs that differ only in when they ran never look
alike. The names are made over every run the history lists, so a run keeps its name
whether it is shown alone or beside another.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from datetime import datetime

from ..results import RunResult


def _when(created: str) -> datetime | None:
    try:
        return datetime.fromisoformat(created)
    except (TypeError, ValueError):
        return None


def _label(run: RunResult) -> str:
    return run.config.label.strip() if run.config is not None else ""


def run_name_key(run: RunResult) -> str:
    """What tells one run from another: the folder (or file) it was read from, else its id."""
    return os.path.abspath(run.source) if run.source is not None else run.run_id


def distinct_names(items: list[tuple[str, datetime | None, str]]) -> list[str]:
    """One name per ``(label, when, fallback)``, none twice (see the module's text)."""

    def plain(label: str, when: datetime | None, fallback: str) -> str:
        if label:
            return label
        return when.strftime("%m-%d %H:%M:%S") if when is not None else fallback

    def timed(label: str, when: datetime | None, fallback: str) -> str:
        return f"{label} · {when:%H:%M:%S}" if label and when is not None else plain(label, when, fallback)

    def dated(label: str, when: datetime | None, fallback: str) -> str:
        return f"{label} · {when:%m-%d %H:%M:%S}" if label and when is not None else plain(label, when, fallback)

    names = [plain(*item) for item in items]
    for finer in (timed, dated):
        counts = Counter(names)
        names = [finer(*item) if counts[name] > 1 else name for item, name in zip(items, names)]
    counts = Counter(names)
    seen: Counter[str] = Counter()
    out = []
    for name in names:
        if counts[name] > 1:
            seen[name] += 1
            if seen[name] > 1:
                name = f"{name} #{seen[name]}"
        out.append(name)
    return out


class RunNames:
    """The names of the runs a window lists (:meth:`update`), and of any other run it shows (:meth:`of`)."""

    def __init__(self) -> None:
        self._by_key: dict[str, str] = {}
        #: the names the listed runs would have without their times (a new run's must differ)
        self._plain: set[str] = set()
        self._live: tuple[str, str] | None = None

    def update(self, runs: Iterable[RunResult]) -> None:
        """Name ``runs`` (every run the history lists) apart from each other."""
        runs = list(runs)
        items = [(_label(r), _when(r.created), r.run_id) for r in runs]
        names = distinct_names(items)
        self._by_key = {run_name_key(r): name for r, name in zip(runs, names)}
        self._plain = {distinct_names([item])[0] for item in items}

    def of(self, run: RunResult) -> str:
        """The name of ``run``: its listed one, else one no listed run has."""
        name = self._by_key.get(run_name_key(run))
        if name is not None:
            return name
        return self.new_name(_label(run), _when(run.created), run.run_id)

    def new_name(self, label: str, when: datetime | None, fallback: str) -> str:
        """The name of a run not listed (the one running): none of the listed runs has it, nor
        the name it would share with one of them."""
        taken = set(self._by_key.values()) | self._plain
        options = [
            distinct_names([(label, when, fallback)])[0],
            f"{label} · {when:%H:%M:%S}" if label and when is not None else "",
            f"{label} · {when:%m-%d %H:%M:%S}" if label and when is not None else "",
        ]
        for name in options:
            if name and name not in taken:
                return name
        base, n = options[0], 2
        while f"{base} #{n}" in taken:
            n += 1
        return f"{base} #{n}"

    def live_name(self, key: str, label: str, when: datetime | None) -> str:
        """The name of the running run ``key`` (kept while it runs)."""
        if self._live is None or self._live[0] != key:
            self._live = (key, self.new_name(label, when, key))
        return self._live[1]
