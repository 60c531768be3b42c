"""The small Python programs a launcher runs on the worker's side (check, install, boot) and the cache folder they use.

Every program starts with the same guard: nothing from the current folder is
importable, and the cache folder and its files are trusted only when they are
the user's and no one else can write them.
"""

from __future__ import annotations

import os
import shlex

#: The remote folder the bundle is kept in and the worker starts in (shell text;
#: ``$HOME/...`` or ``~/...`` is expanded there, anything else is taken literally).
REMOTE_CACHE_ENV = "COMPILE_STUDIO_REMOTE_CACHE"
DEFAULT_REMOTE_CACHE = "$HOME/.cache/compile-studio"

#: The start of every Python program run there: nothing from the current folder is
#: importable, and the cache folder and the files in it are trusted only when they are
#: yours and no one else can write them (their owner and mode read from an open file).
GUARD = r"""
import sys
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
import hashlib, os, stat

class Unsafe(Exception):
    pass

def why_unsafe(st, folder):
    if not (stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)):
        return "is not a folder" if folder else "is not a regular file"
    if st.st_uid != os.getuid():
        return f"belongs to uid {st.st_uid}, not to you (uid {os.getuid()})"
    who = [w for w, bit in (("its group", 0o020), ("others", 0o002)) if st.st_mode & bit]
    if who:
        return f"can be written by {' and '.join(who)} (mode {stat.filemode(st.st_mode)})"
    return None

def open_folder(path, create=False):
    if create:
        os.makedirs(path, mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    why = why_unsafe(os.fstat(fd), True)
    if why:
        os.close(fd)
        raise Unsafe(f"the cache folder {os.path.abspath(path)} {why}")
    return fd

def read_verified(dfd, folder, name, sha):
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
    with os.fdopen(fd, "rb") as fh:
        why = why_unsafe(os.fstat(fh.fileno()), False)
        if why:
            raise Unsafe(f"the worker bundle {os.path.join(os.path.abspath(folder), name)} {why}")
        data = fh.read()
    return data, hashlib.sha256(data).hexdigest() == sha
"""

CHECK = GUARD + r"""
import importlib.util, json, socket
folder, name, sha = sys.argv[1:4]
found = {"host": socket.gethostname(), "python": sys.version.split()[0],
         "executable": sys.executable, "bundle": False, "unsafe": None,
         "cache": os.path.abspath(folder),
         "torch": importlib.util.find_spec("torch") is not None}
try:
    dfd = open_folder(folder)
    try:
        found["bundle"] = read_verified(dfd, folder, name, sha)[1]
    finally:
        os.close(dfd)
except FileNotFoundError:
    pass
except Unsafe as exc:
    found["unsafe"] = str(exc)
except OSError as exc:
    found["unsafe"] = f"{exc.filename or folder} cannot be read: {exc.strerror or exc}"
print(json.dumps(found))
"""

INSTALL = GUARD + r"""
folder, name, sha = sys.argv[1:4]
data = sys.stdin.buffer.read()
got = hashlib.sha256(data).hexdigest()
if got != sha:
    sys.exit(f"the file arrived damaged (sha256 {got}, expected {sha})")
try:
    dfd = open_folder(folder, create=True)
except Unsafe as exc:
    sys.exit(f"refusing to copy the worker: {exc}")
tmp = f".{name}.{os.getpid()}-{os.urandom(4).hex()}.tmp"
fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dfd)
with os.fdopen(fd, "wb") as fh:
    os.fchmod(fh.fileno(), 0o644)
    fh.write(data)
os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
print("installed")
"""

#: How the worker starts there: ``python -c`` with this program, then the cache folder,
#: the bundle's file name and sha256, then the worker's arguments. The bundle is read
#: once from the checked folder and checked by its sha256; those very bytes are written
#: to a private copy (``$TMPDIR/compile-studio-worker-<uid>/``, mode 0700) and the worker and its
#: compile hosts import from that copy and nothing else of the package.
BOOT = GUARD + r"""
import tempfile

def private_copy(data, name):
    base = tempfile.gettempdir()
    st = os.stat(base)
    if st.st_uid not in (0, os.getuid()) or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
        raise Unsafe(f"the temporary folder {base} can be changed by another user")
    mine = os.path.join(base, f"compile-studio-worker-{os.getuid()}")
    try:
        os.mkdir(mine, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(mine)
    why = why_unsafe(st, True) or (st.st_mode & 0o077 and f"is not private (mode {stat.filemode(st.st_mode)})")
    if why:
        raise Unsafe(f"the folder {mine} {why}")
    tmp = os.path.join(mine, f".{name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    path = os.path.join(mine, name)
    os.replace(tmp, path)
    return path

folder, name, sha = sys.argv[1:4]
try:
    dfd = open_folder(folder)
    data, good = read_verified(dfd, folder, name, sha)
    if not good:
        raise Unsafe(f"the worker bundle {os.path.join(os.path.abspath(folder), name)} does not have sha256 {sha}")
    bundle = private_copy(data, name)
    os.fchdir(dfd)
    os.close(dfd)
except (Unsafe, OSError) as exc:
    sys.exit(f"compile-studio: the worker was not started: {exc}")
sys.path.insert(0, bundle)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (bundle, os.environ.get("PYTHONPATH")) if p)
from compile_studio.worker import run_as_main
run_as_main(sys.argv[4:])
"""


def local_cache() -> str:
    """The cache folder as a path on this machine (a Slurm target without ``via``)."""
    text = os.environ.get(REMOTE_CACHE_ENV, DEFAULT_REMOTE_CACHE)
    for home in ("$HOME/", "~/"):
        if text.startswith(home):
            return os.path.join(os.path.expanduser("~"), text[len(home):])
    return text


def remote_cache() -> str:
    """The remote cache folder as shell text (quoted, with ``$HOME`` left to expand there)."""
    text = os.environ.get(REMOTE_CACHE_ENV, DEFAULT_REMOTE_CACHE)
    for home in ("$HOME/", "~/"):
        if text.startswith(home):
            return '"$HOME"/' + shlex.quote(text[len(home):])
    return shlex.quote(text)
