"""Which cores the worker and its child processes (Inductor's compile workers) may use.

Read from ``/proc`` alone (no psutil): the processes below this one, their
parent, name, command line and CPU affinity, polled from a thread while an
app run goes. A child started by a thread pinned to one core inherits that
one core: this is where it shows.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .figures import cpu_list

PROC = Path("/proc")
#: Inductor's compile worker says how many processes it runs: ``--workers=N``.
WORKERS_ARG = re.compile(r"--workers[= ](\d+)")


def parent_of(pid: int, proc: Path = PROC) -> int | None:
    """The parent pid from ``/proc/<pid>/stat`` (the name may hold spaces and parentheses)."""
    try:
        text = (proc / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    rest = text[text.rfind(")") + 2:].split()
    try:
        return int(rest[1])
    except (IndexError, ValueError):
        return None


def descendants(root: int, proc: Path = PROC) -> dict[int, int]:
    """Every process below ``root``: pid → depth (1 for a child)."""
    parents: dict[int, int] = {}
    try:
        entries = [int(p.name) for p in proc.iterdir() if p.name.isdigit()]
    except OSError:
        return {}
    for pid in entries:
        ppid = parent_of(pid, proc)
        if ppid is not None:
            parents[pid] = ppid
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    out: dict[int, int] = {}
    todo = [(c, 1) for c in children.get(root, [])]
    while todo:
        pid, depth = todo.pop()
        if pid in out:
            continue
        out[pid] = depth
        todo.extend((c, depth + 1) for c in children.get(pid, []))
    return out


def describe(pid: int, proc: Path = PROC) -> dict[str, Any] | None:
    """Name, command line, parent and cores of one process; None once it is gone."""
    try:
        name = (proc / str(pid) / "comm").read_text(errors="replace").strip()
        raw = (proc / str(pid) / "cmdline").read_bytes()
        cpus = sorted(os.sched_getaffinity(pid))
    except (OSError, AttributeError):
        return None
    cmd = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    return {"pid": pid, "ppid": parent_of(pid, proc), "name": name, "cmd": cmd[:240],
            "cpus": cpu_list(cpus), "cpu_count": len(cpus)}


@dataclass
class ProcessWatch:
    """Polls a process (``root()``: its pid once there is one) and those below it until stopped."""

    root: Callable[[], int | None]
    interval_s: float = 0.5
    seen: dict[int, dict[str, Any]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _t0: float = field(default_factory=time.monotonic)

    def start(self) -> ProcessWatch:
        self._thread = threading.Thread(target=self._loop, name="process-watch", daemon=True)
        self._thread.start()
        return self

    def poll(self) -> None:
        """Record the root and every process below it now (cores at first and at last sight)."""
        root = self.root()
        if root is None:
            return
        t = round(time.monotonic() - self._t0, 2)
        for pid, depth in {root: 0, **descendants(root)}.items():
            info = describe(pid)
            if info is None:
                continue
            known = self.seen.get(pid)
            if known is None:
                info.update(depth=depth, first_s=t, last_s=t, cpus_first=info["cpus"])
                self.seen[pid] = info
            else:
                known.update(last_s=t, cpus=info["cpus"], cpu_count=info["cpu_count"],
                             cmd=info["cmd"] or known["cmd"])

    def _loop(self) -> None:
        while True:
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - a process gone mid-read is no reason to stop
                pass
            if self._stop.wait(self.interval_s):
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        try:
            self.poll()
        except Exception:  # noqa: BLE001
            pass

    def figures(self) -> dict[str, Any]:
        """The root (the worker), the processes below it, and its compile workers' count."""
        procs = sorted(self.seen.values(), key=lambda p: (p["depth"], p["first_s"], p["pid"]))
        worker = next((p for p in procs if p["depth"] == 0), None)
        below = [p for p in procs if p["depth"] >= 1]
        threads = None
        for p in below:
            m = WORKERS_ARG.search(p["cmd"])
            if m:
                threads = int(m.group(1))
                break
        return {
            "worker": worker,
            "worker_children": below,
            "worker_compile_threads": threads,
            "children_cpus": sorted({p["cpus"] for p in below}),
        }
