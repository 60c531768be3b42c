"""The code a configuration would run, named and hashed, for the user's say-so.

A run folder, a sweep record or a ``--config`` file received from someone else
may name Python code: a custom model's factory and the backend modules the
worker imports first. Before a job whose configuration came from such a file
(run, sweep, shape sweep, trial, resume, "load its configuration" then Run,
``--config``) the front end asks about the code of **every configuration the
job will run** — the sweep's points, the trial's tried configurations — found
by one function, :func:`code_of_configs`; a job built from the user's own form
or flags is not asked. Nothing here imports or runs the code it names.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..core.config import BenchmarkConfig
from ..core.model_specs import factory_file

#: Files larger than this are named but not hashed (they are not Python sources people write).
MAX_HASHED_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class CodeRef:
    """One piece of code a configuration names: what it is, the spec, its file and sha256."""

    what: str
    spec: str
    #: the file the worker would import (None: a module found on the worker's import path)
    path: str | None = None
    sha256: str | None = None
    #: why there is no hash (file missing, unreadable, too large, module by name)
    note: str = ""

    def line(self) -> str:
        """One line for a terminal or a dialog (control characters made visible)."""
        from ..results.run_result import plain_text

        where = plain_text(self.path, 400) if self.path else "imported by name"
        digest = f"sha256 {self.sha256}" if self.sha256 else plain_text(self.note, 200)
        return f"{self.what}: {plain_text(self.spec, 300)} — {where} — {digest}"


def _hash(path: Path) -> tuple[str | None, str]:
    try:
        if not path.is_file():
            return None, "no such file here"
        if path.stat().st_size > MAX_HASHED_BYTES:
            return None, "too large to hash"
        return hashlib.sha256(path.read_bytes()).hexdigest(), ""
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or exc}"


def _module_source(target: str, model_path: str) -> Path | None:
    from ..core.model_specs import _module_file

    return _module_file(target, model_path)


def _ref(what: str, spec: str, path: Path | None) -> CodeRef:
    if path is None:
        return CodeRef(what, spec, None, None, "a module imported by name from the worker's import path")
    resolved = path.expanduser()
    try:
        resolved = resolved.resolve()
    except (OSError, RuntimeError):
        pass
    digest, note = _hash(resolved)
    return CodeRef(what, spec, str(resolved), digest, note)


def named_code(config: BenchmarkConfig) -> list[CodeRef]:
    """Every piece of code ``config`` would have the worker import (factory, backend modules)."""
    refs: list[CodeRef] = []
    if config.model == "custom" and config.factory.strip():
        spec = config.factory.strip()
        path = factory_file(spec)
        if path is None:
            path = _module_source(spec.rsplit(":", 1)[0], config.model_path)
        refs.append(_ref("factory", spec, path))
    for spec in config.backend_modules:
        spec = spec.strip()
        if not spec:
            continue
        if spec.endswith(".py") or "/" in spec or "\\" in spec:
            refs.append(_ref("backend module", spec, Path(spec)))
        else:
            refs.append(_ref("backend module", spec, _module_source(spec, "")))
    return refs


def describe(refs: list[CodeRef]) -> str:
    """The refs as lines, for a prompt (empty when nothing is named)."""
    return "\n".join(f"  {ref.line()}" for ref in refs)


class TrustRefused(Exception):
    """A configuration from a received file names code the user did not agree to run."""

    def __init__(self, source: str, refs: list[CodeRef]):
        self.source = source
        self.refs = refs
        super().__init__(
            f"{source} names code that would run in the worker:\n{describe(refs)}\n"
            "run it only if you trust it: add --trust-code, or answer yes when asked"
        )


def code_from_file(config: BenchmarkConfig, given_by_user: set[str] | None = None) -> list[CodeRef]:
    """The code ``config`` names that came from a file: refs of the fields in ``given_by_user``
    (the user's own flags or form) are left out."""
    given = given_by_user or set()
    refs = named_code(config)
    keep = []
    for ref in refs:
        field = "factory" if ref.what == "factory" else "backend_modules"
        if field not in given:
            keep.append(ref)
    return keep


def code_of_configs(
    configs: Iterable[BenchmarkConfig], given_by_user: set[str] | None = None
) -> list[CodeRef]:
    """The code any of ``configs`` (every configuration a job will run) names, each piece once.

    The one question every job asks: a sweep's points (a point may make the base's factory
    the model, ``model=custom``), a trial's tried configurations, a run's one. Fields in
    ``given_by_user`` (the user's own flags or form) are left out.
    """
    refs: list[CodeRef] = []
    seen: set[tuple[object, ...]] = set()
    for config in configs:
        key = (config.model, config.factory, config.model_path, tuple(config.backend_modules))
        if key in seen:
            continue
        seen.add(key)
        refs.extend(r for r in code_from_file(config, given_by_user) if r not in refs)
    return refs


def agreed_in_terminal(
    refs: list[CodeRef],
    source: str,
    trusted: bool,
    stdin: TextIO | None = None,
    stderr: TextIO | None = None,
) -> bool:
    """Whether the code in ``refs`` (named by ``source``) may run: yes without refs or with
    ``--trust-code``; an interactive terminal is asked; anything else is a no (said on stderr)."""
    if not refs or trusted:
        return True
    stdin = stdin if stdin is not None else sys.stdin
    stderr = stderr if stderr is not None else sys.stderr
    interactive = False
    try:
        interactive = stdin is not None and stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if not interactive:
        stderr.write(f"error: {TrustRefused(source, refs)}\n")
        return False
    stderr.write(
        f"{source} names code that would run in the worker as you:\n{describe(refs)}\n"
        "Run it? Only if you trust it and its author [y/N] "
    )
    stderr.flush()
    try:
        answer = stdin.readline(100)
    except (OSError, ValueError, KeyboardInterrupt):
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    stderr.write("not run: the code was not agreed to\n")
    return False
