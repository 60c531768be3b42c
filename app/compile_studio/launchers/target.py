"""One place a worker can run (:class:`Target`), as plain data: the file, its checks and its kinds build on it.

How a target reads in lists is its kind's to say (:func:`target_kinds.describe_target`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Target:
    """One place a worker can run.

    ``kind`` ``ssh``: ``host`` as in ``~/.ssh/config`` (jump hosts, keys and
    agents work through the system ``ssh``), optional ``port``, ``user``,
    ``identity`` and ``ssh_options`` (extra ``ssh`` arguments from a short
    list, e.g. ``["-o", "ConnectTimeout=10"]``; see the module's notes).
    ``kind`` ``slurm``: ``srun`` job steps
    with ``partition``, ``gpus`` (``--gres=gpu[:gpu_type]:N``), ``time_limit``,
    ``account`` and ``srun_flags``; on this machine, or on the login node
    named by ``via`` (an SSH target). ``python`` is the Python that runs the
    worker there (a venv path or command), ``preamble`` shell lines run
    before it (``module load cuda; conda activate torch``). ``gpu_ids``: on
    a multi-GPU machine, the GPUs to spread concurrent workers over (one
    worker per GPU, through ``CUDA_VISIBLE_DEVICES``); ``workers``: how many
    run at once (0: one per listed GPU, else 1).
    """

    name: str
    kind: str = "local"
    host: str = ""
    port: int | None = None
    user: str = ""
    identity: str = ""
    ssh_options: tuple[str, ...] = ()
    python: str = ""
    preamble: str = ""
    via: str = ""
    partition: str = ""
    gpus: int = 0
    gpu_type: str = ""
    time_limit: str = ""
    account: str = ""
    srun_flags: tuple[str, ...] = ()
    gpu_ids: tuple[int, ...] = ()
    workers: int = 0

    @property
    def is_local(self) -> bool:
        return self.kind == "local"

    def concurrency(self) -> int:
        """How many workers of a sweep run at once on this target."""
        if self.workers > 0:
            return self.workers
        return max(1, len(self.gpu_ids))

    def to_dict(self) -> dict[str, Any]:
        """The target as stored: only the fields that differ from their defaults."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        for f in dataclasses.fields(self):
            if f.name in out:
                continue
            value = getattr(self, f.name)
            default = f.default if f.default is not dataclasses.MISSING else None
            if value != default and value not in ((), ""):
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


class TargetLookup(Protocol):
    """The other targets, by name (a Slurm target's login node ``via`` is one of them)."""

    def get(self, name: str) -> Target:
        """The target called ``name``; KeyError when there is none."""
        ...
