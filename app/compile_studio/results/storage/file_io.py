"""Atomic file writes and the text of CSV cells and JSON values, shared by every results writer."""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temp file + rename (see atomic_write_bytes)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def current_umask() -> int:
    """The process's umask (read without changing it where the system allows)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder + rename.

    The file gets the permissions the user's umask gives a new file (a temp
    file starts private). On any failure the temp file is removed and
    ``path`` is left as it was.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), 0o666 & ~current_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


#: First characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> str:
    """A CSV cell: numbers as they are (``-0.5`` stays a number), text that a
    spreadsheet would run as a formula prefixed with ``'`` (see :func:`read_cell`)."""
    if isinstance(value, str):
        return "'" + value if value.startswith(_FORMULA_START) else value
    return fmt_value(value)


def read_cell(text: str) -> str:
    """The text :func:`safe_cell` wrote."""
    if text.startswith("'") and text[1:2] and text[1:].startswith(_FORMULA_START):
        return text[1:]
    return text


def fmt_value(value: Any) -> str:
    """A value as CSV text: None empty, true/false, floats exactly (``repr``), the rest as ``str``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return str(value)


def json_safe(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by None (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value
