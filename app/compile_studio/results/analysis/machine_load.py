"""How busy this machine is: load average, CPU count, the busiest other processes.

Read by the supervising side (the window or the CLI) before and after a run,
with ``psutil``; the worker never imports this module, so a remote worker
needs nothing beyond the standard library, torch and numpy.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

#: Processes listed in :attr:`MachineLoad.busiest`.
TOP_PROCESSES = 5
#: Seconds between the two CPU-time readings that give each process's CPU share.
SAMPLE_S = 0.25


@dataclass(frozen=True)
class BusyProcess:
    """One process and the CPU it used while sampled (100 = one whole core)."""

    pid: int
    name: str
    cpu_percent: float


@dataclass(frozen=True)
class MachineLoad:
    """A snapshot of the machine's load."""

    #: 1, 5 and 15 minute load averages (None where the system has none)
    load_average: tuple[float, float, float] | None
    cpu_count: int | None
    #: whole-machine CPU use over the sampling interval, % of all cores
    cpu_percent: float | None
    #: the busiest processes other than the excluded ones, busiest first
    busiest: list[BusyProcess] = field(default_factory=list)
    #: the sampling interval, seconds
    sampled_s: float = 0.0

    @property
    def load_per_cpu(self) -> float | None:
        """The 1-minute load average per CPU (above 1: more runnable work than cores)."""
        if self.load_average is None or not self.cpu_count:
            return None
        return self.load_average[0] / self.cpu_count

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["load_average"] = list(self.load_average) if self.load_average is not None else None
        return d

    def summary(self) -> str:
        """One line, e.g. ``load 1.9 on 2 CPUs; busiest: python 97 %, Xorg 12 %``."""
        parts = []
        if self.load_average is not None:
            parts.append(f"load {self.load_average[0]:.1f}")
        if self.cpu_count:
            parts[-1:] = [f"{parts[-1]} on {self.cpu_count} CPUs"] if parts else [f"{self.cpu_count} CPUs"]
        busy = [p for p in self.busiest if p.cpu_percent >= 1.0]
        if busy:
            parts.append("busiest: " + ", ".join(f"{p.name} {p.cpu_percent:.0f} %" for p in busy))
        return "; ".join(parts)


def machine_load(
    exclude_pids: Iterable[int] = (), top: int = TOP_PROCESSES, sample_s: float = SAMPLE_S
) -> MachineLoad:
    """Measure the load now: sleeps ``sample_s`` seconds between two CPU-time readings.

    This process and ``exclude_pids`` (e.g. the worker) are left out of the
    busiest list. Processes that end or cannot be read are skipped.
    """
    import psutil

    excluded = {os.getpid(), *exclude_pids}
    try:
        load: tuple[float, float, float] | None = tuple(os.getloadavg())  # type: ignore[assignment]
    except (AttributeError, OSError):
        load = None
    procs = []
    for proc in psutil.process_iter(["pid", "name"]):
        if proc.info["pid"] in excluded:
            continue
        try:
            proc.cpu_percent(None)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        procs.append(proc)
    psutil.cpu_percent(None)
    time.sleep(max(0.0, sample_s))
    total = psutil.cpu_percent(None)
    busy = []
    for proc in procs:
        try:
            used = proc.cpu_percent(None)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        busy.append(BusyProcess(pid=proc.info["pid"], name=proc.info["name"] or "?", cpu_percent=float(used)))
    busy.sort(key=lambda p: p.cpu_percent, reverse=True)
    return MachineLoad(
        load_average=load,
        cpu_count=psutil.cpu_count(logical=True),
        cpu_percent=float(total),
        busiest=busy[: max(0, top)],
        sampled_s=sample_s,
    )
