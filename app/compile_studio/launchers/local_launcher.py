"""The ``local`` kind's launcher: a worker on this machine, on one GPU of the target's list when it has one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .gpu_pool import LocalGpuLauncher
from .supervisor import WorkerLauncher

if TYPE_CHECKING:
    from .target import Target
    from .target_kinds import LaunchPlan


def local_launcher(target: Target, plan: LaunchPlan) -> WorkerLauncher:
    """This machine's worker, on one GPU of ``gpu_ids`` when it lists some (the ``local`` kind's launcher)."""
    prefix = WorkerLauncher.local()
    if plan.gpu is None and plan.pool is None:
        return prefix
    return LocalGpuLauncher(prefix=prefix.prefix, prefix_problem=prefix.prefix_problem,
                            gpu=plan.gpu, pool=plan.pool)
