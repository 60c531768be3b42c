"""The worker protocol: JSON lines between a supervisor and the worker process.

Request: one JSON object on the worker's stdin (a ``BenchmarkConfig``), then
optionally the line ``stop``. Reply: one JSON object per line on stdout, each
with a ``type`` (see ``EVENT_TYPES``). Pure Python; shared by every side.
"""

from __future__ import annotations

import json
from typing import Any

PROTOCOL_VERSION = 1

HELLO = "hello"
PHASE = "phase"
SAMPLES = "samples"
COMPILED = "compiled"
VARIANT_DONE = "variant_done"
GPU_STATE = "gpu_state"
WARNING = "warning"
ERROR = "error"
DONE = "done"

EVENT_TYPES = (HELLO, PHASE, SAMPLES, COMPILED, VARIANT_DONE, GPU_STATE, WARNING, ERROR, DONE)

PHASES = ("build", "compile", "warmup", "measure")

#: ``error`` kinds
ERROR_KINDS = ("oom", "compile_failed", "bad_config", "device_unavailable", "internal", "crashed")

STOP_LINE = "stop"


def encode(event: dict[str, Any]) -> str:
    """One event as one line of JSON (no trailing newline)."""
    return json.dumps(event, separators=(",", ":"), allow_nan=True)


def decode(line: str) -> dict[str, Any] | None:
    """Parse one stdout line; None when it is not a protocol event."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(event, dict) or event.get("type") not in EVENT_TYPES:
        return None
    return event
