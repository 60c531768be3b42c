"""A Mega-Cache file: the compile artifacts of a cold start, with what they are valid for.

``coldstart --save-cache FILE`` writes it; ``--load-cache FILE`` reads it on
this or another machine. A received file is untrusted: the artifacts hold
pickled compiler output that torch unpickles once they are in its cache, so
nothing but the header is interpreted here. The layout::

    COMPILE-STUDIO-MEGA-CACHE 1\\n
    {JSON header, one line}\\n
    artifact bytes of each variant, one after the other

The header names the torch, Triton, Python and device the artifacts were made
with, the configuration they were compiled for, and per variant the offset,
size and sha256 of its bytes. :func:`read_cache_file` checks the header (types,
sizes, offsets inside the file) and each blob's sha256 without unpickling
anything; :func:`cache_mismatches` says, in words, why the file cannot help a
given machine and configuration. No torch, no Qt here.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import __version__
from ...core.config import BenchmarkConfig
from ..storage.file_io import atomic_write_bytes

MAGIC = b"COMPILE-STUDIO-MEGA-CACHE 1\n"
FORMAT = 1
MAX_HEADER_BYTES = 1024 * 1024
#: Largest cache file read (bytes).
MAX_CACHE_FILE_BYTES = 2 * 1024 * 1024 * 1024
#: Configuration fields that do not change what is compiled (left out of the comparison).
NOT_COMPILED = frozenset({
    "variants", "device", "iterations", "warmup", "timer", "warmup_min_ms", "rounds", "seed",
    "compile_cache", "cold_l2", "compile_timing", "label", "diagnostics",
})
#: What the artifacts are valid for, as a header names it.
ENV_KEYS = ("torch", "triton", "python", "device_type", "device_name", "cuda")


class CacheFileError(ValueError):
    """A file that is not a usable cache file; the message says why."""


@dataclass
class CachedVariant:
    """One variant's artifacts in a cache file."""

    variant: str
    offset: int
    size: int
    sha256: str
    artifacts: dict[str, int] = field(default_factory=dict)


@dataclass
class CacheFile:
    """A cache file's header and, once read, its blobs (bytes, checked against their sha256)."""

    environment: dict[str, Any]
    config: dict[str, Any]
    variants: list[CachedVariant]
    created: str = ""
    app_version: str = ""
    blobs: dict[str, bytes] = field(default_factory=dict, repr=False)

    def variant(self, name: str) -> CachedVariant | None:
        return next((v for v in self.variants if v.variant == name), None)


def write_cache_file(
    path: Path, environment: dict[str, Any], config: dict[str, Any], blobs: dict[str, tuple[bytes, dict[str, int]]],
    created: str = "",
) -> None:
    """Write ``blobs`` (variant → (bytes, artifact counts)) with their header; atomic; raises OSError."""
    entries, offset = [], 0
    for name, (data, counts) in blobs.items():
        entries.append({"variant": name, "offset": offset, "size": len(data),
                        "sha256": hashlib.sha256(data).hexdigest(), "artifacts": dict(counts)})
        offset += len(data)
    header = {
        "format": FORMAT, "app_version": __version__, "created": created,
        "environment": {k: environment.get(k) for k in ENV_KEYS},
        "config": config, "variants": entries,
    }
    text = json.dumps(header, sort_keys=True, allow_nan=False).encode("utf-8")
    if len(text) > MAX_HEADER_BYTES:
        raise OSError("the cache file's header is too large")
    atomic_write_bytes(Path(path), MAGIC + text + b"\n" + b"".join(d for d, _ in blobs.values()))


def _text(value: Any, limit: int = 200) -> str | None:
    return value if isinstance(value, str) and len(value) <= limit else None


def read_cache_file(path: Path, with_blobs: bool = True) -> CacheFile:
    """The file's header (and blobs, each checked against its sha256); CacheFileError saying why not."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise CacheFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise CacheFileError(f"{path} is not a regular file")
    if st.st_size > MAX_CACHE_FILE_BYTES:
        raise CacheFileError(f"{path} is larger than {MAX_CACHE_FILE_BYTES >> 30} GiB")
    try:
        with open(path, "rb") as fh:
            if fh.read(len(MAGIC)) != MAGIC:
                raise CacheFileError(f"{path} is not a Compile Studio cache file (saved by coldstart --save-cache)")
            line = fh.readline(MAX_HEADER_BYTES + 1)
            if not line.endswith(b"\n"):
                raise CacheFileError(f"{path}: the header is cut short or larger than 1 MiB")
            start = fh.tell()
            try:
                doc = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                raise CacheFileError(f"{path}: the header is not JSON") from None
            cache = _header(doc, path, st.st_size - start)
            if with_blobs:
                for v in cache.variants:
                    fh.seek(start + v.offset)
                    data = fh.read(v.size)
                    if len(data) != v.size or hashlib.sha256(data).hexdigest() != v.sha256:
                        raise CacheFileError(f"{path}: {v.variant}'s artifacts do not match their sha256 (damaged)")
                    cache.blobs[v.variant] = data
    except OSError as exc:
        raise CacheFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    return cache


def _header(doc: Any, path: Path, room: int) -> CacheFile:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CacheFileError(f"{path}: not a cache file of format {FORMAT}")
    env, config, variants = doc.get("environment"), doc.get("config"), doc.get("variants")
    if not isinstance(env, dict) or not isinstance(config, dict) or not isinstance(variants, list) or not variants:
        raise CacheFileError(f"{path}: the header names no environment, configuration or artifacts")
    environment = {k: env.get(k) if isinstance(env.get(k), (str, type(None))) else None for k in ENV_KEYS}
    if not isinstance(environment.get("torch"), str):
        raise CacheFileError(f"{path}: the header does not say which torch made the artifacts")
    out = []
    for item in variants[:64]:
        if not isinstance(item, dict):
            raise CacheFileError(f"{path}: an artifact entry is not an object")
        name, offset, size, digest = item.get("variant"), item.get("offset"), item.get("size"), item.get("sha256")
        if (
            not isinstance(name, str) or _text(name, 100) is None
            or not isinstance(offset, int) or isinstance(offset, bool) or offset < 0
            or not isinstance(size, int) or isinstance(size, bool) or size < 0
            or not isinstance(digest, str) or len(digest) != 64
        ):
            raise CacheFileError(f"{path}: an artifact entry is malformed")
        if offset + size > room:
            raise CacheFileError(f"{path}: {name}'s artifacts lie beyond the end of the file (cut short)")
        found = item.get("artifacts")
        counts: dict[Any, Any] = found if isinstance(found, dict) else {}
        out.append(CachedVariant(name, offset, size, digest,
                                 {str(k)[:50]: int(n) for k, n in list(counts.items())[:20]
                                  if isinstance(n, int) and not isinstance(n, bool)}))
    return CacheFile(environment, config, out, _text(doc.get("created")) or "", _text(doc.get("app_version")) or "")


def environment_of(hello_env: dict[str, Any], device: str) -> dict[str, Any]:
    """What a worker's ``hello`` environment says a cache must be valid for, on ``device``."""
    found_names = hello_env.get("device_names")
    names: dict[Any, Any] = found_names if isinstance(found_names, dict) else {}
    if device == "auto":
        found_devices = hello_env.get("devices")
        devices: list[Any] = found_devices if isinstance(found_devices, list) else ["cpu"]
        device = next((d for d in devices if isinstance(d, str) and d != "cpu"), "cpu")
    elif device == "cuda":
        device = "cuda:0"  # what torch.device("cuda") runs on in a fresh process
    return {
        "torch": hello_env.get("torch"), "triton": hello_env.get("triton"),
        "python": hello_env.get("python"), "device_type": device.split(":")[0],
        "device_name": names.get(device) if device != "cpu" else names.get("cpu", hello_env.get("cpu")),
        "cuda": hello_env.get("cuda"),
    }


def cache_mismatches(cache: CacheFile, here: dict[str, Any], config: BenchmarkConfig) -> list[str]:
    """Why ``cache`` will not help a start with ``config`` on a machine whose environment is ``here``
    (see :func:`environment_of`); empty when it can."""
    reasons = []
    made = cache.environment

    def differs(key: str, what: str, why: str) -> None:
        if made.get(key) != here.get(key):
            reasons.append(f"made with {what} {made.get(key) or 'none'}, this machine has "
                           f"{what} {here.get(key) or 'none'}: {why}")

    differs("torch", "torch", "torch uses no cache entry made by another version")
    differs("device_type", "device type", "the compiled code is for another kind of device")
    if not reasons:
        differs("device_name", "device", "the kernels were built and tuned for another device")
        if here.get("device_type") not in ("cpu", None):
            differs("triton", "Triton", "Triton's kernels are keyed by its version")
            differs("cuda", "CUDA", "the kernels are keyed by the CUDA version")
    mine = config.to_dict()
    changed = [k for k in sorted(set(mine) | set(cache.config))
               if k not in NOT_COMPILED and mine.get(k) != cache.config.get(k)]
    if changed:
        shown = ", ".join(f"{k} {cache.config.get(k)!r} → {mine.get(k)!r}" for k in changed[:5])
        reasons.append(f"made for another configuration ({shown}): the compiled graphs would not match")
    missing = [v for v in config.compiled_variants() if cache.variant(v) is None]
    if missing:
        have = ", ".join(v.variant for v in cache.variants)
        reasons.append(f"holds no artifacts for {', '.join(missing)} (it has {have})")
    return reasons
