"""Environment variables are untrusted input: a bad value gets the default and one warning line."""

from __future__ import annotations

import os
import sys

_warned: set[str] = set()


def warn_ignored(name: str, value: str, what: str) -> None:
    """Say once per variable, on stderr, that ``name`` was ignored and what is used instead."""
    if name in _warned:
        return
    _warned.add(name)
    shown = "".join(c if c.isprintable() else "?" for c in value[:60])
    try:
        sys.stderr.write(f"warning: {name}={shown!r} ignored ({what})\n")
    except (OSError, ValueError, AttributeError):
        pass


def int_from_env(name: str, default: int, minimum: int, maximum: int) -> int:
    """``$name`` as a whole number in ``[minimum, maximum]``; ``default`` (said once) otherwise."""
    text = os.environ.get(name, "")
    if not text:
        return default
    stripped = text.strip()
    if stripped.lstrip("-").isdigit() and len(stripped) <= 18 and minimum <= int(stripped) <= maximum:
        return int(stripped)
    warn_ignored(name, text, f"not a whole number from {minimum} to {maximum}; using {default}")
    return default
