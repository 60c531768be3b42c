"""Kinds of job, registered: each names its part in the window (menu entries, view) and in the CLI (a subcommand).

A kind (``sweep``, ``trial``, ``coldstart``, or one registered by a plugin or a
test) is a :class:`JobKind`; its job is a class of the :class:`~compile_studio.jobs.job.Job`
shape, run by the window on ``gui/job_thread.JobThread`` and by the CLI with
``cli/job_end.run_to_end``. The window's menus and the CLI's subcommands ask
this registry, so a new kind is its job, its window part, its CLI part and one
:func:`register_job_kind` call: nothing else to edit. A part is a callable or
``"module:function"`` of the app, imported only by the front end that uses it
(this module imports neither Qt nor the CLI). A single run is no kind here: it
is the window's Run button and ``compile-studio-cli run``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["JobKind", "job_kind", "job_kinds", "register_job_kind", "unregister_job_kind"]


def _resolve(part: Callable[[Any], Any] | str) -> Callable[[Any], Any]:
    if isinstance(part, str):
        module, _, name = part.partition(":")
        return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]
    return part


@dataclass(frozen=True)
class JobKind:
    """A kind of job as the front ends offer it (see the module's notes)."""

    name: str
    #: the window's part: a function of the main window that adds the kind's menu entries (and
    #: its view) and returns the part the window keeps (its view), whose ``close_job(wait_ms)``,
    #: if it has one, the window calls as it closes (stop the job, keep what it measured);
    #: None: not in the window
    window: Callable[[Any], Any] | str | None = None
    #: the CLI's part: ``register(sub)`` adding the kind's subcommand to the subparsers; None: none
    cli: Callable[[Any], None] | str | None = None
    #: the order of the kind in the window's menus and among the CLI's subcommands
    order: int = 100

    def install(self, window: Any) -> Any:
        """Add the kind's part to ``window``; returns it (None for a kind not in the window)."""
        return _resolve(self.window)(window) if self.window is not None else None

    def add_command(self, sub: Any) -> None:
        """Add the kind's subcommand to the CLI's subparsers ``sub`` (nothing for a kind without)."""
        if self.cli is not None:
            _resolve(self.cli)(sub)


_KINDS: dict[str, JobKind] = {}


def register_job_kind(kind: JobKind) -> None:
    """Add (or replace) a kind of job."""
    _KINDS[kind.name] = kind


def unregister_job_kind(name: str) -> None:
    """Remove a kind: its menu entries and subcommand are gone from windows and parsers made after."""
    _KINDS.pop(name, None)


def job_kind(name: str) -> JobKind:
    """The kind called ``name``; KeyError when none is registered."""
    return _KINDS[name]


def job_kinds() -> tuple[JobKind, ...]:
    """The registered kinds, in their order."""
    return tuple(sorted(_KINDS.values(), key=lambda k: k.order))


# -- the kinds that come with the app ------------------------------------------------------------
# the sweep and the shape sweep: the Sweep menu and dock, ``compile-studio-cli sweep``
register_job_kind(JobKind(
    "sweep", window="compile_studio.gui.sweep_dock:install_sweep_view",
    cli="compile_studio.cli.sweep:register", order=10,
))
# the comparison of a run against a suggestion: the Why tab's Try it, ``compile-studio-cli advise --try``
register_job_kind(JobKind("trial", cli="compile_studio.cli.advise:register", order=5))
# the start-up cost: Run ▸ Start-up cost… and its dock, ``compile-studio-cli coldstart``
register_job_kind(JobKind(
    "coldstart", window="compile_studio.gui.coldstart_view:install_coldstart_view",
    cli="compile_studio.cli.coldstart:register", order=30,
))
