"""The form's widget for each kind of field (check box, spin box, combo box, line edit, device list,
variants checklist), and how each reads and writes its field's value."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QBrush, QColor, QResizeEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSizePolicy,
    QSpinBox,
    QStyle,
    QWidget,
)

from ..core.config import EnvironmentInfo, FieldSpec
from ..core.variants import AA_CONTROL
from ..results.report.formatting import plural_word

#: Variants offered before the worker has said which ones the installed torch has.
FALLBACK_VARIANTS = ("eager", "default", "reduce-overhead", "max-autotune", "aot_eager")
#: The widest range a spin box takes (a C int).
_SPIN_LIMITS = (-(2**31), 2**31 - 1)


@dataclass
class FieldEditor:
    """The widget showing one field, how to read and write its value, and its environment hook."""

    widget: QWidget
    get: Callable[[], Any]
    set: Callable[[Any], None]
    set_environment: Callable[[EnvironmentInfo], None] | None = None


#: One tooltip per variant: what it runs and when to choose it.
VARIANT_HELP = {
    "eager": "The model as written, without torch.compile: the baseline every speedup is measured against.",
    AA_CONTROL: "A/A control: a second, independent copy of eager measured like the others. Its "
    "'speedup' should be 1.00; how far it lands from 1.00 is this machine's noise floor, and "
    "differences smaller than that are reported as 'cannot tell'.",
    "default": "torch.compile with Inductor's default mode: fused kernels, a moderate compile time. "
    "The first thing to try.",
    "reduce-overhead": "Inductor plus CUDA graphs: replays whole graphs to cut per-call launch "
    "overhead; helps small batches on a GPU. CUDA only: on another device there are no graphs "
    "to replay.",
    "max-autotune": "Inductor that benchmarks several kernel choices (and uses CUDA graphs on a "
    "GPU): the slowest compile, often the fastest calls on a GPU.",
    "max-autotune-no-cudagraphs": "max-autotune without CUDA graphs: the autotuned kernels alone.",
    "lite": "Inductor's lite mode: a light compile that skips most fusion and autotuning; a quick "
    "check of what compiling costs and gives.",
    "inductor": "The Inductor backend chosen by name (the same as the default mode).",
    "cudagraphs": "CUDA graphs only, no Inductor kernels: the launch-overhead saving alone. "
    "CUDA only: on another device nothing is captured.",
    "aot_eager": "AOTAutograd tracing with eager kernels: compiles fast, gains nothing by itself; "
    "separates a problem of tracing from one of Inductor.",
}
#: Variants that only do what their name says on a CUDA device.
CUDA_ONLY_VARIANTS = ("reduce-overhead", "cudagraphs")


def variant_tooltip(name: str, device: str | None = None) -> str:
    """What variant ``name`` runs; on a non-CUDA ``device``, says when it cannot apply there."""
    text = VARIANT_HELP.get(name, f"The torch.compile mode or backend {name!r}, as this torch offers it.")
    if device is not None and not device.startswith("cuda") and name in CUDA_ONLY_VARIANTS:
        text = f"Needs a CUDA device: on {device} it measures no CUDA graphs.\n\n" + text
    return text


class VariantChecklist(QListWidget):
    """A check box per variant: eager and the compile modes and backends on offer.

    Each variant has a tooltip saying what it is; with :meth:`set_device` on a
    device other than CUDA, the CUDA-only ones are greyed and say so.
    """

    _device: str | None = None

    def set_device(self, device: str | None) -> None:
        """Mark the variants for ``device`` (None: unknown, nothing marked)."""
        self._device = device
        for i in range(self.count()):
            self._mark(self.item(i))

    def cuda_only_marked(self) -> list[str]:
        """The variants marked as unable to apply on the device set."""
        return [
            self.item(i).text()
            for i in range(self.count())
            if self.item(i).data(Qt.ItemDataRole.ForegroundRole) is not None
        ]

    def _mark(self, item: QListWidgetItem) -> None:
        name = item.text()
        item.setToolTip(variant_tooltip(name, self._device))
        off = (
            self._device is not None
            and not self._device.startswith("cuda")
            and name in CUDA_ONLY_VARIANTS
        )
        item.setData(Qt.ItemDataRole.ForegroundRole, QBrush(QColor("#888888")) if off else None)

    def choices(self) -> list[str]:
        return [self.item(i).text() for i in range(self.count())]

    def checked(self) -> list[str]:
        return [
            self.item(i).text()
            for i in range(self.count())
            if self.item(i).checkState() == Qt.CheckState.Checked
        ]

    def set_choices(self, names: list[str], checked: list[str] | None = None) -> None:
        """Offer eager, ``names`` and any checked name not among them; tick ``checked``."""
        if checked is None:
            checked = self.checked()
        blocked = self.blockSignals(True)
        self.clear()
        for name in dict.fromkeys(["eager", *names, *checked]):
            item = QListWidgetItem(name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if name in checked else Qt.CheckState.Unchecked)
            self._mark(item)
            self.addItem(item)
        self.blockSignals(blocked)

    def set_checked(self, name: str, checked: bool) -> None:
        for i in range(self.count()):
            if self.item(i).text() == name:
                state = Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked
                self.item(i).setCheckState(state)
                return
        raise KeyError(name)


# -- one factory per widget kind ----------------------------------------------------
class CaptionCheckBox(QCheckBox):
    """A check box whose caption ends in "…" where the form is narrower than it (its tooltip
    says it whole): a long caption never sets the form's least width."""

    def __init__(self, caption: str, parent: QWidget | None = None) -> None:
        super().__init__(caption, parent)
        self.caption = caption
        policy = self.sizePolicy()
        policy.setHorizontalPolicy(QSizePolicy.Policy.Preferred)  # may be narrower than its caption
        self.setSizePolicy(policy)

    def _indicator(self) -> int:
        style = self.style()
        return (
            style.pixelMetric(QStyle.PixelMetric.PM_IndicatorWidth, None, self)
            + style.pixelMetric(QStyle.PixelMetric.PM_CheckBoxLabelSpacing, None, self) + 6
        )

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        """As wide as the whole caption."""
        return QSize(self._indicator() + self.fontMetrics().horizontalAdvance(self.caption), super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        """The box and a few letters of the caption."""
        least = self._indicator() + self.fontMetrics().horizontalAdvance(self.caption[:8] + "…")
        return QSize(min(least, self.sizeHint().width()), super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        """The caption cut to the width the box has."""
        super().resizeEvent(event)
        room = max(10, self.width() - self._indicator())
        self.setText(self.fontMetrics().elidedText(self.caption, Qt.TextElideMode.ElideRight, room))


def bool_editor(spec: FieldSpec, edited: Callable[..., None]) -> FieldEditor:
    check = CaptionCheckBox(spec.caption)
    check.toggled.connect(edited)
    return FieldEditor(check, check.isChecked, lambda v: check.setChecked(bool(v)))


def int_editor(spec: FieldSpec, edited: Callable[..., None]) -> FieldEditor:
    spin = QSpinBox()
    low = _SPIN_LIMITS[0] if spec.minimum is None else max(_SPIN_LIMITS[0], spec.minimum)
    high = _SPIN_LIMITS[1] if spec.maximum is None else min(_SPIN_LIMITS[1], spec.maximum)
    spin.setRange(low, high)
    unit = spec.unit or ""
    # a count ("calls", "rounds", "samples") reads "1 round"; a unit of measure ("ms") stays
    singular = unit[:-1] if len(unit) > 2 and unit.isalpha() and unit.endswith("s") else unit

    def suffix(value: int) -> None:
        spin.setSuffix(f" {plural_word(value, singular, unit)}" if unit else "")

    spin.setGroupSeparatorShown(True)
    spin.setAccelerated(True)
    spin.valueChanged.connect(suffix)
    spin.valueChanged.connect(edited)
    suffix(spin.value())

    def set_value(value: Any) -> None:
        spin.setValue(max(spin.minimum(), min(spin.maximum(), int(value))))

    return FieldEditor(spin, spin.value, set_value)


def choice_editor(spec: FieldSpec, edited: Callable[..., None]) -> FieldEditor:
    combo = QComboBox()
    for value in spec.choices:
        combo.addItem(spec.choice_label(value), value)
    combo.currentIndexChanged.connect(edited)

    def get() -> str:
        value = combo.currentData()
        return value if isinstance(value, str) else combo.currentText()

    return FieldEditor(combo, get, lambda v: set_choice(combo, str(v)))


def text_editor(spec: FieldSpec, edited: Callable[..., None]) -> FieldEditor:
    edit = QLineEdit()
    edit.setPlaceholderText(spec.placeholder)
    edit.textChanged.connect(edited)
    return FieldEditor(edit, lambda: edit.text().strip(), lambda v: edit.setText(str(v)))


def list_editor(spec: FieldSpec, edited: Callable[..., None]) -> FieldEditor:
    edit = QLineEdit()
    edit.setPlaceholderText(spec.placeholder or "comma-separated names")
    edit.textChanged.connect(edited)
    return FieldEditor(
        edit,
        lambda: [v.strip() for v in edit.text().split(",") if v.strip()],
        lambda v: edit.setText(", ".join(v)),
    )


def device_editor(spec: FieldSpec, edited: Callable[..., None]) -> FieldEditor:
    combo = QComboBox()
    combo.addItem("auto")
    combo.currentIndexChanged.connect(edited)

    def offer(env: EnvironmentInfo) -> None:
        current = combo.currentText()
        blocked = combo.blockSignals(True)
        combo.clear()
        combo.addItems(list(dict.fromkeys(["auto", *env.devices])))
        set_combo(combo, current)
        combo.blockSignals(blocked)

    return FieldEditor(combo, combo.currentText, lambda v: set_combo(combo, str(v)), offer)


def variants_editor(spec: FieldSpec, edited: Callable[..., None]) -> FieldEditor:
    checklist = VariantChecklist()
    checklist.setMaximumHeight(150)
    checklist.set_choices(list(FALLBACK_VARIANTS), checked=list(spec.default))
    checklist.itemChanged.connect(edited)

    def offer(env: EnvironmentInfo) -> None:
        checklist.set_choices(["eager", *env.compile_modes, *env.compile_backends])

    return FieldEditor(
        checklist,
        checklist.checked,
        lambda v: checklist.set_choices(checklist.choices(), checked=list(v)),
        offer,
    )


#: The factory of each field kind (or of the special ``widget`` a field names).
EDITORS: dict[str, Callable[[FieldSpec, Callable[..., None]], FieldEditor]] = {
    "bool": bool_editor,
    "int": int_editor,
    "choice": choice_editor,
    "text": text_editor,
    "list": list_editor,
    "device": device_editor,
    "variants": variants_editor,
}


def make_editor(spec: FieldSpec, edited: Callable[..., None]) -> FieldEditor:
    """The editor of ``spec`` (the ``widget`` it names, else its kind's); ``edited`` is called on every edit."""
    return EDITORS[spec.widget or spec.kind](spec, edited)


def set_choice(combo: QComboBox, value: str) -> None:
    """Select the item whose value is ``value``, adding it first when the combo does not offer it."""
    index = combo.findData(value)
    if index < 0:
        combo.addItem(value, value)
        index = combo.count() - 1
    combo.setCurrentIndex(index)


def set_combo(combo: QComboBox, value: str) -> None:
    """Select ``value``, adding it first when the combo does not offer it."""
    index = combo.findText(value)
    if index < 0:
        combo.addItem(value)
        index = combo.count() - 1
    combo.setCurrentIndex(index)
