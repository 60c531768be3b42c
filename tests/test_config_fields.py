"""Field metadata: a field declared once gets its checks, its CLI flag and its form widget."""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import dataclass

import pytest
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QLineEdit, QSpinBox

from compile_studio.cli.commands import build_parser
from compile_studio.cli.config_flags import add_config_flags, config_from_args
from compile_studio.core.config import (
    BenchmarkConfig,
    ConfigError,
    ConfigProblem,
    FieldSpec,
    config_fields,
    setting,
)
from compile_studio.gui.config_panel import ConfigPanel, VariantChecklist


@dataclass
class Extended(BenchmarkConfig):
    """BenchmarkConfig plus fields declared by metadata alone."""

    repeats: int = setting(
        3, label="Repeats", help="times to repeat the run", unit="runs", minimum=1, maximum=10
    )
    flavour: str = setting("plain", label="Flavour", help="how it tastes", choices=("plain", "spicy"))
    verbose: bool = setting(False, label="Verbose", caption="say more", help="print more")


def parse(*argv: str, config_cls=Extended) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_config_flags(parser, config_cls)
    return parser.parse_args(list(argv))


def spec_of(name: str, cls=Extended) -> FieldSpec:
    return next(s for s in config_fields(cls) if s.name == name)


# -- metadata ----------------------------------------------------------------------------
def test_fields_keep_their_names_defaults_and_order():
    specs = config_fields()
    defaults = BenchmarkConfig()
    assert [s.name for s in specs] == [f.name for f in dataclasses.fields(BenchmarkConfig)]
    assert all(s.default == getattr(defaults, s.name) for s in specs)
    assert all(s.help for s in specs), [s.name for s in specs if not s.help]
    kinds = {s.name: s.kind for s in specs}
    assert kinds["batch_size"] == "int" and kinds["dtype"] == "choice"
    assert kinds["fullgraph"] == "bool" and kinds["layers"] == "text" and kinds["variants"] == "list"
    assert spec_of("variants", BenchmarkConfig).widget == "variants"
    assert spec_of("device", BenchmarkConfig).widget == "device"


def test_extra_fields_read_back_from_metadata():
    spec = spec_of("repeats")
    assert (spec.kind, spec.label, spec.unit, spec.minimum, spec.maximum) == ("int", "Repeats", "runs", 1, 10)
    assert spec.flag == "--repeats"
    assert spec_of("flavour").kind == "choice" and spec_of("flavour").choices == ("plain", "spicy")
    assert spec_of("verbose").kind == "bool" and spec_of("verbose").caption == "say more"
    assert [s.name for s in config_fields(Extended)][-3:] == ["repeats", "flavour", "verbose"]


def test_list_defaults_are_not_shared():
    a, b = BenchmarkConfig(), BenchmarkConfig()
    a.variants.append("aot_eager")
    assert b.variants == ["eager", "default"]


def test_unknown_metadata_is_refused():
    with pytest.raises(TypeError, match="lable"):
        setting(1, lable="typo")


def test_a_field_without_metadata_still_gets_a_spec():
    Plain = dataclasses.make_dataclass("Plain", [("top_k", int, 5)], bases=(BenchmarkConfig,))
    spec = spec_of("top_k", Plain)
    assert (spec.kind, spec.label, spec.minimum) == ("int", "Top k", None)


# -- checks from metadata ------------------------------------------------------------------
def test_bounds_choices_and_types_come_from_metadata():
    def problems(**kw):
        return {p.field: p.message for p in Extended(**kw).problems()}

    assert problems() == {}
    assert problems(repeats=11)["repeats"] == "must be at most 10"
    assert problems(repeats=0)["repeats"] == "must be at least 1"
    assert problems(flavour="sour")["flavour"] == "must be one of plain, spicy"
    assert problems(verbose="yes")["verbose"] == "must be true or false, got 'yes'"
    assert problems(batch_size="8")["batch_size"] == "must be a whole number, got '8'"


def test_from_dict_checks_the_extra_fields_types():
    with pytest.raises(ConfigError) as info:
        Extended.from_dict({"repeats": "7", "verbose": 1})
    assert {p.field for p in info.value.problems} == {"repeats", "verbose"}


def test_extra_fields_round_trip_through_json():
    config = Extended(repeats=7, flavour="spicy", verbose=True, layers="8,8")
    assert json.loads(config.to_json())["repeats"] == 7
    assert Extended.from_json(config.to_json()) == config


# -- command line --------------------------------------------------------------------------
def test_cli_flags_for_extra_fields():
    config = config_from_args(parse("--repeats", "7", "--flavour", "spicy", "--verbose"), Extended)
    assert (config.repeats, config.flavour, config.verbose) == (7, "spicy", True)
    assert config.problems() == []
    assert config_from_args(parse("--no-verbose"), Extended).verbose is False
    assert config_from_args(parse(), Extended) == Extended()


def test_cli_value_out_of_bounds_gets_the_metadata_message():
    config = config_from_args(parse("--repeats", "70"), Extended)
    assert ConfigProblem("repeats", "must be at most 10") in config.problems()
    with pytest.raises(ConfigError, match="repeats: must be at most 10"):
        config.validate()


def test_cli_refuses_a_value_outside_the_choices(capsys):
    with pytest.raises(SystemExit):
        parse("--flavour", "sour")
    assert "invalid choice: 'sour'" in capsys.readouterr().err


def test_cli_help_shows_help_unit_and_bounds():
    parser = argparse.ArgumentParser()
    add_config_flags(parser, Extended)
    text = " ".join(parser.format_help().split())
    assert "--repeats N times to repeat the run (runs; 1–10; default 3)" in text
    assert "--verbose, --no-verbose" in text
    assert "--batch-size N rows per call (samples; 1–1,048,576; default 256)" in text


def test_run_flags_of_the_cli():
    args = build_parser().parse_args(
        ["run", "--layers", "8,8", "--variants", "eager, aot_eager,", "--fullgraph", "--batch-size", "3"]
    )
    config = config_from_args(args)
    assert config == BenchmarkConfig(
        layers="8,8", variants=["eager", "aot_eager"], fullgraph=True, batch_size=3
    )
    args = build_parser().parse_args(["run", "--no-fullgraph"])
    assert config_from_args(args).fullgraph is False


def test_config_file_then_flags(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"layers": "8,8", "iterations": 5, "repeats": 4}))
    args = parse("--iterations", "7")
    args.config = path
    config = config_from_args(args, Extended)
    assert (config.layers, config.iterations, config.repeats) == ("8,8", 7, 4)


def test_config_file_may_be_a_run_json(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"run_id": "x", "config": {"layers": "16,4", "seed": 3}}))
    args = build_parser().parse_args(["run", "--config", str(path)])
    config = config_from_args(args)
    assert (config.layers, config.seed) == ("16,4", 3)


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "cannot read"),
        ('{"layers": ', "is not valid JSON (line 1"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"colour": "red"}', "colour: is not a configuration field"),
    ],
)
def test_config_file_problems(tmp_path, content, words):
    path = tmp_path / "c.json"
    if content is not None:
        path.write_text(content)
    args = build_parser().parse_args(["run", "--config", str(path)])
    with pytest.raises(ConfigError) as info:
        config_from_args(args)
    assert words in str(info.value)
    if content is None or "JSON" in words:
        assert info.value.problems[0].field == "--config"


# -- form ----------------------------------------------------------------------------------
def make_panel(qtbot, config_cls=Extended) -> ConfigPanel:
    panel = ConfigPanel(config_cls=config_cls)
    qtbot.addWidget(panel)
    panel.show()
    return panel


def test_form_has_a_spin_box_for_an_int_field(qtbot):
    panel = make_panel(qtbot)
    spin = panel.widget_for("repeats")
    assert isinstance(spin, QSpinBox)
    assert (spin.minimum(), spin.maximum(), spin.suffix().strip()) == (1, 10, "runs")
    assert spin.value() == 3
    assert spin.toolTip() == "Times to repeat the run."
    labels = [w.text() for w in panel.findChildren(QLabel)]
    assert "Repeats" in labels
    with qtbot.waitSignal(panel.changed):
        spin.setValue(7)
    assert panel.config().repeats == 7
    panel.set_config(Extended(repeats=4))
    assert spin.value() == 4
    assert panel.is_valid()


def test_form_has_a_combo_for_choices_and_a_check_box_for_a_bool(qtbot):
    panel = make_panel(qtbot)
    combo = panel.widget_for("flavour")
    check = panel.widget_for("verbose")
    assert isinstance(combo, QComboBox) and isinstance(check, QCheckBox)
    assert [combo.itemText(i) for i in range(combo.count())] == ["plain", "spicy"]
    assert check.text() == "say more"
    combo.setCurrentText("spicy")
    check.setChecked(True)
    assert (panel.config().flavour, panel.config().verbose) == ("spicy", True)
    panel.set_config(Extended(flavour="plain", verbose=False))
    assert (combo.currentText(), check.isChecked()) == ("plain", False)


def test_form_shows_the_metadata_bounds_problem_under_the_field(qtbot):
    panel = make_panel(qtbot)
    panel.set_config(Extended(flavour="sour"))
    assert panel.widget_for("flavour").currentText() == "sour"
    assert not panel.is_valid()
    assert "must be one of plain, spicy" in panel.error_labels["flavour"].text()


def test_form_round_trips_the_extended_config(qtbot):
    panel = make_panel(qtbot)
    config = Extended(layers="64,10", batch_size=9, variants=["eager"], repeats=9, flavour="spicy", verbose=True)
    panel.set_config(config)
    assert panel.config() == config


def test_form_widgets_by_kind_and_special_widget(qtbot):
    panel = make_panel(qtbot, BenchmarkConfig)
    assert isinstance(panel.widget_for("layers"), QLineEdit)
    assert isinstance(panel.widget_for("variants"), VariantChecklist)
    assert isinstance(panel.widget_for("device"), QComboBox)
    assert isinstance(panel.widget_for("timer"), QComboBox)
    assert isinstance(panel.widget_for("cold_l2"), QCheckBox)
    assert panel.widget_for("seed").maximum() == 2**31 - 1
    assert panel.layers_edit is panel.widget_for("layers")
    with pytest.raises(KeyError):
        panel.widget_for("repeats")


def test_form_has_a_line_edit_for_an_extra_list_field(qtbot):
    Tagged = dataclasses.make_dataclass(
        "Tagged",
        [("tags", list, setting(["a"], label="Tags", help="free-form tags"))],
        bases=(BenchmarkConfig,),
    )
    panel = make_panel(qtbot, Tagged)
    edit = panel.widget_for("tags")
    assert isinstance(edit, QLineEdit) and edit.text() == "a"
    edit.setText("x, y,")
    assert panel.config().tags == ["x", "y"]
    config = config_from_args(parse("--tags", "p,q", config_cls=Tagged), Tagged)
    assert config.tags == ["p", "q"]


def test_dynamic_is_a_three_way_choice_on_the_cli():
    def dynamic(*flags: str) -> str:
        return config_from_args(build_parser().parse_args(["run", *flags])).dynamic

    assert dynamic() == "auto"
    assert [dynamic("--dynamic", word) for word in ("auto", "false", "true")] == ["auto", "false", "true"]
    assert dynamic("--dynamic") == "true"  # the bare flag, as before
    assert dynamic("--dynamic", "--batch-size", "3") == "true"
    assert dynamic("--no-dynamic") == "auto"  # it passed nothing to torch.compile, as auto does
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--dynamic", "sometimes"])


def test_form_offers_dynamic_as_a_choice_and_round_trips_it(qtbot):
    panel = make_panel(qtbot, BenchmarkConfig)
    combo = panel.widget_for("dynamic")
    assert isinstance(combo, QComboBox)
    assert [combo.itemText(k) for k in range(combo.count())] == ["auto", "false", "true"]
    panel.set_config(BenchmarkConfig(dynamic="false"))
    assert panel.config().dynamic == "false"
