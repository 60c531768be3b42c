"""The worker as one file (a zipapp) for a remote machine that has only Python and torch.

The bundle holds the pure-Python modules the worker imports — the protocol,
the config, the model specs, the worker and the engine — and nothing of the
window, the CLI or the results. It is built in memory, byte for byte the same
for the same sources (fixed timestamps, sorted entries), so its sha256 names
it: ``worker-<version>-<sha16>.pyz``. A remote starts it with ``python -c`` and a
small program (``remote_programs.BOOT``) that checks the file's owner, mode and sha256,
copies those very bytes to a private file, and puts that copy alone on
``sys.path`` (and ``PYTHONPATH``, for the worker's compile hosts), ahead of
anything in the folder it starts in.
"""

from __future__ import annotations

import ast
import hashlib
import io
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .. import __version__

#: the compile_studio package folder (this module is in its launchers/)
PACKAGE = Path(__file__).resolve().parents[1]
#: Where the worker's imports start (``engine/`` is taken whole); every module of the
#: package these import, directly or not, goes in too (:func:`worker_files`).
WORKER_ROOTS = ("__init__.py", "worker.py")
MAIN = (
    "import sys\n"
    "from compile_studio.worker import main\n"
    "sys.exit(main())\n"
)


@dataclass(frozen=True)
class WorkerBundle:
    """A built worker zipapp: its bytes, sha256 and the file name it is kept under."""

    data: bytes
    sha256: str
    version: str

    @property
    def file_name(self) -> str:
        return f"worker-{self.version}-{self.sha256[:16]}.pyz"


def _imported_files(path: Path, package: Path) -> set[Path]:
    """The package's files that ``path`` imports by a relative import (anywhere in it)."""
    here = path.parent
    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = here
        for _ in range(node.level - 1):
            base = base.parent
        if package not in (base, *base.parents):
            continue
        target = base.joinpath(*node.module.split(".")) if node.module else base
        candidates = [target.with_suffix(".py"), target / "__init__.py"]
        candidates += [target / f"{a.name}.py" for a in node.names]
        candidates += [target / a.name / "__init__.py" for a in node.names]
        found.update(c for c in candidates if c.is_file())
        # a module inside a package imports that package's __init__ too
        for parent in (target, *target.parents):
            if parent == package:
                break
            if (parent / "__init__.py").is_file():
                found.add(parent / "__init__.py")
    return found


def worker_files(package: Path = PACKAGE) -> list[Path]:
    """Every file of the package the worker can import: its roots, ``engine/``, and all they import."""
    todo = [package / name for name in WORKER_ROOTS]
    todo += sorted((package / "engine").glob("*.py"))
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo.extend(_imported_files(path, package) - seen)
    return sorted(seen)


def bundle_sources(package: Path = PACKAGE) -> list[tuple[str, bytes]]:
    """(name in the zip, bytes) of every file the bundle holds, sorted."""
    files = worker_files(package)
    out = [(f"compile_studio/{f.relative_to(package).as_posix()}", f.read_bytes()) for f in files]
    out.append(("__main__.py", MAIN.encode()))
    return sorted(out)


def build_bundle(
    sources: list[tuple[str, bytes]] | None = None, version: str = __version__
) -> WorkerBundle:
    """The zipapp of ``sources`` (default: this installation's worker modules)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in sources if sources is not None else bundle_sources():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    data = b"#!/usr/bin/env python3\n" + buf.getvalue()
    return WorkerBundle(data=data, sha256=hashlib.sha256(data).hexdigest(), version=version)


@lru_cache(maxsize=1)
def worker_bundle() -> WorkerBundle:
    """This installation's worker bundle (built once per process)."""
    return build_bundle()
