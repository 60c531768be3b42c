"""The configuration form: every field round-trips, bad input disables Run and says why."""

from __future__ import annotations

from PySide6.QtCore import Qt

from compile_studio.core.config import BenchmarkConfig, EnvironmentInfo
from compile_studio.gui.config_panel import ConfigPanel
from compile_studio.gui.main_window import MainWindow

ENV = EnvironmentInfo(
    devices=("cpu",),
    compile_modes=("default", "reduce-overhead", "max-autotune"),
    compile_backends=("aot_eager", "cudagraphs"),
    device_dtypes={"cpu": ("fp32", "bf16", "fp16")},
    device_memory={"cpu": 8 * 2**30},
)


def make_window(qtbot) -> MainWindow:
    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    window.show()
    return window


def test_invalid_layer_spec_disables_run_and_says_why(qtbot):
    window = make_window(qtbot)
    assert window.run_button.isEnabled()
    edit = window.config_panel.layers_edit
    edit.clear()
    qtbot.keyClicks(edit, "1024,abc,10")

    assert not window.run_button.isEnabled()
    assert not window.run_action.isEnabled()
    assert window.run_blocker_label.isVisible()
    assert "layers" in window.run_blocker_label.text()
    assert "'abc' is not a whole number" in window.run_blocker_label.text()
    assert "'abc' is not a whole number" in window.run_button.toolTip()
    inline = window.config_panel.error_labels["layers"]
    assert inline.isVisible() and "'abc' is not a whole number" in inline.text()

    # Ctrl+R does nothing while invalid
    qtbot.keyClick(window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    assert not window.is_running()

    edit.clear()
    qtbot.keyClicks(edit, "1024,10")
    assert window.run_button.isEnabled()
    assert not window.run_blocker_label.isVisible()
    assert not inline.isVisible()


def test_start_run_with_a_bad_config_shows_the_problem_and_starts_nothing(qtbot):
    window = make_window(qtbot)
    window.start_run(BenchmarkConfig(layers="8", variants=["eager"]))
    assert not window.is_running()
    assert "layers" in window.last_error
    assert window.error_banner.isVisible()


def test_config_round_trips_through_the_form(qtbot):
    panel = ConfigPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.set_environment(ENV)
    config = BenchmarkConfig(
        layers="64,128,10",
        activation="relu",
        batch_size=33,
        dtype="bf16",
        device="cpu",
        workload="training",
        variants=["eager", "max-autotune", "aot_eager"],
        fullgraph=True,
        dynamic=True,
        iterations=1234,
        warmup=7,
        timer="host",
        rounds=7,
        seed=42,
        compile_cache="cold",
        cold_l2=True,
        label="my run",
    )
    with qtbot.waitSignal(panel.changed):
        panel.set_config(config)
    assert panel.config() == config
    assert panel.is_valid()


def test_environment_offers_its_variants_and_checks_the_device(qtbot):
    panel = ConfigPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.set_config(BenchmarkConfig(device="cuda", variants=["eager", "default"]))
    assert panel.is_valid()  # nothing known about the machine yet
    panel.set_environment(ENV)
    assert panel.variant_choices() == [
        "eager",
        "default",
        "reduce-overhead",
        "max-autotune",
        "aot_eager",
        "cudagraphs",
    ]
    assert panel.config().variants == ["eager", "default"]  # kept across the update
    assert not panel.is_valid()
    device_label = panel.error_labels["device"]
    assert device_label.isVisible() and "no CUDA GPU is visible" in device_label.text()
    panel.device_combo.setCurrentText("cpu")
    assert panel.is_valid()
    # unticking eager with a compiled variant left is a problem named on the variants field
    panel.set_variant_checked("eager", False)
    assert "include eager" in panel.error_labels["variants"].text()
    panel.set_variant_checked("eager", True)
    panel.set_variant_checked("default", False)
    assert panel.config().variants == ["eager"]
    assert panel.is_valid()


def test_memory_estimate_beyond_the_device_blocks_run(qtbot):
    panel = ConfigPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.set_environment(ENV)
    panel.set_config(BenchmarkConfig(layers="65536,65536", batch_size=1, device="cpu"))
    assert not panel.is_valid()
    assert "more than the" in panel.error_labels["batch_size"].text()


def test_presets_fill_layers_and_batch_and_editing_shows_custom(qtbot):
    panel = ConfigPanel()
    qtbot.addWidget(panel)
    panel.show()
    names = [panel.preset_combo.itemText(i) for i in range(panel.preset_combo.count())]
    assert names[0] == "Custom"
    assert len(names) >= 5
    tiny = next(i for i, n in enumerate(names) if n.startswith("Tiny"))
    panel.preset_combo.setCurrentIndex(tiny)
    assert panel.config().layers == "64,64,10"
    assert panel.preset_combo.currentIndex() == tiny
    for i, preset in enumerate(panel.presets, start=1):
        panel.preset_combo.setCurrentIndex(i)
        assert panel.config().layers == preset["config"]["layers"]
        assert panel.config().batch_size == preset["config"].get("batch_size", 256)
        assert panel.preset_combo.currentIndex() == i, preset["name"]
    assert any(n.startswith("Deep") for n in names)
    panel.layers_edit.setText("1024,1024,1024,10")
    assert panel.preset_combo.currentText() == "Custom"
    # the default seed MLP shows as its preset
    panel.set_config(BenchmarkConfig())
    assert panel.preset_combo.currentText().startswith("Seed MLP")


def test_spin_boxes_carry_units(qtbot):
    panel = ConfigPanel()
    qtbot.addWidget(panel)
    panel.show()
    assert panel.batch_spin.suffix().strip() == "samples"
    assert panel.iterations_spin.suffix().strip() == "calls"
    assert panel.warmup_spin.suffix().strip() == "calls"
    # a count of one reads in the singular; a unit of measure does not change
    rounds = panel.widget_for("rounds")
    rounds.setValue(1)
    assert rounds.text() == "1 round"
    rounds.setValue(3)
    assert rounds.text() == "3 rounds"
    warmup_ms = panel.widget_for("warmup_min_ms")
    warmup_ms.setValue(1)
    assert warmup_ms.suffix().strip() == "ms"


def test_unreadable_presets_offer_just_the_default_and_say_so(qtbot, monkeypatch, caplog):
    from compile_studio.core import resources_path

    def missing():
        raise resources_path.ResourceMissing("missing resource: presets.json")

    monkeypatch.setattr(resources_path, "load_presets", missing)
    panel = ConfigPanel()
    qtbot.addWidget(panel)
    panel.show()
    names = [panel.preset_combo.itemText(i) for i in range(panel.preset_combo.count())]
    assert names == ["Custom", "Default"]
    assert panel.presets[0]["config"] == BenchmarkConfig().to_dict()
    assert panel.preset_combo.currentText() == "Default"
    assert "presets could not be read" in panel.preset_problem
    note = panel.error_labels["preset"]
    assert note.isVisible() and "missing resource: presets.json" in note.text()
    assert "presets could not be read" in caplog.text
    assert panel.is_valid()  # a note about the presets does not block a run
