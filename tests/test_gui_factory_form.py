"""A custom model's form says what the run will use (real widgets, real runs, offscreen): the
Batch field of a factory that sets its own batch is read-only and shows the factory's batch
with the reason; the Preset box follows the model kind; an old error is not left up through
a later sweep."""

from __future__ import annotations

import textwrap

from PySide6.QtWidgets import QApplication

from compile_studio.core.config import AS_GIVEN, BenchmarkConfig
from compile_studio.gui.config_panel import CUSTOM_PRESET
from compile_studio.gui.factory_fields import UNKNOWN_TEXT
from compile_studio.jobs.sweep_spec import SweepSpec
from support.gui_helpers import RUN_TIMEOUT_MS, open_window, run_and_wait

FACTORY = textwrap.dedent(
    """
    import torch
    from torch import nn

    def make_model():
        return nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4)), torch.randn(8, 16)

    def make_sized(batch_size=4):
        return nn.Linear(16, 4), torch.randn(batch_size, 16)
    """
)


def _choose(combo, text: str) -> None:
    index = combo.findText(text)
    assert index >= 0, text
    combo.setCurrentIndex(index)


def _choose_data(combo, value: str) -> None:
    index = combo.findData(value)
    assert index >= 0, value
    combo.setCurrentIndex(index)


def test_a_factory_that_sets_its_batch_shows_it_read_only_with_the_reason(qtbot, tiny_config, tmp_path):
    path = tmp_path / "my_model.py"
    path.write_text(FACTORY)
    window = open_window(qtbot)
    panel = window.config_panel
    tiny = next(p["name"] for p in panel.presets if p["name"].startswith("Tiny"))
    _choose(panel.preset_combo, tiny)
    assert panel.preset_combo.currentText() == tiny and panel.batch_spin.isEnabled()
    assert panel.config().batch_size == 32

    # the model switched to custom: no preset describes it any more
    _choose_data(panel.widget_for("model"), "custom")
    panel.widget_for("factory").setText(f"{path}:make_model")
    QApplication.processEvents()
    assert panel.preset_combo.currentText() == CUSTOM_PRESET
    batch = panel.factory_batch
    assert batch is not None
    assert not panel.batch_spin.isEnabled() and batch.shown_text() == UNKNOWN_TEXT
    assert "takes no batch_size" in batch.note.text() and batch.note.isVisible()
    assert panel.config().batch_size == 32  # the form's own batch is kept

    # after a run, the field shows the batch the factory's inputs had
    config = BenchmarkConfig(**{**tiny_config, **panel.config().to_dict()} | {
        "device": "cpu", "variants": ["eager", "aot_eager"], "iterations": 30, "warmup": 5,
        "warmup_min_ms": 0, "compile_timing": "in_run",
    })
    run = run_and_wait(qtbot, window, config)
    assert run.status == "complete", run.message
    assert run.batch() == 8
    qtbot.waitUntil(lambda: batch.shown_text() == "8 samples", timeout=5000)
    assert not panel.batch_spin.isEnabled() and "8 in its latest run" in batch.note.text()
    assert panel.config().batch_size == 32

    # a factory that takes batch_size: the field is the form's again
    panel.widget_for("factory").setText(f"{path}:make_sized")
    assert panel.batch_spin.isEnabled() and panel.batch_spin.value() == 32 and not batch.note.isVisible()
    panel.widget_for("factory").setText(f"{path}:make_model")
    assert not panel.batch_spin.isEnabled() and batch.shown_text() == "8 samples"

    # choosing Tiny again resets the model kind and the batch
    _choose(panel.preset_combo, tiny)
    assert panel.preset_combo.currentText() == tiny
    config = panel.config()
    assert config.model == "mlp" and config.layers == "64,64,10" and config.batch_size == 32
    assert config.dtype != AS_GIVEN
    assert panel.batch_spin.isEnabled() and panel.batch_spin.value() == 32 and not batch.note.isVisible()


def test_a_later_sweep_takes_down_an_earlier_error(qtbot, tiny_config):
    window = open_window(qtbot)
    window.show_error("The run failed: an earlier failure")
    assert window.error_text
    base = BenchmarkConfig(**{**tiny_config, "variants": ["eager"], "iterations": 20})
    assert window.sweep_view.start(SweepSpec.parse("batch_size", "2"), base)
    assert window.error_text == ""
    qtbot.waitUntil(lambda: not window.sweep_view.is_running(), timeout=RUN_TIMEOUT_MS)
    assert window.error_text == ""
