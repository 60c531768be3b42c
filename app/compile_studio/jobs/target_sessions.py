"""Sessions whose worker runs on a target: one run, or a sweep's points (a GPU or a job step each)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import protocol
from ..core.config import BenchmarkConfig
from ..launchers.remote import GpuPool, launcher_for
from ..launchers.target_kinds import target_kind
from ..launchers.targets import Target, Targets, load_targets
from ..results.storage.store import RunStore
from .session import RunSession


def session_for(
    target: Target | str,
    config: BenchmarkConfig,
    store: RunStore | None,
    index: int | None = None,
    targets: Targets | None = None,
    **kwargs: Any,
) -> RunSession:
    """A :class:`~compile_studio.jobs.session.RunSession` whose worker runs on ``target``.

    Sweep point ``index`` gets its own worker (its own GPU, or its own job step).
    """
    return RunSession(config, store, launcher=launcher_for(target, targets, index), **kwargs)


def session_factory(
    target: Target | str, targets: Targets | None = None
) -> Callable[..., RunSession]:
    """A sweep's ``session_factory`` for ``target``: ``factory(config, store, on_event, on_log)``.

    Concurrent points on a target with ``gpu_ids`` get one GPU each from a
    shared :class:`GpuPool` (a point waits for a free one); on Slurm each
    point is its own job step. Run ``target.concurrency()`` points at once.
    """
    if isinstance(target, str):
        targets = targets if targets is not None else load_targets()
        target = targets.get(target)
    resolved = target
    hands_out = target_kind(resolved.kind).hands_out_gpus
    pool = GpuPool(resolved.gpu_ids) if resolved.gpu_ids and hands_out else None

    def factory(config: BenchmarkConfig, store: RunStore | None,
                on_event: Callable[[protocol.Event], None] | None = None,
                on_log: Callable[[str], None] | None = None) -> RunSession:
        launcher = launcher_for(resolved, targets, pool=pool)
        return RunSession(config, store, launcher=launcher, on_event=on_event, on_log=on_log)

    return factory
