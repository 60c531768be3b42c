"""Settings survive a restart of the window; unreadable settings fall back to defaults once."""

from __future__ import annotations

from PySide6.QtCore import QSize

from compile_studio.config import BenchmarkConfig
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
    first.export_run  # noqa: B018 - the attribute exists
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
