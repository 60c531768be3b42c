"""How a run's failures are told: the stop signal, the error kinds and the error event's message."""

from __future__ import annotations

import re
import traceback

import torch

from ..core import protocol
from ..core.config import BenchmarkConfig, format_bytes


class Stopped(Exception):
    """Raised inside the loop when a stop was asked for."""


class RunFailed(Exception):
    """Raised when the run cannot go on (already reported)."""


def classify_error(exc: BaseException) -> protocol.ErrorKind:
    """Protocol error kind for an exception raised while running a variant."""
    if isinstance(exc, MemoryError) or "bad_alloc" in str(exc) or "MemoryError" in str(exc):
        return protocol.ErrorKind.OOM
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(exc, oom_type):
        return protocol.ErrorKind.OOM
    text = str(exc)
    if "out of memory" in text.lower() or "not enough memory" in text.lower() or (
        "can't allocate memory" in text.lower()
    ):
        return protocol.ErrorKind.OOM
    mod = type(exc).__module__
    if mod.startswith(("torch._dynamo", "torch._inductor")) or "Compiler" in type(exc).__name__:
        return protocol.ErrorKind.COMPILE_FAILED
    return protocol.ErrorKind.INTERNAL


def _alloc_size(text: str) -> str | None:
    m = re.search(r"allocate (\d+) bytes", text)
    if m:
        return format_bytes(int(m.group(1)))
    m = re.search(r"allocate ([\d.]+ [KMGT]i?B)", text)
    return m.group(1) if m else None


def first_line(exc: BaseException, limit: int = 600) -> str:
    """The exception's message in a line (Dynamo's most specific cause appended), cut at ``limit``."""
    text = str(exc).strip() or type(exc).__name__
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # Dynamo wraps the real cause: prefer its most specific line.
    msg = lines[0] if lines else text
    for ln in lines:
        if "Error" in ln and ln is not lines[0] and len(ln) < 300:
            msg = f"{msg} — {ln.strip()}"
            break
    return msg[:limit]


def error_event(
    name: str | None, exc: BaseException, what: str, device: torch.device, config: BenchmarkConfig
) -> protocol.ErrorEvent:
    """The ``error`` event of ``exc``, raised for variant ``name`` (None: the run) while ``what``.

    An out-of-memory message names the memory ``config``'s model and batch need.
    """
    kind = classify_error(exc)
    msg = first_line(exc)
    if kind == protocol.ErrorKind.OOM:
        size = _alloc_size(str(exc))
        est = format_bytes(config.estimated_memory_bytes())
        tried = f"tried to allocate {size}; " if size else ""
        msg = (
            f"out of memory on {device} while {what} "
            f"({tried}this model and batch need about {est}). "
            "Use a smaller batch or model."
        )
    elif kind == protocol.ErrorKind.COMPILE_FAILED:
        msg = f"torch.compile failed for {name}: {msg}"
    return protocol.ErrorEvent(
        kind=kind,
        message=msg,
        variant=name or None,
        traceback="".join(traceback.format_exception(exc))[-8000:],
    )
