"""Kinds of target, registered: each says its words, its fields, its own checks, how it reads and its launcher.

A kind (``local``, ``ssh``, ``slurm``, or one registered by a plugin or a
test) is a :class:`TargetKind`. The targets file, its checks, ``targets``
on the command line, the window's Targets dialog and :func:`remote.launcher_for`
all ask the registry, so a new kind is one :func:`register_kind` call with a
launcher factory: nothing else to edit. The fields are the target's own
(:class:`target.Target`); a kind names the ones it uses. A launcher is a
callable, or ``"module:function"`` of this package, imported when first used
(the launchers import the targets file, which imports this module; this
module imports neither, not even for its type hints' sake: ``target.Target``
and ``target.TargetLookup`` are what it names).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .gpu_pool import GpuPool
    from .supervisor import WorkerLauncher
    from .target import Target, TargetLookup
    from .worker_bundle import WorkerBundle


@dataclass(frozen=True)
class LaunchPlan:
    """What a launcher factory gets besides the target: the other targets, a sweep point's
    index, the worker bundle to use and the pool of GPUs the workers share."""

    targets: TargetLookup | None = None
    index: int | None = None
    bundle: WorkerBundle | None = None
    pool: GpuPool | None = None
    #: the GPU picked for this worker from ``gpu_ids`` (kinds that hand out GPUs)
    gpu: int | None = None


@dataclass(frozen=True)
class TargetKind:
    """A kind of target (see the module's notes)."""

    name: str
    #: how the kind reads in lists and the dialog ("SSH host")
    words: str
    #: the target's fields this kind uses (besides ``name`` and ``kind``)
    fields: frozenset[str]
    #: the worker's launcher for a target of this kind (or ``"module:function"``, see above)
    launcher: Callable[[Target, LaunchPlan], WorkerLauncher] | str
    #: one line for lists: where the target is
    describe: Callable[[Target], str] = field(default=lambda target: target.name)
    #: problems of a whole target of this kind (its fields are checked one by one before)
    check: Callable[[dict[str, Any]], list[str]] = field(default=lambda values: [])
    #: workers on this target get one GPU each of ``gpu_ids`` (CUDA_VISIBLE_DEVICES); False:
    #: the kind gives its workers their GPUs itself (a Slurm job step's ``--gres``)
    hands_out_gpus: bool = True
    #: the order of the kind in lists
    order: int = 100

    def make_launcher(self, target: Target, plan: LaunchPlan) -> WorkerLauncher:
        """The launcher of one worker on ``target``."""
        factory = self.launcher
        if isinstance(factory, str):
            module, _, name = factory.partition(":")
            factory = getattr(importlib.import_module(module, __package__), name)
        return factory(target, plan)


_KINDS: dict[str, TargetKind] = {}


def register_kind(kind: TargetKind) -> None:
    """Add (or replace) a kind of target."""
    _KINDS[kind.name] = kind


def unregister_kind(name: str) -> None:
    """Remove a kind (targets of it then load as invalid, saying the kind is unknown)."""
    _KINDS.pop(name, None)


def target_kind(name: str) -> TargetKind:
    """The kind called ``name``; KeyError when none is registered."""
    return _KINDS[name]


def kind_names() -> tuple[str, ...]:
    """The registered kinds' names, in their order."""
    return tuple(k.name for k in sorted(_KINDS.values(), key=lambda k: k.order))


def describe_target(target: Target) -> str:
    """One line for lists: the target's kind and where it is, as its kind says it."""
    kind = _KINDS.get(target.kind)
    if kind is None:
        return f"{target.kind} (a kind this version does not know)"
    return kind.describe(target)


def kind_words(name: str) -> str:
    """How the kind ``name`` reads ("SSH host"); the name itself for an unknown kind."""
    kind = _KINDS.get(name)
    return kind.words if kind is not None else name



# -- the kinds that come with the app ------------------------------------------------------------

def _local_describe(target: Target) -> str:
    return "this machine" + (f", GPUs {','.join(map(str, target.gpu_ids))}" if target.gpu_ids else "")


def _local_check(values: dict[str, Any]) -> list[str]:
    name = values["name"]
    if name != "local" and any(values.get(k) for k in ("host", "via", "partition", "python", "preamble")):
        return [f"target {name!r}: a local target takes only gpu_ids and workers"]
    return []


def _ssh_describe(target: Target) -> str:
    where = f"{target.user + '@' if target.user else ''}{target.host}"
    where += f":{target.port}" if target.port else ""
    return f"SSH host {where}" + (f", python {target.python}" if target.python else "")


def _ssh_check(values: dict[str, Any]) -> list[str]:
    return [] if values.get("host") else [f"target {values['name']!r}: an SSH target needs a host"]


def _slurm_describe(target: Target) -> str:
    parts = [f"partition {target.partition}" if target.partition else "default partition"]
    if target.gpus:
        parts.append(f"{target.gpus} GPU" + ("s" if target.gpus > 1 else ""))
    if target.time_limit:
        parts.append(f"time {target.time_limit}")
    if target.account:
        parts.append(f"account {target.account}")
    login = f" via {target.via}" if target.via else " on this machine"
    return "Slurm" + login + ": " + ", ".join(parts)


register_kind(TargetKind(
    name="local", words="this machine", fields=frozenset({"gpu_ids", "workers"}),
    launcher=".local_launcher:local_launcher", describe=_local_describe, check=_local_check, order=10,
))
register_kind(TargetKind(
    name="ssh", words="SSH host",
    fields=frozenset({"host", "port", "user", "identity", "ssh_options", "python", "preamble", "gpu_ids",
                      "workers"}),
    launcher=".remote:ssh_launcher", describe=_ssh_describe, check=_ssh_check, order=20,
))
register_kind(TargetKind(
    name="slurm", words="Slurm",
    fields=frozenset({"via", "python", "preamble", "partition", "gpus", "gpu_type", "time_limit", "account",
                      "srun_flags", "workers"}),
    launcher=".remote:slurm_launcher", describe=_slurm_describe, hands_out_gpus=False, order=30,
))
