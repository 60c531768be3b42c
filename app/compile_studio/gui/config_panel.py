"""The configuration form: one widget per config field, made from the field's metadata.

A field's kind picks its widget (choices: a combo box, int: a spin box with
the field's bounds and unit, bool: a check box, text: a line edit); a field
whose metadata names a ``widget`` gets that special one (``variants``: a
checklist, ``device``: the devices the worker found); the widgets are made in
field_editors.py. Every edit is validated at once and each problem shows under
its field, in a line kept for it so the rows below never move when a message
comes or goes.

The fields are in two groups: the model (its kind, then only the fields that
kind uses: :func:`field_model_kinds`) and the measurement (every other
field). A field hidden for the kind chosen keeps its value, and is in every
configuration the form gives.
"""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ..core.config import (
    AS_GIVEN,
    BenchmarkConfig,
    ConfigProblem,
    EnvironmentInfo,
    FieldSpec,
    config_fields,
)
from .factory_fields import FactoryBatch
from .field_editors import CUDA_ONLY_VARIANTS as CUDA_ONLY_VARIANTS  # where it was first
from .field_editors import FALLBACK_VARIANTS as FALLBACK_VARIANTS  # where it was first
from .field_editors import VARIANT_HELP as VARIANT_HELP  # where it was first
from .field_editors import FieldEditor as FieldEditor  # where it was first
from .field_editors import VariantChecklist as VariantChecklist  # where it was first
from .field_editors import make_editor
from .field_editors import variant_tooltip as variant_tooltip  # where it was first

log = logging.getLogger(__name__)

CUSTOM_PRESET = "Custom"

_ERROR_STYLE = "color: #B00020;"

#: The field that picks the model kind (the form groups the others by it).
MODEL_FIELD = "model"


def field_model_kinds(spec: FieldSpec) -> tuple[str, ...] | None:
    """The model kinds ``spec`` applies to; None: every kind (a field of the measurement)."""
    return spec.model_kinds or None


def load_presets(
    config_cls: type[BenchmarkConfig] = BenchmarkConfig,
) -> tuple[list[dict[str, Any]], str | None]:
    """The shipped presets and None, or just the default config and why the file was unreadable."""
    try:
        from ..core.resources_path import load_presets as load_shipped

        presets = load_shipped()
        if not presets:
            raise ValueError("presets.json lists no presets")
    except (ImportError, OSError, ValueError, KeyError, TypeError) as exc:
        problem = f"the shipped presets could not be read ({exc}); only the default is offered"
        log.warning(problem)
        default = {"name": "Default", "description": "", "default": True}
        return [{**default, "config": config_cls().to_dict()}], problem
    return presets, None


class ConfigPanel(QWidget):
    """A form for one :class:`BenchmarkConfig` (or subclass) with an inline message under each bad field.

    ``changed`` fires on every edit. :meth:`problems` lists what keeps the
    configuration from running (checked against the machine once
    :meth:`set_environment` has been called). :meth:`widget_for` finds a
    field's widget by the field's name.
    """

    changed = Signal()

    def __init__(
        self,
        parent: QWidget | None = None,
        config_cls: type[BenchmarkConfig] = BenchmarkConfig,
    ):
        super().__init__(parent)
        self._config_cls = config_cls
        self._env: EnvironmentInfo | None = None
        self._updating = False
        #: the model kind the form showed last (a change to or from custom moves the dtype)
        self._model_kind: str | None = None
        self._problems: list[ConfigProblem] = []
        self.presets, self.preset_problem = load_presets(config_cls)

        self.preset_combo = QComboBox()
        # a long preset name is cut in the box (the list shows it whole): it sets no least width
        self.preset_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.preset_combo.setMinimumContentsLength(16)
        self.preset_combo.addItem(CUSTOM_PRESET)
        for preset in self.presets:
            self.preset_combo.addItem(preset["name"])
            if preset.get("description"):
                self.preset_combo.setItemData(
                    self.preset_combo.count() - 1, preset["description"], Qt.ItemDataRole.ToolTipRole
                )
        self.preset_combo.setToolTip(
            "A ready configuration to start from (each one's tooltip says what it measures); "
            "Custom when the fields match no preset"
        )
        self.error_labels: dict[str, QLabel] = {}
        self._editors: dict[str, FieldEditor] = {}
        #: field name -> the model kinds it applies to (only the model-specific fields)
        self._kinds_of: dict[str, tuple[str, ...]] = {}
        #: field name -> (its form, the row's field widget): to show or hide the row
        self._rows: dict[str, tuple[QFormLayout, QWidget]] = {}
        specs = config_fields(config_cls)
        grouped = any(spec.name == MODEL_FIELD for spec in specs)
        top = _form()
        top.addRow("Preset", self._with_error_label("preset", self.preset_combo, keep_line=False))
        model_form, run_form = (_form(), _form()) if grouped else (top, top)
        if grouped:  # the kind picker heads its group: the fields below it follow its choice
            specs = sorted(specs, key=lambda spec: spec.name != MODEL_FIELD)
        for spec in specs:
            kinds = field_model_kinds(spec) if grouped else None
            form = model_form if spec.name == MODEL_FIELD or kinds is not None else run_form
            editor = make_editor(spec, self._edited)
            editor.widget.setObjectName(f"field_{spec.name}")
            tip = _sentence(spec.help)
            editor.widget.setToolTip(tip)
            label = QLabel(spec.label)
            label.setToolTip(tip)
            label.setBuddy(editor.widget)
            box = self._with_error_label(spec.name, editor.widget, keep_line=spec.kind != "bool")
            form.addRow(label, box)
            self._rows[spec.name] = (form, box)
            self._editors[spec.name] = editor
            if kinds is not None:
                self._kinds_of[spec.name] = kinds
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addLayout(top)
        if grouped:
            self.model_group = QGroupBox("Model")
            self.model_group.setObjectName("modelGroup")
            self.model_group.setLayout(model_form)
            self.run_group = QGroupBox("Measurement")
            self.run_group.setObjectName("runGroup")
            self.run_group.setLayout(run_form)
            outer.addWidget(self.model_group)
            outer.addWidget(self.run_group)
        outer.addStretch(1)
        #: the Batch field while a custom model's factory decides the batch (None: no such fields)
        self.factory_batch: FactoryBatch | None = None
        if grouped and "batch_size" in self._editors:
            spin = self._editors["batch_size"].widget
            assert isinstance(spin, QSpinBox)  # an int field's editor
            self.factory_batch = FactoryBatch(spin, self._rows["batch_size"][1])

        self.preset_combo.currentIndexChanged.connect(self._preset_chosen)
        self.set_config(config_cls())

    def _with_error_label(self, field_name: str, widget: QWidget, keep_line: bool = True) -> QWidget:
        """``widget`` above the line its problems show in.

        ``keep_line``: the line keeps its height while empty, so a message coming
        or going moves no row below it (a check box, which cannot hold a bad
        value, has no line kept).
        """
        box = QWidget()
        lay = QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(1)
        lay.addWidget(widget)
        label = QLabel()
        label.setObjectName(f"error_{field_name}")
        label.setStyleSheet(_ERROR_STYLE)
        label.setWordWrap(True)
        font = label.font()
        if font.pointSizeF() > 0:
            font.setPointSizeF(font.pointSizeF() * 0.9)
            label.setFont(font)
        if keep_line:
            policy = label.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            label.setSizePolicy(policy)
            label.setMinimumHeight(label.fontMetrics().height())
        label.hide()
        lay.addWidget(label)
        self.error_labels[field_name] = label
        return box

    # -- events -------------------------------------------------------------------
    def _preset_chosen(self, index: int) -> None:
        if self._updating or index <= 0:
            return
        preset = self.presets[index - 1]
        current = self.config().to_dict()
        current.update({k: v for k, v in self._preset_values(preset).items() if k in current})
        if current.get(MODEL_FIELD) != "custom" and current.get("dtype") == AS_GIVEN:
            current["dtype"] = self._config_cls().dtype  # as given is a custom model's
        try:
            config = self._config_cls.from_dict(current)
        except ValueError:
            return
        self.set_config(config)

    def _edited(self, *_: object) -> None:
        if self._updating:
            return
        self._follow_model_kind()
        self._show_fields_of_kind()
        self.refresh_factory_fields()
        self._sync_preset()
        self._revalidate()
        self.changed.emit()

    def _follow_model_kind(self) -> None:
        """A model kind chosen as custom runs as given; one leaving custom takes the default dtype."""
        model, dtype = self._editors.get("model"), self._editors.get("dtype")
        if model is None or dtype is None:
            return
        kind, previous = model.get(), self._model_kind
        self._model_kind = kind
        if kind == previous or previous is None:
            return
        self._updating = True
        try:
            if kind == "custom":
                dtype.set(AS_GIVEN)
            elif dtype.get() == AS_GIVEN:
                dtype.set(self._config_cls().dtype)
        finally:
            self._updating = False

    def refresh_factory_fields(self) -> None:
        """Show the fields a custom model's factory decides as its values, read-only (see
        :mod:`factory_fields`); give them back to the form otherwise."""
        if self.factory_batch is None:
            return
        updating, self._updating = self._updating, True
        try:
            self.factory_batch.update(self.config())
        finally:
            self._updating = updating

    def _preset_values(self, preset: dict[str, Any]) -> dict[str, Any]:
        """A preset's fields; one that names no model kind is of the default kind (its sizes are)."""
        values = dict(preset["config"])
        if MODEL_FIELD in self._editors:
            values.setdefault(MODEL_FIELD, getattr(self._config_cls(), MODEL_FIELD))
        return values

    def _show_fields_of_kind(self) -> None:
        """Show the model-specific fields of the kind chosen; hide (not clear) the others."""
        model = self._editors.get(MODEL_FIELD)
        if model is None:
            return
        kind = model.get()
        for name, kinds in self._kinds_of.items():
            form, box = self._rows[name]
            form.setRowVisible(box, kind in kinds)

    def is_field_shown(self, field_name: str) -> bool:
        """Whether the form shows ``field_name`` for the model kind chosen (KeyError: no such field)."""
        if field_name not in self._editors:
            raise KeyError(field_name)
        kinds = self._kinds_of.get(field_name)
        model = self._editors.get(MODEL_FIELD)
        return kinds is None or model is None or model.get() in kinds

    def shown_fields(self) -> list[str]:
        """The fields the form shows now, in declaration order."""
        return [name for name in self._editors if self.is_field_shown(name)]

    def _sync_preset(self) -> None:
        """Show the preset the fields match, or Custom."""
        current = self.config().to_dict()
        index = 0
        for i, preset in enumerate(self.presets, start=1):
            if all(current.get(k) == v for k, v in self._preset_values(preset).items()):
                index = i
                break
        blocked = self.preset_combo.blockSignals(True)
        self.preset_combo.setCurrentIndex(index)
        self.preset_combo.blockSignals(blocked)

    def _revalidate(self) -> None:
        config = self.config()
        self._problems = config.problems(self._env)
        if "variants" in self._editors:
            device = self._env.resolve_device(config.device) if self._env is not None else (
                None if config.device == "auto" else config.device
            )
            self.variants_list.set_device(device)
        by_field: dict[str, list[str]] = {}
        if self.preset_problem:
            by_field["preset"] = [self.preset_problem]
        for p in self._problems:
            if p.field in self._editors and not self.is_field_shown(p.field):
                # a field hidden for this model kind: said under the model kind, by its label
                name = next(s.label for s in config_fields(self._config_cls) if s.name == p.field)
                by_field.setdefault(MODEL_FIELD, []).append(
                    f"{name} (not used by this model kind, hidden): {p.message}"
                )
                continue
            by_field.setdefault(p.field, []).append(p.message)
        for field_name, label in self.error_labels.items():
            messages = by_field.get(field_name)
            if messages:
                label.setText("\n".join(messages))
                label.show()
            else:
                label.clear()
                label.hide()
        # a problem with a field that has no widget of its own shows under the last field
        orphan = [p for p in self._problems if p.field not in self.error_labels]
        if orphan:
            label = self.error_labels[next(n for n in reversed(self._editors) if self.is_field_shown(n))]
            label.setText("\n".join(filter(None, [label.text(), *(str(p) for p in orphan)])))
            label.show()

    # -- public API ------------------------------------------------------------------
    def widget_for(self, field_name: str) -> QWidget:
        """The widget that edits the field ``field_name`` (KeyError when there is none)."""
        return self._editors[field_name].widget

    def config(self) -> BenchmarkConfig:
        """The configuration the form shows now (may have problems)."""
        values = {name: e.get() for name, e in self._editors.items()}
        if self.factory_batch is not None and self.factory_batch.kept is not None:
            values["batch_size"] = self.factory_batch.kept  # the field shows the factory's
        return self._config_cls(**values)

    def set_config(self, config: BenchmarkConfig) -> None:
        """Show ``config`` in the form (values the form cannot offer are added as choices)."""
        self._updating = True
        try:
            if self.factory_batch is not None:
                self.factory_batch.forget()
            for name, editor in self._editors.items():
                editor.set(getattr(config, name))
        finally:
            self._updating = False
        self._model_kind = getattr(config, "model", None)
        self._show_fields_of_kind()
        self.refresh_factory_fields()
        self._sync_preset()
        self._revalidate()
        self.changed.emit()

    def set_environment(self, env: EnvironmentInfo) -> None:
        """Offer the devices and compile variants the worker reported; validate against them."""
        self._env = env
        self._updating = True
        try:
            for editor in self._editors.values():
                if editor.set_environment is not None:
                    editor.set_environment(env)
        finally:
            self._updating = False
        self._revalidate()
        self.changed.emit()

    @property
    def environment(self) -> EnvironmentInfo | None:
        return self._env

    def problems(self) -> list[ConfigProblem]:
        """What keeps the shown configuration from running (empty when it can run)."""
        return list(self._problems)

    def is_valid(self) -> bool:
        return not self._problems

    def variant_choices(self) -> list[str]:
        return self.variants_list.choices()

    def set_variant_checked(self, name: str, checked: bool) -> None:
        self.variants_list.set_checked(name, checked)

    # -- the widgets other code reaches by name -----------------------------------------
    @property
    def variants_list(self) -> VariantChecklist:
        return self.widget_for("variants")  # type: ignore[return-value]

    @property
    def layers_edit(self) -> QLineEdit:
        return self.widget_for("layers")  # type: ignore[return-value]

    @property
    def device_combo(self) -> QComboBox:
        return self.widget_for("device")  # type: ignore[return-value]

    @property
    def batch_spin(self) -> QSpinBox:
        return self.widget_for("batch_size")  # type: ignore[return-value]

    @property
    def iterations_spin(self) -> QSpinBox:
        return self.widget_for("iterations")  # type: ignore[return-value]

    @property
    def warmup_spin(self) -> QSpinBox:
        return self.widget_for("warmup")  # type: ignore[return-value]


def _form() -> QFormLayout:
    form = QFormLayout()
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return form


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("." if text and not text.endswith(".") else "")
