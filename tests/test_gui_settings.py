"""Settings survive a restart of the window; unreadable settings fall back to defaults once."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QSize

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.main_window import MainWindow
from compile_studio.gui.paths import settings_file
from compile_studio.gui.settings import AppSettings


def open_window(qtbot) -> MainWindow:
    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return window


def test_config_geometry_and_splitters_survive_a_restart(qtbot, tmp_path):
    first = open_window(qtbot)
    config = BenchmarkConfig(
        layers="64,64,10",
        batch_size=17,
        iterations=321,
        warmup=3,
        variants=["eager", "aot_eager"],
        label="kept",
    )
    first.config_panel.set_config(config)
    # within the offscreen screen (800×800): restoring never shrinks it to fit
    first.resize(790, 730)
    first.main_splitter.setSizes([250, 340, 180])
    first.centre_splitter.setSizes([380, 200])
    qtbot.waitUntil(lambda: first.size() == QSize(790, 730))
    main_sizes = first.main_splitter.sizes()
    centre_sizes = first.centre_splitter.sizes()
    first.exports.export_run_to  # noqa: B018 - the attribute exists
    first.settings.set_export_folder(tmp_path)
    first.close()
    assert settings_file() is not None and settings_file().exists()

    second = open_window(qtbot)
    assert second.config_panel.config() == config
    assert second.size() == QSize(790, 730)
    assert second.main_splitter.sizes() == main_sizes
    assert second.centre_splitter.sizes() == centre_sizes
    assert second.settings.export_folder() == tmp_path
    assert second.settings.take_problem() is None


def test_damaged_settings_file_means_defaults_and_one_message(qtbot):
    path = settings_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"[run\nlast_config=@ByteArray(\x00\x01")

    window = open_window(qtbot)
    assert window.config_panel.config() == BenchmarkConfig()
    assert "Settings reset to defaults" in window.statusBar().currentMessage()
    assert "Settings reset to defaults" in window.log.text()
    assert path.with_name(path.name + ".bad").exists()
    window.close()

    again = open_window(qtbot)
    assert "Settings reset" not in again.statusBar().currentMessage()
    assert "Settings reset" not in again.log.text()


def test_unusable_saved_config_is_dropped_with_a_message(qtbot):
    settings = AppSettings()
    settings._qs.setValue("run/last_config", '{"layers": 5, "nonsense": true}')
    settings.sync()
    window = open_window(qtbot)
    assert window.config_panel.config() == BenchmarkConfig()
    assert "saved configuration was not usable" in window.statusBar().currentMessage()


HUGE_NUMBER = "16," + "9" * 5000


@pytest.mark.parametrize(
    "text",
    [
        '{"layers": "' + HUGE_NUMBER + '"}',  # a number too long to convert
        "[" * 5000 + "]" * 5000,  # nesting deeper than any configuration
        '{"batch_size": "' + "x" * 200_000 + '"}',  # a value far larger than any field
        '{"iterations": 1e999, "warmup": -1}',
        "not json at all",
        '["a", "list"]',
    ],
    ids=["huge-number", "deep-nesting", "huge-string", "infinite", "not-json", "a-list"],
)
def test_a_crafted_saved_config_never_reaches_the_form(qtbot, text):
    settings = AppSettings()
    settings._qs.setValue("run/last_config", text)
    settings._qs.setValue("export/folder", ["a", "list"])
    settings.sync()
    window = open_window(qtbot)
    assert window.config_panel.config() == BenchmarkConfig()
    assert "saved configuration" in window.statusBar().currentMessage()
    assert window.settings.export_folder() is None
    assert window.run_action.isEnabled()


def test_an_oversized_settings_file_is_set_aside_unread(qtbot):
    path = settings_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[run]\nlast_config=" + "x" * (2 << 20) + "\n")
    window = open_window(qtbot)
    assert window.config_panel.config() == BenchmarkConfig()
    assert "far larger than settings can be" in window.log.text()
    assert path.with_name(path.name + ".bad").exists()


def test_a_saved_config_keeps_its_good_fields_and_resets_the_bad_one(qtbot):
    settings = AppSettings()
    good = BenchmarkConfig(batch_size=12, iterations=77)
    data = {**good.to_dict(), "layers": HUGE_NUMBER}
    settings._qs.setValue("run/last_config", json.dumps(data))
    settings.sync()
    window = open_window(qtbot)
    config = window.config_panel.config()
    assert (config.batch_size, config.iterations) == (12, 77)
    assert config.layers == BenchmarkConfig().layers
    assert "unusable values (layers)" in window.statusBar().currentMessage()
