"""The process environment every test (and every Python a test starts) runs in."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def prepare() -> None:
    """Offscreen Qt, one Inductor cache and one bytecode cache for the whole suite, unbuffered
    output, and no worker started ahead in window tests (tests/test_standby.py turns it on)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    # One Inductor cache shared by every test (and every worker process they start):
    # the first Inductor compile of a tiny MLP is slow cold, fast warm.
    os.environ.setdefault(
        "TORCHINDUCTOR_CACHE_DIR", str(Path(tempfile.gettempdir()) / "compile-studio-test-inductor")
    )
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    # Bytecode: the suite starts hundreds of Pythons (CLI runs, workers, compile hosts, windows).
    # Where PYTHONDONTWRITEBYTECODE is set (container images often set it), each would compile the
    # app's sources (and pytest its test files) again; they share one bytecode cache outside the
    # source tree instead, as they share the Inductor cache.
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) or sys.dont_write_bytecode:
        os.environ.setdefault(
            "PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "compile-studio-test-pycache")
        )
        sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
        sys.dont_write_bytecode = False
    # no worker started ahead in window tests (tests/test_standby.py turns it on): one process per run
    os.environ.setdefault("COMPILE_STUDIO_STANDBY", "0")


#: The smallest useful benchmark: runs in well under a second per variant.
TINY = {
    "layers": "32,32,8",
    "batch_size": 4,
    "device": "cpu",
    "iterations": 30,
    "warmup": 5,
    "variants": ["eager", "aot_eager"],
    # first calls timed in this run: a fresh process per compiled variant is tested on its own
    "compile_timing": "in_run",
    "warmup_min_ms": 0,
}


def tiny_config() -> dict:
    """A fresh copy of :data:`TINY`."""
    return {k: (list(v) if isinstance(v, list) else v) for k, v in TINY.items()}
