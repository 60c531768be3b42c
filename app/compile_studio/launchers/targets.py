"""Where a run goes: this machine, an SSH host, or a Slurm cluster (no Qt, no torch).

Targets are a named list kept in ``targets.json`` in the app's config folder
(``$COMPILE_STUDIO_SETTINGS_DIR`` when set, else the platform's config folder
under ``CompileStudio``), or at ``$COMPILE_STUDIO_TARGETS``. The window and
the CLI read the same file.

**It is untrusted input.** A targets file travels between people, so
:func:`load_targets` reads it only when it is a regular file (not a link, a
FIFO or a device; opened without blocking, at most 1 MiB) and checks every
field's type, size and spelling. A target with a problem is kept aside as
*invalid* with the reason in words (:attr:`Targets.invalid`): the others
still load, it cannot be chosen, and it is written back unchanged.

What the fields of a target can make happen, and where:

- ``host``, ``user``, ``port``, ``identity`` and ``ssh_options`` become
  arguments of the system ``ssh`` (a list of arguments, never a shell line).
  ``ssh_options`` may hold only the options of :data:`SSH_FLAGS` and
  :data:`SSH_CONFIG_KEYS` (:func:`ssh_option_problems`), each value checked:
  ``ssh`` can run a command on this machine (``ProxyCommand``,
  ``LocalCommand``/``PermitLocalCommand``, ``KnownHostsCommand``,
  ``Match exec``), load a library (``-I``, ``PKCS11Provider``,
  ``SecurityKeyProvider``), hand the host your agent or display (``-A``,
  ``-X``, ``ForwardAgent``) or open ports (``-L``, ``-R``, ``-D``), and
  none of those is accepted, in any spelling (``-oKey=…``, ``-o Key …``,
  ``-o`` and ``Key=…`` as two items, bundled flags such as ``-Co…``, any
  case, quoted keys). What a user wants beyond the list goes in their own
  ``~/.ssh/config``, which ``ssh`` reads as always.
- ``-F FILE`` (another ssh config file) is accepted only when that file
  passes the same check, line by line, when the targets are loaded: an
  absolute path (``ssh`` does not expand ``~``), a regular file owned by you
  (or root) that no one else can write, in a folder no one else can write
  (or a sticky one such as ``/tmp``),
  with no ``Include`` or ``Match`` and only the keys of
  :data:`SSH_CONFIG_KEYS` (plus ``Host``). ``-F none`` is accepted.
- ``ProxyJump`` / ``-J`` is accepted: ``ssh`` runs itself (``ssh -W``) to
  reach the jump host, no other command, and the jump hosts are checked to
  be plain ``[user@]host[:port]`` names (no option look-alike, no shell
  characters), so nothing in them can reach the shell ``ssh`` uses for it.
- ``srun_flags`` are arguments of ``srun``; ``--prolog`` and ``--epilog``
  (which make ``srun`` run a program where it runs) are refused.
- ``python`` and ``preamble`` are shell text run where the worker's
  commands run: on the SSH host, or for a Slurm target on its login node
  (``via``) or, without ``via``, in a shell on **this machine** (``srun``
  runs here then). They are the one part of a target meant to run
  commands; read them in a file someone sent you before you use it.

Nothing else in the file reaches a shell or runs a command on this machine.

Writing is safe against concurrent writers: :func:`update_targets` reads,
changes and writes the file while holding ``targets.json.lock``
(``flock``), and every write goes through a temp file of its own in the same
folder and a rename, so two ``targets add`` at once both keep theirs.

File shape::

    {"version": 1, "targets": [
      {"name": "gpu-box", "kind": "ssh", "host": "gpu-box", "python": "~/venv/bin/python"},
      {"name": "cluster", "kind": "slurm", "via": "login", "partition": "gpu", "gpus": 1}
    ]}

The target ``local`` (this machine) always exists and is not stored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from ..core.app_info import ORGANIZATION
from ..core.plain_file import UnreadableFile, read_regular_file
from .target import Target as Target
from .target_kinds import kind_names, target_kind
from .target_options import HOST_NAME, USER_NAME
from .target_options import (  # the option checks are part of what this module offers
    SSH_CONFIG_KEYS as SSH_CONFIG_KEYS,
)
from .target_options import SSH_FLAGS as SSH_FLAGS
from .target_options import srun_flag_problems as srun_flag_problems
from .target_options import ssh_option_problems as ssh_option_problems

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: writes are not locked there
    fcntl = None  # type: ignore[assignment]

TARGETS_FILE_ENV = "COMPILE_STUDIO_TARGETS"
SETTINGS_DIR_ENV = "COMPILE_STUDIO_SETTINGS_DIR"
TARGETS_FILE_NAME = "targets.json"
FILE_VERSION = 1
LOCAL = "local"
MAX_TARGETS = 200
MAX_FILE_BYTES = 1024 * 1024
MAX_FIELD = 4000
MAX_FLAGS = 64
MAX_GPUS = 1024
#: How long a write waits for another process's write of the targets file.
LOCK_TIMEOUT_S = 15.0

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_SLURM_WORD = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._,:+-]{0,127}$")
_TIME = re.compile(r"^(\d+|\d+:\d{2}(:\d{2})?|\d+-\d+(:\d{2}(:\d{2})?)?)$")
_GPU_TYPE = re.compile(r"^[A-Za-z0-9_.-]{0,64}$")


class TargetsFileError(Exception):
    """The targets file cannot be used; the message says what is wrong, in words."""


LOCAL_TARGET = Target(name=LOCAL, kind="local")


def targets_file() -> Path:
    """Where the targets are kept."""
    explicit = os.environ.get(TARGETS_FILE_ENV)
    if explicit:
        return Path(explicit)
    settings = os.environ.get(SETTINGS_DIR_ENV)
    if settings:
        return Path(settings) / TARGETS_FILE_NAME
    return platformdirs.user_config_path(roaming=True) / ORGANIZATION / TARGETS_FILE_NAME


# -- checking ----------------------------------------------------------------------------------

def _text(problems: list[str], where: str, value: object, pattern: re.Pattern[str] | None = None,
          limit: int = MAX_FIELD, what: str = "") -> str:
    if not isinstance(value, str):
        problems.append(f"{where}: must be text, not {type(value).__name__}")
        return ""
    if len(value) > limit:
        problems.append(f"{where}: longer than {limit} characters")
        return ""
    if "\x00" in value:
        problems.append(f"{where}: contains a NUL character")
        return ""
    if value and pattern is not None and not pattern.match(value):
        problems.append(f"{where}: {value[:80]!r} is not {what or 'allowed here'}")
        return ""
    return value


def _whole(problems: list[str], where: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.append(f"{where}: must be a whole number from {low} to {high}")
        return low
    return value


def _flags(problems: list[str], where: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_FLAGS:
        problems.append(f"{where}: must be a list of at most {MAX_FLAGS} texts")
        return ()
    out = []
    for k, item in enumerate(value):
        text = _text(problems, f"{where}[{k}]", item, limit=1000)
        if "\n" in text:
            problems.append(f"{where}[{k}]: contains a line break")
            continue
        out.append(text)
    return tuple(out)


def check_target(data: object, where: str = "target") -> tuple[Target | None, list[str]]:
    """A :class:`Target` from untrusted ``data``, or None, with every problem found."""
    problems: list[str] = []
    if not isinstance(data, dict):
        return None, [f"{where}: must be an object, not {type(data).__name__}"]
    known = {f.name for f in dataclasses.fields(Target)}
    for key in data:
        if key not in known:
            problems.append(f"{where}: unknown field {str(key)[:40]!r}")
    name = _text(problems, f"{where}.name", data.get("name"), _NAME,
                 what="a name (letters, digits, . _ -; at most 64)")
    if not name:
        if "name" not in data or data.get("name") == "":
            problems.append(f"{where}: has no name")
        return None, problems
    where = f"target {name!r}"
    kind = data.get("kind", "local")
    if kind not in kind_names():
        problems.append(f"{where}: kind must be one of {', '.join(kind_names())}, not {str(kind)[:40]!r}")
        return None, problems
    values: dict[str, Any] = {"name": name, "kind": kind}
    for key in ("python", "preamble", "identity"):
        if key in data:
            values[key] = _text(problems, f"{where}.{key}", data[key])
    if "host" in data:
        values["host"] = _text(problems, f"{where}.host", data["host"], HOST_NAME,
                               what="an ssh host name (no spaces, not starting with -)")
    if "user" in data:
        values["user"] = _text(problems, f"{where}.user", data["user"], USER_NAME, what="a user name")
    if "via" in data:
        values["via"] = _text(problems, f"{where}.via", data["via"], _NAME, what="a target name")
    for key in ("partition", "account"):
        if key in data:
            values[key] = _text(problems, f"{where}.{key}", data[key], _SLURM_WORD,
                                what=f"a Slurm {key} name")
    if "gpu_type" in data:
        values["gpu_type"] = _text(problems, f"{where}.gpu_type", data["gpu_type"], _GPU_TYPE,
                                   what="a GPU type name")
    if "time_limit" in data:
        values["time_limit"] = _text(problems, f"{where}.time_limit", data["time_limit"], _TIME,
                                     what="a Slurm time limit (MM, HH:MM:SS or D-HH:MM)")
    if "port" in data and data["port"] is not None:
        values["port"] = _whole(problems, f"{where}.port", data["port"], 1, 65535)
    if "gpus" in data:
        values["gpus"] = _whole(problems, f"{where}.gpus", data["gpus"], 0, MAX_GPUS)
    if "workers" in data:
        values["workers"] = _whole(problems, f"{where}.workers", data["workers"], 0, MAX_GPUS)
    for key in ("ssh_options", "srun_flags"):
        if key in data:
            values[key] = _flags(problems, f"{where}.{key}", data[key])
    problems += [f"{where}.ssh_options: {p}" for p in ssh_option_problems(values.get("ssh_options", ()))]
    problems += [f"{where}.srun_flags: {p}" for p in srun_flag_problems(values.get("srun_flags", ()))]
    if "gpu_ids" in data:
        raw = data["gpu_ids"]
        if not isinstance(raw, list) or len(raw) > MAX_GPUS:
            problems.append(f"{where}.gpu_ids: must be a list of GPU numbers")
        else:
            ids = tuple(_whole(problems, f"{where}.gpu_ids", v, 0, MAX_GPUS) for v in raw)
            if len(set(ids)) != len(ids):
                problems.append(f"{where}.gpu_ids: lists a GPU twice")
            values["gpu_ids"] = ids
    problems += target_kind(kind).check(values)
    if name == LOCAL and kind != "local":
        problems.append(f"{where}: the name {LOCAL!r} is kept for this machine")
    if problems:
        return None, problems
    return Target(**values), []


@dataclass(frozen=True)
class InvalidTarget:
    """An entry of the file that cannot be used: its name (or ``#N``), why, and the entry as stored.

    It is listed as invalid, cannot be chosen, and is written back unchanged
    when the file is saved (until it is removed or replaced by name).
    """

    name: str
    problems: tuple[str, ...]
    entry: Any = None

    def reason(self) -> str:
        return "; ".join(self.problems)


@dataclass
class Targets:
    """The targets of the file, ``local`` first; :meth:`get` by name; ``invalid``: the entries
    that cannot be used, with why."""

    items: list[Target] = field(default_factory=list)
    path: Path | None = None
    invalid: list[InvalidTarget] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.items = list(self.items)
        self.invalid = list(self.invalid)
        if not any(t.name == LOCAL for t in self.items):
            self.items.insert(0, LOCAL_TARGET)

    def names(self) -> list[str]:
        """The names of the targets that can be used."""
        return [t.name for t in self.items]

    def get(self, name: str) -> Target:
        """The target called ``name``; KeyError saying which names exist, or why it cannot be used."""
        for t in self.items:
            if t.name == name:
                return t
        for bad in self.invalid:
            if bad.name == name:
                raise KeyError(f"target {name!r} cannot be used: {bad.reason()}")
        raise KeyError(f"no target called {name!r}; targets: {', '.join(self.names())}")

    def problems(self) -> list[str]:
        """What is wrong across targets: duplicate names, ``via`` naming no SSH target."""
        out = []
        seen: set[str] = set()
        for t in self.items:
            if t.name in seen:
                out.append(f"target {t.name!r}: the name is used twice")
            seen.add(t.name)
        for t in self.items:
            problem = self.via_problem(t)
            if problem:
                out.append(problem)
        return out

    def via_problem(self, target: Target) -> str | None:
        """Why ``target`` (a Slurm target reached through ``via``) cannot use its login target; None: it can."""
        if target.kind == "slurm" and target.via:
            login = next((x for x in self.items if x.name == target.via), None)
            if login is None or login.kind != "ssh":
                why = next((f" (it cannot be used: {b.reason()})" for b in self.invalid
                            if b.name == target.via), "")
                return f"target {target.name!r}: via {target.via!r} is not an SSH target{why}"
        return None

    def with_target(self, target: Target) -> Targets:
        """A copy with ``target`` added, or replacing the one (or invalid entry) of the same name."""
        items = [t for t in self.items if t.name != target.name]
        items.append(target)
        return Targets(items, self.path, [b for b in self.invalid if b.name != target.name])

    def without(self, name: str) -> Targets:
        """A copy without the target (or invalid entry) called ``name``."""
        return Targets([t for t in self.items if t.name != name], self.path,
                       [b for b in self.invalid if b.name != name])

    def all_names(self) -> list[str]:
        """The names of every entry, usable or not."""
        return [*self.names(), *(b.name for b in self.invalid)]


def parse_targets(text: str, source: str = "targets file") -> Targets:
    """Targets from the file's text; an entry with a problem is kept aside in ``invalid``.

    TargetsFileError (saying why) when the file as a whole cannot be used.
    """
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise TargetsFileError(f"{source} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("targets"), list):
        raise TargetsFileError(f'{source} must be an object with a list "targets"')
    version = data.get("version", FILE_VERSION)
    if version != FILE_VERSION:
        raise TargetsFileError(
            f"{source} has version {str(version)[:20]}; this app reads version {FILE_VERSION}"
        )
    raw = data["targets"]
    if len(raw) > MAX_TARGETS:
        raise TargetsFileError(f"{source} lists more than {MAX_TARGETS} targets")
    items: list[Target] = []
    invalid: list[InvalidTarget] = []
    seen: set[str] = {LOCAL}
    for k, entry in enumerate(raw):
        target, found = check_target(entry, f"target #{k + 1}")
        name = entry.get("name") if isinstance(entry, dict) else None
        label = name if isinstance(name, str) and _NAME.match(name) else f"#{k + 1}"
        if target is not None and target.name in seen:
            found = [f"target {target.name!r}: the name is used twice"]
            target = None
        if target is None:
            invalid.append(InvalidTarget(label, tuple(found), entry))
            continue
        seen.add(target.name)
        items.append(target)
    targets = Targets(items, None, invalid)
    for target in list(targets.items):
        problem = targets.via_problem(target)
        if problem:
            index = next(k for k, t in enumerate(raw) if isinstance(t, dict) and t.get("name") == target.name)
            targets.items.remove(target)
            targets.invalid.append(InvalidTarget(target.name, (problem,), raw[index]))
    return targets


# -- reading and writing -----------------------------------------------------------------------

def load_targets(path: Path | None = None) -> Targets:
    """The stored targets (just ``local`` when there is no file); TargetsFileError if unusable.

    Entries that cannot be used are in the result's ``invalid``, with why.
    """
    path = path or targets_file()
    try:
        data, _ = read_regular_file(path, MAX_FILE_BYTES)
    except UnreadableFile as exc:
        raise TargetsFileError(str(exc)) from None
    if data is None:
        return Targets([], path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TargetsFileError(f"{path} is not UTF-8 text") from None
    targets = parse_targets(text, str(path))
    targets.path = path
    return targets


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def targets_lock(path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold ``targets.json.lock`` (beside ``path``) while a read-change-write of the file runs.

    Waits up to ``timeout`` seconds for another process's write, then raises
    TargetsFileError. Nothing is locked where ``flock`` does not exist.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover - not POSIX
        yield
        return
    lock = _lock_path(path)
    flags = (os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(lock, flags, 0o600)
    except OSError as exc:
        raise TargetsFileError(f"cannot lock the targets file ({lock}: {exc.strerror or exc})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TargetsFileError(f"cannot lock the targets file: {lock} is not a regular file")
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TargetsFileError(
                        f"{path} is being changed by another process (it holds {lock.name}); "
                        "try again"
                    ) from None
                time.sleep(0.02)
            except OSError as exc:
                raise TargetsFileError(f"cannot lock {lock}: {exc.strerror or exc}") from None
        yield
    finally:
        os.close(fd)


def _stored(targets: Targets | Iterable[Target]) -> dict[str, Any]:
    if isinstance(targets, Targets):
        items, invalid = targets.items, targets.invalid
    else:
        items, invalid = list(targets), []
    entries: list[Any] = [t.to_dict() for t in items if t.name != LOCAL]
    entries += [b.entry for b in invalid if b.entry is not None]
    return {"version": FILE_VERSION, "targets": entries}


def _write(path: Path, data: dict[str, Any]) -> None:
    """Write through a temp file of this write's own in the same folder, then a rename."""
    text = json.dumps(data, indent=2) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def save_targets(targets: Targets | Iterable[Target], path: Path | None = None) -> Path:
    """Write the targets (``local`` is not stored; invalid entries are kept as they were).

    Replaces the whole file, under the file's lock; to change one target while
    others may be writing, use :func:`update_targets`.
    """
    path = path or (targets.path if isinstance(targets, Targets) and targets.path else targets_file())
    data = _stored(targets)
    with targets_lock(path):
        _write(path, data)
    return path


def update_targets(change: Callable[[Targets], Targets], path: Path | None = None) -> tuple[Targets, Path]:
    """Read the file, ``change`` it, write it: all while holding the file's lock.

    ``change`` gets the targets as they are in the file now and returns the
    new ones; it may raise (TargetsFileError, ValueError) to write nothing.
    Concurrent updates (two ``targets add`` at once) each keep their change.
    """
    path = path or targets_file()
    with targets_lock(path):
        current = load_targets(path)
        updated = change(current)
        updated.path = path
        _write(path, _stored(updated))
    return updated, path
