"""The dialogs that start a job: one shape (:class:`JobDialog`), a sweep's and a shape sweep's fields."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ..core import protocol
from ..core.config import BenchmarkConfig, ConfigError, ConfigProblem, EnvironmentInfo
from ..core.model_specs import LayerSpecError, parse_layer_spec
from ..jobs.shape_sweep_run import parse_batches, shape_request
from ..jobs.sweep_spec import (
    HIDDEN_WIDTH,
    SEQ_LEN,
    SweepSpec,
    swept_fields,
    value_text,
)
from ..results.records.run_result import batch_text
from ..results.report.formatting import plural

#: Values offered for a parameter when the dialog opens.
SUGGESTED_VALUES = {
    "batch_size": "1:1024:x2",
    HIDDEN_WIDTH: "64:1024:x2",
    SEQ_LEN: "32:512:x2",
    "dtype": "fp32,bf16",
    "dynamic": "auto,false,true",
    "workload": "inference,training",
}


def dialog_params(base: BenchmarkConfig) -> list[str]:
    """The parameters the dialog offers for ``base``: the common ones first, ``layer:K`` per layer."""
    common = ["batch_size", HIDDEN_WIDTH, "dtype", "dynamic", "workload"]
    if base.model == "transformer":
        common.insert(2, SEQ_LEN)
    try:
        layers = [f"layer:{k}" for k in range(len(parse_layer_spec(base.layers)))]
    except LayerSpecError:
        layers = []
    rest = [name for name in swept_fields() if name not in common]
    return common + layers + rest


class JobDialog(QDialog):
    """The shape of every dialog that starts a job: what it runs on, its fields, what is wrong as
    typed (or what it will run), and a Run button enabled only when nothing is wrong.

    A kind sets its fields up after ``__init__``, calls :meth:`lay_out`, and
    gives :meth:`job_spec` (the job as typed; raises ConfigError saying what is
    wrong) and :meth:`summary` (what the spec will run, in a few words).
    """

    def __init__(self, title: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.problem_label = QLabel()
        self.problem_label.setWordWrap(True)
        self.problem_label.setTextFormat(Qt.TextFormat.PlainText)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

    def lay_out(self, about: str, rows: list[tuple[str, QWidget]], run_text: str) -> None:
        """The about text, the fields (label, editor) and the buttons, top to bottom; then a first check."""
        text = QLabel(about)
        text.setWordWrap(True)
        text.setTextFormat(Qt.TextFormat.PlainText)
        form = QFormLayout()
        for label, editor in rows:
            form.addRow(label, editor)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText(run_text)
        lay = QVBoxLayout(self)
        lay.addWidget(text)
        lay.addLayout(form)
        lay.addWidget(self.problem_label)
        lay.addWidget(self.buttons)

    def job_spec(self) -> Any:
        raise NotImplementedError

    def summary(self, spec: Any) -> str:
        raise NotImplementedError

    def check(self) -> bool:
        """Show what is wrong (if anything); Run is enabled only when nothing is."""
        try:
            spec = self.job_spec()
        except ConfigError as exc:
            self.problem_label.setText("; ".join(str(p) for p in exc.problems[:4]))
            ok = False
        else:
            self.problem_label.setText(self.summary(spec))
            ok = True
        self.problem_label.setStyleSheet("color: #B00020;" if not ok else "color: #333333;")
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok)
        return ok


class SweepDialog(JobDialog):
    """Asks for the parameter, its values and how many points run at once; checks them as typed."""

    def __init__(self, base: BenchmarkConfig, env: EnvironmentInfo | None = None, parent: QWidget | None = None):
        super().__init__("New sweep", parent)
        self.base = base
        self.env = env
        self.param = QComboBox()
        self.param.addItems(dialog_params(base))
        self.param.setEditable(False)
        self.values = QLineEdit()
        self.values.setPlaceholderText("1,4,16,64 or a range: 1:1024:x2, 64:512:+64")
        self.concurrency = QSpinBox()
        self.concurrency.setRange(1, 16)
        self.concurrency.setToolTip(
            "points run at once; above 1 they share this machine's cores, which changes what they measure"
        )
        self.lay_out(
            f"Base: {base.model_text()} · {batch_text(base, read_factory=True)} · {base.dtype} · "
            f"{', '.join(base.variants)} (the form's configuration)",
            [("Parameter", self.param), ("Values", self.values), ("Points at once", self.concurrency)],
            "Run sweep",
        )
        self.param.currentTextChanged.connect(self._suggest)
        self.values.textChanged.connect(self.check)
        self._suggest(self.param.currentText())

    def _suggest(self, param: str) -> None:
        self.values.setText(SUGGESTED_VALUES.get(param, ""))
        self.check()

    def spec(self) -> SweepSpec:
        """The sweep as typed; raises ConfigError saying what is wrong."""
        text = self.values.text().strip()
        param = self.param.currentText()
        if not text:
            raise ConfigError([ConfigProblem("values", "type the values")])
        is_range = ":" in text and "," not in text and ";" not in text and param not in ("layers", "transformer", "cnn")
        spec = SweepSpec.parse(param, None if is_range else text, text if is_range else None)
        problems = spec.problems(self.base)
        if self.env is not None and not problems:
            for value in spec.values:
                problems.extend(
                    ConfigProblem(p.field, f"{param}={value_text(value)}: {p.message}")
                    for p in spec.point_config(self.base, value).problems(self.env)
                )
        if problems:
            raise ConfigError(problems)
        return spec

    def job_spec(self) -> SweepSpec:
        return self.spec()

    def summary(self, spec: SweepSpec) -> str:
        return f"{plural(len(spec.values), 'point')}: " + ", ".join(map(value_text, spec.values[:12])) + (
            " …" if len(spec.values) > 12 else ""
        )


#: Batch sizes a new shape sweep offers.
SUGGESTED_BATCHES = "1,2,4,8,16,32,64"


class ShapeSweepDialog(JobDialog):
    """Asks for a shape sweep's batch sizes and Dynamo's recompile limit; checks them as typed."""

    def __init__(self, base: BenchmarkConfig, parent: QWidget | None = None):
        super().__init__("New shape sweep", parent)
        self.base = base
        self.values = QLineEdit(SUGGESTED_BATCHES)
        self.values.setPlaceholderText("batch sizes: 1,2,4,8 or a range: 1:512:x2")
        self.limit = QSpinBox()
        self.limit.setRange(0, 10_000)
        self.limit.setSpecialValueText("torch's own")
        self.limit.setToolTip("Dynamo's recompile limit in the worker; lower it to see where the cliff is")
        self.lay_out(
            "One worker calls each compiled variant at each batch size in turn, for dynamic=false, auto "
            f"and true, and records the recompiles and compile time each batch size causes. Base: "
            f"{base.model_text()} · {base.dtype} · {', '.join(base.variants)} (the form's configuration)",
            [("Batch sizes", self.values), ("Recompile limit", self.limit)],
            "Run shape sweep",
        )
        self.values.textChanged.connect(self.check)
        self.check()

    def request(self) -> protocol.ShapeSweepRequest:
        """The shape sweep as typed; raises ConfigError saying what is wrong."""
        text = self.values.text().strip()
        if not text:
            raise ConfigError([ConfigProblem("batch sizes", "type the batch sizes")])
        is_range = ":" in text and "," not in text
        batches = parse_batches(None if is_range else text, text if is_range else None)
        return shape_request(self.base, batches, recompile_limit=self.limit.value())

    def job_spec(self) -> protocol.ShapeSweepRequest:
        return self.request()

    def summary(self, spec: protocol.ShapeSweepRequest) -> str:
        return f"{len(spec.batches)} batch sizes × 3 modes"
