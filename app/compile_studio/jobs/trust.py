"""The code a configuration would run, named and hashed, for the user's say-so.

A run folder, a sweep record or a ``--config`` file received from someone else
may name Python code: a custom model's factory and the backend modules the
worker imports first. Before a job whose configuration came from such a file
(run, sweep, shape sweep, trial, resume, "load its configuration" then Run,
``--config``) the front end asks about the code of **every configuration the
job will run** — the sweep's points, the trial's tried configurations — found
by one function, :func:`code_of_configs`; a job built from the user's own form
or flags is not asked. Nothing here imports or runs the code it names.

Trust binds to bytes. At agreement, each agreed file is read once, its sha256
checked against the one shown, and those bytes copied into a private cache keyed
by the hash (``<data dir>/agreed-code/sha256-<hex>/<name>.py``, a folder only the
user can read); the job runs that copy (:meth:`Agreement.apply`), and the worker
checks the hash in the copy's folder name against the bytes it imports. A file
changed after it was shown is not copied: it is a new question
(:class:`CodeChanged`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..core.config import BenchmarkConfig
from ..core.model_specs import factory_file

#: Files larger than this are named but not hashed (they are not Python sources people write).
MAX_HASHED_BYTES = 64 * 1024 * 1024
#: The private cache of agreed code, under the user's data folder.
AGREED_FOLDER = "agreed-code"
#: The start of an agreed copy's folder name; the rest is the copy's sha256 (the worker checks it).
PIN_PREFIX = "sha256-"


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
        from ..results.records.run_result import plain_text

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


class CodeChanged(Exception):
    """An agreed file whose bytes are no longer those shown: not run, asked about again."""

    def __init__(self, ref: CodeRef, now: str | None):
        self.ref = ref
        super().__init__(
            f"{ref.path} changed after it was shown (sha256 {ref.sha256} shown, "
            f"{now or 'unreadable'} now): not run; start again to be asked about the new code"
        )


def agreed_code_root() -> Path:
    """The private cache of agreed code (``<data dir>/agreed-code``)."""
    from ..results.storage.locations import default_data_dir

    return default_data_dir() / AGREED_FOLDER


def _resolved(path: str) -> str:
    try:
        return str(Path(path).expanduser().resolve())
    except (OSError, RuntimeError):
        return path


@dataclass
class Agreement:
    """The code a job was agreed to run: each agreed file's private copy, by the file's path.

    :meth:`apply` makes a configuration name the copies; a job runs only configurations
    passed through it. An empty agreement (nothing asked) changes nothing.
    """

    copies: dict[str, str] = field(default_factory=dict)

    def _copy_of(self, spec: str) -> str | None:
        return self.copies.get(_resolved(spec.strip())) if spec.strip() else None

    def apply(self, config: BenchmarkConfig) -> BenchmarkConfig:
        """``config`` with each agreed file it names replaced by its agreed copy."""
        if not self.copies:
            return config
        changes: dict[str, object] = {}
        path = factory_file(config.factory.strip())
        if path is not None:
            copy = self._copy_of(str(path))
            if copy is not None:
                changes["factory"] = f"{copy}:{config.factory.strip().rsplit(':', 1)[1]}"
        modules = [self._copy_of(m) or m for m in config.backend_modules]
        if modules != list(config.backend_modules):
            changes["backend_modules"] = modules
        return dataclasses.replace(config, **changes) if changes else config  # type: ignore[arg-type]

    def sessions(self, factory: Callable[..., Any]) -> Callable[..., Any]:
        """A session factory (a sweep's, a trial's) whose sessions run the agreed copies."""
        if not self.copies:
            return factory

        def make(config: BenchmarkConfig, *args: Any, **kwargs: Any) -> Any:
            return factory(self.apply(config), *args, **kwargs)

        return make


def _private_folder(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)


def _copy_agreed(ref: CodeRef, root: Path) -> str:
    """The agreed copy of ``ref``'s file: its bytes read once, checked, written under their hash."""
    assert ref.path is not None and ref.sha256 is not None
    try:
        with open(ref.path, "rb") as fh:
            data = fh.read(MAX_HASHED_BYTES + 1)
    except OSError:
        raise CodeChanged(ref, None) from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != ref.sha256:
        raise CodeChanged(ref, digest)
    _private_folder(root)
    folder = root / f"{PIN_PREFIX}{digest}"
    _private_folder(folder)
    target = folder / (Path(ref.path).name or "code.py")
    try:
        if hashlib.sha256(target.read_bytes()).hexdigest() == digest:
            return str(target)
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".agreeing-", suffix=".py")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o400)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return str(target)


def _names_a_file(ref: CodeRef) -> bool:
    """Whether ``ref``'s spec names its file (a factory FILE.py:FUNCTION, a backend module's path)."""
    if ref.what == "factory":
        return factory_file(ref.spec) is not None
    return ref.spec.endswith(".py") or "/" in ref.spec or "\\" in ref.spec


def agree(refs: list[CodeRef], root: Path | None = None) -> Agreement:
    """The :class:`Agreement` for ``refs`` just agreed to: each file with a hash copied (its bytes
    checked against the hash shown). Raises :class:`CodeChanged` when a file changed since it
    was shown, OSError when the cache cannot be written."""
    root = root if root is not None else agreed_code_root()
    copies: dict[str, str] = {}
    for ref in refs:
        if ref.path is None or ref.sha256 is None or not _names_a_file(ref):
            continue  # a module imported by name, or a file that cannot be hashed: nothing to copy
        copies[_resolved(ref.path)] = _copy_agreed(ref, root)
    return Agreement(copies)


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
