"""Run the check: ``python3 bench/gpu_check …`` (the folder) or ``python3 -m bench.gpu_check …``."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path


def _make_importable() -> None:
    """Run as a folder or a file: this folder off ``sys.path``, the checkout (and ``app/``) on it."""
    here = Path(__file__).resolve().parent
    root = here.parent.parent
    sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != here]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    if importlib.util.find_spec("compile_studio") is None:
        sys.path.append(str(root / "app"))


if __name__ == "__main__":
    if not __package__:
        _make_importable()
    from bench.gpu_check.main import main

    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
