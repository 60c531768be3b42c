"""Reading a file someone else may have made: a regular file only, opened without blocking, with a cap.

A FIFO or a device is never read (no hang), a link is not followed unless
asked, and no more than the limit is read (``/dev/zero`` cannot fill memory).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class UnreadableFile(Exception):
    """The file cannot be used; the message says why, in words."""


def read_regular_file(
    path: Path, limit: int, follow_links: bool = False
) -> tuple[bytes | None, os.stat_result | None]:
    """The bytes of ``path`` and its stat when it is a regular file of at most ``limit`` bytes.

    (None, None) when there is no such file. Opened without blocking (a FIFO
    or a device is never read), not through a link unless ``follow_links``;
    UnreadableFile saying why otherwise.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise UnreadableFile(
                f"{path} is a symbolic link; it must be a regular file (put the file itself there)"
            ) from None
        raise UnreadableFile(f"{path} cannot be read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(f"{path} is not a regular file ({file_kind(st.st_mode)}); "
                                   "it must be a plain file")
        if st.st_size > limit:
            raise UnreadableFile(f"{path} is larger than {limit // 1024} KiB")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(65536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise UnreadableFile(f"{path} cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise UnreadableFile(f"{path} is larger than {limit // 1024} KiB")
    return b"".join(chunks), st


def file_kind(mode: int) -> str:
    for test, words in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a plain file"
