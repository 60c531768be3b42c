"""Where runs are kept by default (the same folder for the GUI and the CLI)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import platformdirs

from ...core.app_info import APPLICATION, ORGANIZATION

DATA_DIR_ENV = "COMPILE_STUDIO_DATA_DIR"


def user_data_root() -> Path:
    """The platform's per-user data folder, under which each app keeps its own.

    ``$XDG_DATA_HOME`` (or ``~/.local/share``) on Linux, ``%APPDATA%`` on Windows,
    ``~/Library/Application Support`` on macOS. On macOS platformdirs would let
    ``$XDG_DATA_HOME`` take precedence; Qt does not, so neither does this.
    """
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    return platformdirs.user_data_path(roaming=True)


def default_data_dir() -> Path:
    """The user's data folder for Compile Studio.

    ``$COMPILE_STUDIO_DATA_DIR`` when set; otherwise the folder Qt's
    ``QStandardPaths.AppDataLocation`` gives for this app (worked out without
    Qt so the CLI needs none): ``<user_data_root>/CompileStudio/Compile Studio``.
    """
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    return user_data_root() / ORGANIZATION / APPLICATION


def default_run_store() -> Path:
    """The run store: one sub-folder per run."""
    return default_data_dir() / "runs"
