"""The default data folder stays where it has always been, on every OS."""

from __future__ import annotations

import sys
from pathlib import Path

import platformdirs
import platformdirs.windows
import pytest

from compile_studio.core.app_info import APPLICATION, ORGANIZATION
from compile_studio.results.storage import locations
from compile_studio.results.storage.locations import (
    DATA_DIR_ENV,
    default_data_dir,
    default_run_store,
)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh home folder, with no data-folder variables set."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("APPDATA", raising=False)
    return tmp_path


def test_names():
    assert (ORGANIZATION, APPLICATION) == ("CompileStudio", "Compile Studio")


def test_the_environment_variable_wins(home, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg"))
    monkeypatch.setenv(DATA_DIR_ENV, str(home / "mine"))
    assert default_data_dir() == home / "mine"
    assert default_run_store() == home / "mine" / "runs"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux layout")
def test_linux_default(home):
    assert default_data_dir() == home / ".local" / "share" / "CompileStudio" / "Compile Studio"
    assert default_run_store() == default_data_dir() / "runs"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux layout")
def test_linux_xdg_data_home(home, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg"))
    assert default_data_dir() == home / "xdg" / "CompileStudio" / "Compile Studio"
    monkeypatch.setenv("XDG_DATA_HOME", "")
    assert default_data_dir() == home / ".local" / "share" / "CompileStudio" / "Compile Studio"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="compares with Qt on Linux")
def test_linux_default_is_qts_app_data_location(home, monkeypatch, qapp):
    from PySide6.QtCore import QStandardPaths

    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg"))
    names = qapp.organizationName(), qapp.applicationName()
    qapp.setOrganizationName(ORGANIZATION)
    qapp.setApplicationName(APPLICATION)
    try:
        qt = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    finally:
        qapp.setOrganizationName(names[0])
        qapp.setApplicationName(names[1])
    assert default_data_dir() == Path(qt)


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX home folder stands in for macOS")
def test_macos_default_ignores_xdg_data_home(home, monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg"))
    expected = home / "Library" / "Application Support" / "CompileStudio" / "Compile Studio"
    assert default_data_dir() == expected
    assert locations.default_run_store() == expected / "runs"


def test_windows_default_is_roaming_appdata(home, monkeypatch):
    roaming, local = home / "AppData" / "Roaming", home / "AppData" / "Local"
    folders = {"CSIDL_APPDATA": str(roaming), "CSIDL_LOCAL_APPDATA": str(local)}
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(platformdirs, "PlatformDirs", platformdirs.windows.Windows)
    monkeypatch.setattr(platformdirs.windows, "get_win_folder", folders.__getitem__)
    assert default_data_dir() == roaming / "CompileStudio" / "Compile Studio"
