"""The form groups its fields by model kind: a kind's own fields show only for that kind, hidden
fields keep their values, and a message coming or going moves no row (real widgets, offscreen)."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QComboBox, QLineEdit

from compile_studio.core.config import BenchmarkConfig, config_fields
from compile_studio.core.model_specs import MODEL_KINDS
from compile_studio.gui.config_panel import ConfigPanel, field_model_kinds

#: The fields each kind shows beyond the measurement's (which every kind shows).
OWN_FIELDS = {
    "mlp": {"layers", "activation"},
    "mlp_ln_residual": {"layers", "activation"},
    "transformer": {"transformer"},
    "cnn": {"cnn", "activation"},
    "custom": {"factory", "factory_args", "model_path"},
}
SPECIFIC = set().union(*OWN_FIELDS.values())


@pytest.fixture
def panel(qtbot) -> ConfigPanel:
    p = ConfigPanel()
    qtbot.addWidget(p)
    # the width the window gives the form (its whole width; a narrower form, beside the Sweep
    # dock, cuts long captions rather than scroll sideways)
    p.resize(p.sizeHint().width(), 1400)
    p.show()
    qtbot.waitExposed(p)
    return p


def choose_kind(panel: ConfigPanel, kind: str) -> None:
    """Pick ``kind`` in the Model combo as a user does."""
    combo = panel.widget_for("model")
    assert isinstance(combo, QComboBox)
    combo.setCurrentIndex(combo.findData(kind))
    assert panel.config().model == kind


def visible_fields(panel: ConfigPanel) -> set[str]:
    return {s.name for s in config_fields() if panel.widget_for(s.name).isVisible()}


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_each_kind_shows_its_own_fields_and_the_measurement(panel, kind):
    choose_kind(panel, kind)
    shown = visible_fields(panel)
    everything = {s.name for s in config_fields()}
    assert shown == (everything - SPECIFIC) | OWN_FIELDS[kind]
    assert set(panel.shown_fields()) == shown
    # the kind's own fields sit in the Model group, the rest in the Measurement group
    for name in OWN_FIELDS[kind] | {"model"}:
        assert panel.model_group.isAncestorOf(panel.widget_for(name)), name
    for name in ("batch_size", "dtype", "device", "variants", "iterations"):
        assert panel.run_group.isAncestorOf(panel.widget_for(name)), name


def test_hidden_fields_keep_their_values_and_come_back(panel):
    layers = panel.widget_for("layers")
    assert isinstance(layers, QLineEdit)
    layers.setText("64,32,8")
    choose_kind(panel, "transformer")
    transformer = panel.widget_for("transformer")
    assert isinstance(transformer, QLineEdit)
    transformer.setText("64,2,128,16,1")
    assert not layers.isVisible() and transformer.isVisible()
    config = panel.config()
    assert (config.layers, config.transformer) == ("64,32,8", "64,2,128,16,1")  # hidden, still there
    choose_kind(panel, "mlp")
    assert layers.isVisible() and layers.text() == "64,32,8"
    assert not transformer.isVisible() and panel.config().transformer == "64,2,128,16,1"


def test_a_saved_configuration_keeps_every_value_and_shows_its_kind(qtbot, panel):
    panel.set_config(BenchmarkConfig(layers="32,16", transformer="32,2,64,8,1", cnn="16,3,4,8",
                                     model="cnn", factory="m.py:make", model_path="/tmp"))
    assert visible_fields(panel) >= {"cnn", "activation"}
    assert not panel.widget_for("layers").isVisible() and not panel.widget_for("factory").isVisible()
    text = panel.config().to_json()
    other = ConfigPanel()
    qtbot.addWidget(other)
    other.set_config(BenchmarkConfig.from_json(text))
    assert other.config() == panel.config()
    assert other.config().to_dict() == {**BenchmarkConfig().to_dict(), **BenchmarkConfig.from_json(text).to_dict()}
    assert not other.is_field_shown("transformer") and other.is_field_shown("cnn")


def test_a_message_coming_and_going_moves_no_row(qtbot, panel):
    layers = panel.widget_for("layers")
    assert isinstance(layers, QLineEdit)
    below = [panel.widget_for(n) for n in ("activation", "batch_size", "iterations", "diagnostics")]

    def places() -> list[QPoint]:
        return [w.mapTo(panel, QPoint(0, 0)) for w in below]

    before = places()
    layers.setText("64,")
    message = panel.error_labels["layers"]
    assert message.isVisible() and message.text()
    assert places() == before
    layers.setText("64,32")
    assert not message.isVisible()
    assert places() == before


def test_a_problem_of_a_hidden_field_is_said_under_the_model_kind(panel):
    layers = panel.widget_for("layers")
    assert isinstance(layers, QLineEdit)
    layers.setText("abc")
    choose_kind(panel, "transformer")
    assert not panel.is_valid()  # the configuration still holds the bad value
    note = panel.error_labels["model"]
    assert note.isVisible() and "Layer sizes (not used by this model kind, hidden)" in note.text()
    assert not panel.error_labels["layers"].isVisible()
    choose_kind(panel, "mlp")
    assert panel.error_labels["layers"].isVisible() and not panel.error_labels["model"].isVisible()


def test_the_fields_model_kinds_agree_with_their_help():
    """Every kind a field declares (``model_kinds=``) is a model kind, the model-specific fields
    declare theirs, and a field whose help starts with ``model KIND:`` applies to that kind."""
    specs = {s.name: s for s in config_fields()}
    for spec in specs.values():
        assert set(spec.model_kinds) <= set(MODEL_KINDS), spec.name
    assert {n for n, s in specs.items() if s.model_kinds} >= {"layers", "transformer", "cnn", "factory"}
    for spec in specs.values():
        said = re.match(r"model (\w+)\b", spec.help)
        if said and said.group(1) in MODEL_KINDS:
            assert said.group(1) in (field_model_kinds(spec) or ()), spec.name
