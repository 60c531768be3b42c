"""The settings file and its folder are input like any other: the window starts whatever is
there, says what it did, never writes through a link and never crashes on the folder."""

from __future__ import annotations

import os
import stat

import pytest

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui import settings as settings_module
from compile_studio.gui.paths import SETTINGS_DIR_ENV, settings_file
from compile_studio.gui.settings import AppSettings
from support.gui_helpers import open_window

NOT_INI = b'{"this is": "someone else\'s file", "not": ["settings"]}\n'


def said(window) -> str:
    return window.statusBar().currentMessage() + "\n" + window.log.text()


def test_a_settings_file_that_is_a_link_is_set_aside_and_its_target_never_written(qtbot, tmp_path):
    target = tmp_path / "outside" / "precious.json"
    target.parent.mkdir()
    target.write_bytes(NOT_INI)
    path = settings_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)

    window = open_window(qtbot)
    assert "Settings reset to defaults" in said(window) and "link" in said(window)
    window.config_panel.set_config(BenchmarkConfig(batch_size=3))
    window.close()

    assert target.read_bytes() == NOT_INI
    assert os.path.islink(path.with_name(path.name + ".bad"))
    assert path.is_file() and not path.is_symlink()
    assert AppSettings().last_config().batch_size == 3


def test_a_link_put_in_place_while_the_window_is_open_is_not_written_through(qtbot, tmp_path):
    target = tmp_path / "precious.txt"
    target.write_bytes(NOT_INI)
    window = open_window(qtbot)
    path = settings_file()
    path.symlink_to(target)
    window.close()
    assert target.read_bytes() == NOT_INI
    assert path.is_file() and not path.is_symlink()


def test_a_non_ini_settings_file_is_set_aside_with_a_message(qtbot):
    path = settings_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(NOT_INI)
    window = open_window(qtbot)
    assert "not a settings (INI) file" in said(window)
    assert path.with_name(path.name + ".bad").read_bytes() == NOT_INI
    window.close()
    assert b"[run]" in path.read_bytes() or b"[window]" in path.read_bytes()


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_something_else_in_place_of_the_settings_file_is_set_aside(qtbot, kind):
    path = settings_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "directory":
        path.mkdir()
        (path / "inside").write_text("x")
    else:
        os.mkfifo(path)
    window = open_window(qtbot)  # a FIFO is never opened: this does not hang
    assert "not a regular file" in said(window)
    aside = path.with_name(path.name + ".bad")
    assert aside.is_dir() if kind == "directory" else stat.S_ISFIFO(os.lstat(aside).st_mode)
    window.close()
    assert path.is_file()


def test_an_uncreatable_settings_folder_means_defaults_and_a_message(qtbot, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(SETTINGS_DIR_ENV, str(blocker / "settings"))
    window = open_window(qtbot)
    assert window.config_panel.config() == BenchmarkConfig()
    assert "Settings will not be saved" in window.statusBar().currentMessage()
    assert not window.settings.saving
    window.close()
    assert blocker.read_text() == "not a folder"


def test_a_read_only_settings_folder_is_read_and_said_not_to_be_saved(qtbot, monkeypatch):
    first = AppSettings()
    first.set_last_config(BenchmarkConfig(batch_size=5))
    first.sync()
    folder = settings_file().parent
    before = settings_file().read_bytes()
    if os.geteuid() == 0:
        # root writes anywhere: the folder answers as a read-only one would
        real = settings_module.tempfile.mkstemp

        def refused(*args, **kwargs):
            if str(kwargs.get("dir")) == str(folder):
                raise PermissionError(13, "Permission denied")
            return real(*args, **kwargs)

        monkeypatch.setattr(settings_module.tempfile, "mkstemp", refused)
    folder.chmod(0o555)
    try:
        window = open_window(qtbot)
        assert window.config_panel.config().batch_size == 5
        assert "Settings will not be saved" in window.statusBar().currentMessage()
        assert "cannot be written" in window.statusBar().currentMessage()
        window.config_panel.set_config(BenchmarkConfig(batch_size=9))
        window.close()
        assert settings_file().read_bytes() == before
    finally:
        folder.chmod(0o755)
