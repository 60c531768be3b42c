"""Reading any job's record folder back, every value checked: the steps sweeps, shape sweeps and trials share.

A record folder may come from someone else: its record file is read only as a
regular file under a size limit and one JSON document; fields that do not fit
their type are listed, not trusted; whatever goes wrong is the kind's
"damaged" error saying why (see :mod:`results.records.schema`). The kinds' own
loaders (sweep_load.py, trial_load.py) read their fields with these.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .schema import (
    MAX_TEXT,
    RunDamaged,
    Unfit,
    check_regular_file,
    conform,
    parse_json_document,
    read_bytes_capped,
)


def is_record_folder(path: str | Path, name: str) -> bool:
    """Whether ``path`` is a record folder holding ``name``, or that file (cheap: names only)."""
    p = Path(path)
    try:
        if p.name == name and p.is_file():
            return True
        return p.is_dir() and (p / name).is_file()
    except OSError:
        return False


def record_folder_of(path: Path, name: str) -> Path:
    """The folder ``path`` names: the folder itself, or the folder of its record file ``name``."""
    return path.parent if path.name == name and not path.is_dir() else path


def load_record(
    path: str | Path, name: str, read: Callable[[Path, Any], Any], damaged: type[RunDamaged],
    max_bytes: int, plain_folder: bool = False,
) -> Any:
    """Read the record file ``name`` of a folder (or the file itself) with ``read(folder, doc)``.

    The file must be a regular file within ``max_bytes`` and one JSON document
    (``plain_folder``: in a folder that is no link either); whatever goes wrong
    reading it becomes ``damaged`` (a :class:`RunDamaged`) saying why, never
    another exception.
    """
    folder = record_folder_of(Path(path), name)
    target = folder / name
    try:
        if plain_folder and not stat.S_ISDIR(os.lstat(folder).st_mode):
            raise damaged(f"{folder.name} is not a folder (a link or a file)")
        check_regular_file(target, max_bytes)
        doc = parse_json_document(read_bytes_capped(target, max_bytes), name)
        return read(folder, doc)
    except damaged:
        raise
    except RunDamaged as exc:
        raise damaged(str(exc)) from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError, MemoryError) as exc:
        raise damaged(f"{name} cannot be read ({type(exc).__name__}: {str(exc)[:100]})") from None


def read_fields(doc: dict[str, Any], fields: dict[str, Any], name: str, problems: list[str]) -> dict[str, Any]:
    """The top-level ``fields`` of a record document that fit their type; the others listed."""
    out = {}
    for key, hint in fields.items():
        if key not in doc:
            continue
        value = doc[key]
        if hint in (dict, list):
            if isinstance(value, hint):
                out[key] = value
            else:
                problems.append(f"{name}: {key} must be {'an object' if hint is dict else 'a list'}")
            continue
        try:
            out[key] = conform(value, hint, MAX_TEXT)
        except (Unfit, RecursionError) as exc:
            problems.append(f"{name}: {key} {exc}")
    return out


def read_environment(value: Any, name: str, problems: list[str]) -> dict[str, Any]:
    """The environment block a worker reported, checked like any value read back."""
    if not isinstance(value, dict):
        return {}
    try:
        environment = conform(value, Any)
    except Unfit as exc:
        problems.append(f"{name}: environment {exc}")
        return {}
    return environment if isinstance(environment, dict) else {}


def bounded_list(value: Any, owner: str, name: str, limit: int, problems: list[str]) -> list[Any]:
    """``value`` when it is a list of at most ``limit`` items (longer: cut, and said); else ``[]``, said."""
    if not isinstance(value, list):
        problems.append(f"{owner}: {name} is not a list")
        return []
    if len(value) > limit:
        problems.append(f"{owner}: more than {limit} {name}: the rest left out")
        return value[:limit]
    return value
