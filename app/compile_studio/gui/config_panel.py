"""The configuration form: every BenchmarkConfig field, validated as the user types."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ..config import (
    ACTIVATIONS,
    CACHE_MODES,
    DTYPES,
    MAX_BATCH,
    MAX_ITERATIONS,
    MAX_WARMUP,
    TIMERS,
    WORKLOADS,
    BenchmarkConfig,
    ConfigProblem,
    EnvironmentInfo,
)

#: Presets used when the shipped ``presets.json`` cannot be read.
BUILTIN_PRESETS: list[dict[str, Any]] = [
    {
        "name": "Seed MLP (1024,1024,512,10, batch 256)",
        "config": {"layers": "1024,1024,512,10", "batch_size": 256},
    },
    {"name": "Tiny (64,64,10)", "config": {"layers": "64,64,10", "batch_size": 32}},
    {"name": "Wide (4096,4096,4096)", "config": {"layers": "4096,4096,4096", "batch_size": 256}},
    {
        "name": "Deep (6 × 1024)",
        "config": {"layers": "1024,1024,1024,1024,1024,1024,10", "batch_size": 256},
    },
]

CUSTOM_PRESET = "Custom"

#: Variants offered before the worker has said which ones the installed torch has.
FALLBACK_VARIANTS = ("eager", "default", "reduce-overhead", "max-autotune", "aot_eager")

_ERROR_STYLE = "color: #B00020;"


def load_presets() -> list[dict[str, Any]]:
    """The shipped presets, or the built-in ones when none can be read."""
    try:
        from ..resources_path import load_presets as load_shipped

        presets = load_shipped()
    except (ImportError, OSError, ValueError, KeyError, TypeError):
        return [dict(p) for p in BUILTIN_PRESETS]
    return presets or [dict(p) for p in BUILTIN_PRESETS]


class ConfigPanel(QWidget):
    """A form for one :class:`BenchmarkConfig` with an inline message under each bad field.

    ``changed`` fires on every edit. :meth:`problems` lists what keeps the
    configuration from running (checked against the machine once
    :meth:`set_environment` has been called).
    """

    changed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._env: EnvironmentInfo | None = None
        self._updating = False
        self._problems: list[ConfigProblem] = []
        self.presets = load_presets()
        defaults = BenchmarkConfig()

        self.preset_combo = QComboBox()
        self.preset_combo.addItem(CUSTOM_PRESET)
        for preset in self.presets:
            self.preset_combo.addItem(preset["name"])
            if preset.get("description"):
                self.preset_combo.setItemData(
                    self.preset_combo.count() - 1, preset["description"], Qt.ItemDataRole.ToolTipRole
                )
        self.layers_edit = QLineEdit()
        self.layers_edit.setPlaceholderText("input width, then each layer's width: 1024,1024,512,10")
        self.layers_edit.setToolTip(
            "The MLP: the input width, then the output width of each Linear layer."
        )
        self.activation_combo = _combo(ACTIVATIONS)
        self.batch_spin = _spin(1, MAX_BATCH, " samples")
        self.dtype_combo = _combo(DTYPES)
        self.device_combo = _combo(("auto",))
        self.device_combo.setToolTip("Devices the worker found (filled in once it has answered).")
        self.workload_combo = _combo(WORKLOADS)
        self.variants_list = QListWidget()
        self.variants_list.setToolTip(
            "eager is the baseline; each other entry is a torch.compile mode or backend."
        )
        self.variants_list.setMaximumHeight(150)
        self.fullgraph_check = QCheckBox("fullgraph (fail on graph breaks)")
        self.dynamic_check = QCheckBox("dynamic shapes")
        self.iterations_spin = _spin(1, MAX_ITERATIONS, " calls")
        self.warmup_spin = _spin(0, MAX_WARMUP, " calls")
        self.timer_combo = _combo(TIMERS)
        self.interleave_check = QCheckBox("interleave variants in blocks")
        self.interleave_block_spin = _spin(1, 100_000, " calls")
        self.seed_spin = _spin(0, 2**31 - 1, "")
        self.cache_combo = _combo(CACHE_MODES)
        self.cache_combo.setToolTip(
            "warm: the normal Inductor cache; cold: a fresh cache for this run (honest compile time)."
        )
        self.cold_l2_check = QCheckBox("flush L2 between calls")
        self.label_edit = QLineEdit()
        self.label_edit.setPlaceholderText("optional name for this run")

        self.error_labels: dict[str, QLabel] = {}
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        rows: list[tuple[str, str, QWidget]] = [
            ("Preset", "preset", self.preset_combo),
            ("Layer sizes", "layers", self.layers_edit),
            ("Activation", "activation", self.activation_combo),
            ("Batch", "batch_size", self.batch_spin),
            ("Data type", "dtype", self.dtype_combo),
            ("Device", "device", self.device_combo),
            ("Workload", "workload", self.workload_combo),
            ("Variants", "variants", self.variants_list),
            ("Compile", "fullgraph", self.fullgraph_check),
            ("", "dynamic", self.dynamic_check),
            ("Iterations", "iterations", self.iterations_spin),
            ("Warm-up", "warmup", self.warmup_spin),
            ("Timer", "timer", self.timer_combo),
            ("Interleave", "interleave", self.interleave_check),
            ("Block", "interleave_block", self.interleave_block_spin),
            ("Seed", "seed", self.seed_spin),
            ("Compile cache", "compile_cache", self.cache_combo),
            ("Cache", "cold_l2", self.cold_l2_check),
            ("Label", "label", self.label_edit),
        ]
        for text, field_name, widget in rows:
            form.addRow(text, self._with_error_label(field_name, widget))
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addLayout(form)
        outer.addStretch(1)

        self._set_variant_choices(list(FALLBACK_VARIANTS))
        self.set_config(defaults)
        self._connect()

    # -- building -------------------------------------------------------------
    def _with_error_label(self, field_name: str, widget: QWidget) -> QWidget:
        box = QWidget()
        lay = QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(1)
        lay.addWidget(widget)
        label = QLabel()
        label.setObjectName(f"error_{field_name}")
        label.setStyleSheet(_ERROR_STYLE)
        label.setWordWrap(True)
        label.hide()
        lay.addWidget(label)
        self.error_labels[field_name] = label
        return box

    def _connect(self) -> None:
        self.preset_combo.currentIndexChanged.connect(self._preset_chosen)
        self.layers_edit.textChanged.connect(self._edited)
        self.batch_spin.valueChanged.connect(self._edited)
        for combo in (
            self.activation_combo,
            self.dtype_combo,
            self.device_combo,
            self.workload_combo,
            self.timer_combo,
            self.cache_combo,
        ):
            combo.currentIndexChanged.connect(self._edited)
        for spin in (
            self.iterations_spin,
            self.warmup_spin,
            self.interleave_block_spin,
            self.seed_spin,
        ):
            spin.valueChanged.connect(self._edited)
        for check in (
            self.fullgraph_check,
            self.dynamic_check,
            self.interleave_check,
            self.cold_l2_check,
        ):
            check.toggled.connect(self._edited)
        self.variants_list.itemChanged.connect(self._edited)
        self.label_edit.textChanged.connect(self._edited)

    def _set_variant_choices(self, names: list[str], checked: list[str] | None = None) -> None:
        if checked is None:
            checked = self._checked_variants()
        ordered = list(dict.fromkeys(["eager", *names, *checked]))
        blocked = self.variants_list.blockSignals(True)
        self.variants_list.clear()
        for name in ordered:
            item = QListWidgetItem(name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if name in checked else Qt.CheckState.Unchecked)
            self.variants_list.addItem(item)
        self.variants_list.blockSignals(blocked)

    def _checked_variants(self) -> list[str]:
        out = []
        for i in range(self.variants_list.count()):
            item = self.variants_list.item(i)
            if item.checkState() == Qt.CheckState.Checked:
                out.append(item.text())
        return out

    # -- events -------------------------------------------------------------------
    def _preset_chosen(self, index: int) -> None:
        if self._updating or index <= 0:
            return
        preset = self.presets[index - 1]
        current = self.config().to_dict()
        current.update(
            {k: v for k, v in preset["config"].items() if k in current}
        )
        try:
            config = BenchmarkConfig.from_dict(current)
        except ValueError:
            return
        self.set_config(config)

    def _edited(self, *_: object) -> None:
        if self._updating:
            return
        self._sync_preset()
        self._revalidate()
        self.changed.emit()

    def _sync_preset(self) -> None:
        """Show the preset the fields match, or Custom."""
        current = self.config().to_dict()
        index = 0
        for i, preset in enumerate(self.presets, start=1):
            if all(current.get(k) == v for k, v in preset["config"].items()):
                index = i
                break
        blocked = self.preset_combo.blockSignals(True)
        self.preset_combo.setCurrentIndex(index)
        self.preset_combo.blockSignals(blocked)

    def _revalidate(self) -> None:
        self._problems = self.config().problems(self._env)
        by_field: dict[str, list[str]] = {}
        for p in self._problems:
            by_field.setdefault(p.field, []).append(p.message)
        for field_name, label in self.error_labels.items():
            messages = by_field.get(field_name)
            if messages:
                label.setText("\n".join(messages))
                label.show()
            else:
                label.clear()
                label.hide()
        # a problem with a field that has no widget of its own still shows
        orphan = [p for p in self._problems if p.field not in self.error_labels]
        if orphan:
            label = self.error_labels["label"]
            label.setText("\n".join(str(p) for p in orphan))
            label.show()

    # -- public API ------------------------------------------------------------------
    def config(self) -> BenchmarkConfig:
        """The configuration the form shows now (may have problems)."""
        return BenchmarkConfig(
            layers=self.layers_edit.text().strip(),
            activation=self.activation_combo.currentText(),
            batch_size=self.batch_spin.value(),
            dtype=self.dtype_combo.currentText(),
            device=self.device_combo.currentText(),
            workload=self.workload_combo.currentText(),
            variants=self._checked_variants(),
            fullgraph=self.fullgraph_check.isChecked(),
            dynamic=self.dynamic_check.isChecked(),
            iterations=self.iterations_spin.value(),
            warmup=self.warmup_spin.value(),
            timer=self.timer_combo.currentText(),
            interleave=self.interleave_check.isChecked(),
            interleave_block=self.interleave_block_spin.value(),
            seed=self.seed_spin.value(),
            compile_cache=self.cache_combo.currentText(),
            cold_l2=self.cold_l2_check.isChecked(),
            label=self.label_edit.text().strip(),
        )

    def set_config(self, config: BenchmarkConfig) -> None:
        """Show ``config`` in the form (values the form cannot offer are added as choices)."""
        self._updating = True
        try:
            self.layers_edit.setText(config.layers)
            _set_combo(self.activation_combo, config.activation)
            self.batch_spin.setValue(_clamp(config.batch_size, self.batch_spin))
            _set_combo(self.dtype_combo, config.dtype)
            _set_combo(self.device_combo, config.device)
            _set_combo(self.workload_combo, config.workload)
            names = [self.variants_list.item(i).text() for i in range(self.variants_list.count())]
            self._set_variant_choices(names, checked=list(config.variants))
            self.fullgraph_check.setChecked(config.fullgraph)
            self.dynamic_check.setChecked(config.dynamic)
            self.iterations_spin.setValue(_clamp(config.iterations, self.iterations_spin))
            self.warmup_spin.setValue(_clamp(config.warmup, self.warmup_spin))
            _set_combo(self.timer_combo, config.timer)
            self.interleave_check.setChecked(config.interleave)
            self.interleave_block_spin.setValue(
                _clamp(config.interleave_block, self.interleave_block_spin)
            )
            self.seed_spin.setValue(_clamp(config.seed, self.seed_spin))
            _set_combo(self.cache_combo, config.compile_cache)
            self.cold_l2_check.setChecked(config.cold_l2)
            self.label_edit.setText(config.label)
        finally:
            self._updating = False
        self._sync_preset()
        self._revalidate()
        self.changed.emit()

    def set_environment(self, env: EnvironmentInfo) -> None:
        """Offer the devices and compile variants the worker reported; validate against them."""
        self._env = env
        current = self.config()
        self._updating = True
        try:
            blocked = self.device_combo.blockSignals(True)
            self.device_combo.clear()
            self.device_combo.addItems(list(dict.fromkeys(["auto", *env.devices])))
            _set_combo(self.device_combo, current.device)
            self.device_combo.blockSignals(blocked)
            self._set_variant_choices(
                ["eager", *env.compile_modes, *env.compile_backends], checked=current.variants
            )
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
        return [self.variants_list.item(i).text() for i in range(self.variants_list.count())]

    def set_variant_checked(self, name: str, checked: bool) -> None:
        for i in range(self.variants_list.count()):
            item = self.variants_list.item(i)
            if item.text() == name:
                item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
                return
        raise KeyError(name)


def _combo(items: tuple[str, ...] | list[str]) -> QComboBox:
    combo = QComboBox()
    combo.addItems(list(items))
    return combo


def _spin(low: int, high: int, suffix: str) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setSuffix(suffix)
    spin.setGroupSeparatorShown(True)
    spin.setAccelerated(True)
    return spin


def _clamp(value: int, spin: QSpinBox) -> int:
    return max(spin.minimum(), min(spin.maximum(), int(value)))


def _set_combo(combo: QComboBox, value: str) -> None:
    """Select ``value``, adding it first when the combo does not offer it."""
    index = combo.findText(value)
    if index < 0:
        combo.addItem(value)
        index = combo.count() - 1
    combo.setCurrentIndex(index)
