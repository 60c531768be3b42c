"""The front ends' one door to workers: where one runs, asking a machine what it has, a worker started ahead.

The window and the CLI reach worker processes through this module and the
session (:mod:`compile_studio.jobs.session`), never through the launchers
beneath: a launcher (this machine, an SSH host, a Slurm cluster) is made
here from a target, a probe is a worker asked for its hello, a standby is
a worker started ahead for the next run. The import contracts in
pyproject.toml hold the front ends to it. No Qt, no torch here.
"""

from __future__ import annotations

from ..launchers.remote import RemoteLauncher, launcher_for
from ..launchers.standby_worker import StandbyWorker
from ..launchers.supervisor import (
    ProbeFailed,
    WorkerLauncher,
    WorkerProcess,
    WorkerStartFailed,
    probe_environment,
)

__all__ = [
    "ProbeFailed",
    "RemoteLauncher",
    "StandbyWorker",
    "WorkerLauncher",
    "WorkerProcess",
    "WorkerStartFailed",
    "launcher_for",
    "probe_environment",
]
