"""Where the GUI keeps its data: the run store and the settings file."""

from __future__ import annotations

import os
from pathlib import Path

from ..results.storage.locations import DATA_DIR_ENV, default_data_dir

__all__ = ["DATA_DIR_ENV", "SETTINGS_DIR_ENV", "data_dir", "runs_dir", "settings_file"]

SETTINGS_DIR_ENV = "COMPILE_STUDIO_SETTINGS_DIR"
SETTINGS_FILE_NAME = "compile-studio.ini"


def data_dir() -> Path:
    """The user's data folder: ``$COMPILE_STUDIO_DATA_DIR`` or the platform's app data
    folder (``QStandardPaths.AppDataLocation``; the same folder the CLI uses)."""
    return default_data_dir()


def runs_dir() -> Path:
    """The run store: one sub-folder per run."""
    return data_dir() / "runs"


def settings_file() -> Path | None:
    """The settings file when ``$COMPILE_STUDIO_SETTINGS_DIR`` is set, else None (Qt's default)."""
    env = os.environ.get(SETTINGS_DIR_ENV)
    return Path(env) / SETTINGS_FILE_NAME if env else None
