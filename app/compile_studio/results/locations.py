"""Where runs are kept by default (the same folder for the GUI and the CLI)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

DATA_DIR_ENV = "COMPILE_STUDIO_DATA_DIR"
ORGANIZATION = "CompileStudio"
APPLICATION = "Compile Studio"


def default_data_dir() -> Path:
    """The user's data folder for Compile Studio.

    ``$COMPILE_STUDIO_DATA_DIR`` when set; otherwise the folder Qt's
    ``QStandardPaths.AppDataLocation`` gives for this app (worked out without
    Qt so the CLI needs none): ``$XDG_DATA_HOME/CompileStudio/Compile Studio``
    on Linux, ``~/Library/Application Support/...`` on macOS, ``%APPDATA%/...``
    on Windows.
    """
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif sys.platform.startswith("win"):
        base = Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming"))
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / ORGANIZATION / APPLICATION


def default_run_store() -> Path:
    return default_data_dir() / "runs"
