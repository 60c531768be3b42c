"""Where a run goes: this machine, an SSH host, or a Slurm cluster (no Qt, no torch).

Targets are a named list kept in ``targets.json`` in the app's config folder
(``$COMPILE_STUDIO_SETTINGS_DIR`` when set, else the platform's config folder
under ``CompileStudio``), or at ``$COMPILE_STUDIO_TARGETS``. The window and
the CLI read the same file. It is untrusted input: :func:`load_targets`
checks every field's type, size and spelling and says what is wrong in words;
nothing in it is ever run through a local shell.

File shape::

    {"version": 1, "targets": [
      {"name": "gpu-box", "kind": "ssh", "host": "gpu-box", "python": "~/venv/bin/python"},
      {"name": "cluster", "kind": "slurm", "via": "login", "partition": "gpu", "gpus": 1}
    ]}

The target ``local`` (this machine) always exists and is not stored.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from .app_info import ORGANIZATION

TARGETS_FILE_ENV = "COMPILE_STUDIO_TARGETS"
SETTINGS_DIR_ENV = "COMPILE_STUDIO_SETTINGS_DIR"
TARGETS_FILE_NAME = "targets.json"
FILE_VERSION = 1
LOCAL = "local"
KINDS = ("local", "ssh", "slurm")
KIND_WORDS = {"local": "this machine", "ssh": "SSH host", "slurm": "Slurm"}
MAX_TARGETS = 200
MAX_FILE_BYTES = 1024 * 1024
MAX_FIELD = 4000
MAX_FLAGS = 64
MAX_GPUS = 1024

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: an ssh destination: no option look-alike, no spaces or shell characters
_HOST = re.compile(r"^[A-Za-z0-9_\[][A-Za-z0-9._:%@\[\]-]{0,254}$")
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")
_SLURM_WORD = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._,:+-]{0,127}$")
_TIME = re.compile(r"^(\d+|\d+:\d{2}(:\d{2})?|\d+-\d+(:\d{2}(:\d{2})?)?)$")
_GPU_TYPE = re.compile(r"^[A-Za-z0-9_.-]{0,64}$")


class TargetsFileError(Exception):
    """The targets file cannot be used; the message says what is wrong, in words."""


@dataclass(frozen=True)
class Target:
    """One place a worker can run.

    ``kind`` ``ssh``: ``host`` as in ``~/.ssh/config`` (jump hosts, keys and
    agents work through the system ``ssh``), optional ``port``, ``user``,
    ``identity`` and ``ssh_options`` (extra ``ssh`` arguments, e.g.
    ``["-F", "/path/ssh_config"]``). ``kind`` ``slurm``: ``srun`` job steps
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

    def describe(self) -> str:
        """One line for lists: kind and where."""
        if self.kind == "ssh":
            where = f"{self.user + '@' if self.user else ''}{self.host}"
            where += f":{self.port}" if self.port else ""
            return f"SSH host {where}" + (f", python {self.python}" if self.python else "")
        if self.kind == "slurm":
            parts = [f"partition {self.partition}" if self.partition else "default partition"]
            if self.gpus:
                parts.append(f"{self.gpus} GPU" + ("s" if self.gpus > 1 else ""))
            if self.time_limit:
                parts.append(f"time {self.time_limit}")
            if self.account:
                parts.append(f"account {self.account}")
            login = f" via {self.via}" if self.via else " on this machine"
            return "Slurm" + login + ": " + ", ".join(parts)
        return "this machine" + (f", GPUs {','.join(map(str, self.gpu_ids))}" if self.gpu_ids else "")

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
    if kind not in KINDS:
        problems.append(f"{where}: kind must be one of {', '.join(KINDS)}, not {str(kind)[:40]!r}")
        return None, problems
    values: dict[str, Any] = {"name": name, "kind": kind}
    for key in ("python", "preamble", "identity"):
        if key in data:
            values[key] = _text(problems, f"{where}.{key}", data[key])
    if "host" in data:
        values["host"] = _text(problems, f"{where}.host", data["host"], _HOST,
                               what="an ssh host name (no spaces, not starting with -)")
    if "user" in data:
        values["user"] = _text(problems, f"{where}.user", data["user"], _USER, what="a user name")
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
    if "gpu_ids" in data:
        raw = data["gpu_ids"]
        if not isinstance(raw, list) or len(raw) > MAX_GPUS:
            problems.append(f"{where}.gpu_ids: must be a list of GPU numbers")
        else:
            ids = tuple(_whole(problems, f"{where}.gpu_ids", v, 0, MAX_GPUS) for v in raw)
            if len(set(ids)) != len(ids):
                problems.append(f"{where}.gpu_ids: lists a GPU twice")
            values["gpu_ids"] = ids
    if kind == "ssh" and not values.get("host"):
        problems.append(f"{where}: an SSH target needs a host")
    if kind == "local" and name != LOCAL and any(
        values.get(k) for k in ("host", "via", "partition", "python", "preamble")
    ):
        problems.append(f"{where}: a local target takes only gpu_ids and workers")
    if name == LOCAL and kind != "local":
        problems.append(f"{where}: the name {LOCAL!r} is kept for this machine")
    if problems:
        return None, problems
    return Target(**values), []


@dataclass
class Targets:
    """The targets of the file, ``local`` first; :meth:`get` by name."""

    items: list[Target] = field(default_factory=list)
    path: Path | None = None

    def __post_init__(self) -> None:
        self.items = list(self.items)
        if not any(t.name == LOCAL for t in self.items):
            self.items.insert(0, LOCAL_TARGET)

    def names(self) -> list[str]:
        return [t.name for t in self.items]

    def get(self, name: str) -> Target:
        """The target called ``name``; KeyError saying which names exist."""
        for t in self.items:
            if t.name == name:
                return t
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
            if t.kind == "slurm" and t.via:
                login = next((x for x in self.items if x.name == t.via), None)
                if login is None or login.kind != "ssh":
                    out.append(f"target {t.name!r}: via {t.via!r} is not an SSH target")
        return out

    def with_target(self, target: Target) -> Targets:
        """A copy with ``target`` added, or replacing the one of the same name."""
        items = [t for t in self.items if t.name != target.name]
        items.append(target)
        return Targets(items, self.path)

    def without(self, name: str) -> Targets:
        return Targets([t for t in self.items if t.name != name], self.path)


def parse_targets(text: str, source: str = "targets file") -> Targets:
    """Targets from the file's text; TargetsFileError listing every problem."""
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
    problems: list[str] = []
    for k, entry in enumerate(raw):
        target, found = check_target(entry, f"target #{k + 1}")
        problems += found
        if target is not None:
            items.append(target)
    targets = Targets(items)
    problems += targets.problems()
    if problems:
        raise TargetsFileError(f"{source} cannot be used:\n  - " + "\n  - ".join(problems))
    return targets


def load_targets(path: Path | None = None) -> Targets:
    """The stored targets (just ``local`` when there is no file); TargetsFileError if unusable."""
    path = path or targets_file()
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise TargetsFileError(f"{path} is larger than {MAX_FILE_BYTES // 1024} KiB")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Targets([], path)
    except UnicodeDecodeError:
        raise TargetsFileError(f"{path} is not UTF-8 text") from None
    except OSError as exc:
        raise TargetsFileError(f"{path} cannot be read: {exc.strerror or exc}") from None
    targets = parse_targets(text, str(path))
    targets.path = path
    return targets


def save_targets(targets: Targets | Iterable[Target], path: Path | None = None) -> Path:
    """Write the targets (``local`` is not stored) through a temp file and a rename."""
    items = targets.items if isinstance(targets, Targets) else list(targets)
    path = path or (targets.path if isinstance(targets, Targets) and targets.path else targets_file())
    data = {"version": FILE_VERSION, "targets": [t.to_dict() for t in items if t.name != LOCAL]}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
