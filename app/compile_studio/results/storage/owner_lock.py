"""Who owns a record folder: the owner lock a running sweep holds, and the owner's pid and host."""

from __future__ import annotations

import os
import socket
from pathlib import Path

try:
    import fcntl as fcntl  # the lock's module, shared with sweep_store (None where there is none)
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

#: The lock file a running sweep holds (``flock``) for as long as it runs; freed when its process ends.
OWNER_LOCK = ".owner.lock"


class RecordBusy(Exception):
    """The record folder is being run by another live process (it holds the owner lock)."""


def open_lock(path: Path, create: bool) -> int | None:
    """A descriptor of ``path``'s owner lock file (never through a link); None when there is none."""
    flags = os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | (os.O_CREAT if create else 0)
    try:
        return os.open(path / OWNER_LOCK, flags, 0o600)
    except FileNotFoundError:
        return None


def held_by_a_process(folder: Path) -> bool | None:
    """Whether a live process holds ``folder``'s owner lock; None when there is no lock to ask."""
    if fcntl is None:
        return None
    try:
        fd = open_lock(Path(folder), create=False)
    except OSError:
        return None
    if fd is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)
    return False


def this_owner() -> tuple[int, str]:
    """(pid, host) of this process, as a sweep it runs records them."""
    return os.getpid(), socket.gethostname()


def owner_alive(pid: int, host: str) -> bool:
    """Whether the process ``pid`` on ``host`` may still be running a sweep.

    Only a process on this machine can be looked at: one elsewhere counts as
    alive. A record without an owner (written before owners were kept) is left
    by a process that is gone unless it is this one.
    """
    if host and host != socket.gethostname():
        return True
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True

