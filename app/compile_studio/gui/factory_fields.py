"""The form's fields a custom model's factory decides: shown as the factory's values, read-only, with the reason.

A factory that declares no ``batch_size`` parameter makes its inputs itself: the
run's batch is theirs, whatever the form says (the CLI refuses ``--batch-size``
for it). The Batch field then shows the factory's batch (as its latest run
measured it; "the factory's" before one), greyed, and a line under it says why.
The form's own batch is kept meanwhile: it is what the configuration carries,
and the field shows it again once the model or the factory takes it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QLabel, QSpinBox, QWidget

from ..core.config import BenchmarkConfig
from ..core.model_specs import factory_signature

#: shown in the Batch field of a factory that decides its batch, before a run measured it
UNKNOWN_TEXT = "the factory's"


def factory_decides_batch(config: BenchmarkConfig) -> bool:
    """Whether ``config`` is a custom model whose factory (read, not run) takes no ``batch_size``."""
    if config.model != "custom" or not config.factory.strip():
        return False
    signature = factory_signature(config.factory, config.model_path)
    return not isinstance(signature, str) and not signature.takes("batch_size")


class FactoryBatch:
    """The Batch field while a custom model's factory decides the batch (see the module's text).

    ``measured``: the batch the factory's latest run measured (None: none known), asked
    each time the form changes.
    """

    def __init__(self, spin: QSpinBox, row: QWidget) -> None:
        self.spin = spin
        self.measured: Callable[[BenchmarkConfig], int | None] = lambda _config: None
        #: the form's own batch, kept while the factory decides it (None: the field is the form's)
        self.kept: int | None = None
        self._tooltip = spin.toolTip()
        self.note = QLabel()
        self.note.setObjectName("factoryBatchNote")
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: #666;")
        self.note.hide()
        layout = row.layout()
        if layout is not None:
            layout.addWidget(self.note)

    def forget(self) -> None:
        """Give the field back to the form as it is (a whole configuration is shown next)."""
        self.kept = None
        self.spin.setSpecialValueText("")
        self.spin.setEnabled(True)
        self.spin.setToolTip(self._tooltip)
        self.note.hide()

    @property
    def decided(self) -> bool:
        return self.kept is not None

    def update(self, config: BenchmarkConfig) -> None:
        """Show ``config``'s batch as the factory decides it, or give the field back to the form.

        ``config.batch_size`` is the form's own batch (the caller keeps it, see :attr:`kept`).
        """
        if not factory_decides_batch(config):
            if self.kept is not None:
                kept, self.kept = self.kept, None
                self.spin.setSpecialValueText("")
                self.spin.setValue(kept)
                self.spin.setEnabled(True)
                self.spin.setToolTip(self._tooltip)
                self.note.hide()
            return
        self.kept = config.batch_size
        batch = self.measured(config)
        reason = f"Set by the factory: {config.factory.strip()} takes no batch_size parameter, its inputs set the batch"
        if batch is None:
            self.spin.setSpecialValueText(UNKNOWN_TEXT)
            self.spin.setValue(self.spin.minimum())
            self.note.setText(f"{reason} (known after its first run).")
        else:
            self.spin.setSpecialValueText("")
            self.spin.setValue(batch)
            self.note.setText(f"{reason} ({batch} in its latest run).")
        self.spin.setEnabled(False)
        self.spin.setToolTip(self.note.text())
        self.note.show()

    def shown_text(self) -> str:
        """What the field shows (its special text, else its value and unit)."""
        if self.spin.specialValueText() and self.spin.value() == self.spin.minimum():
            return self.spin.specialValueText()
        return self.spin.text()


def latest_factory_batch(runs: list, config: BenchmarkConfig) -> int | None:
    """The batch the newest of ``runs`` (RunResults, newest first; None ignored) of
    ``config``'s factory measured; None when none did."""
    factory, where = config.factory.strip(), config.model_path.strip()
    for run in runs:
        c = getattr(run, "config", None)
        if c is None or c.model != "custom" or c.factory.strip() != factory or c.model_path.strip() != where:
            continue
        batch = run.batch()
        if batch is not None:
            return batch
    return None
