"""Where a run goes, in the window: a target chooser and a dialog to add and edit targets.

The targets live in the same ``targets.json`` the CLI reads
(:mod:`compile_studio.launchers.targets`); every edit is checked there before it is saved.
A target of the file that cannot be used is listed as such, with the reason,
and cannot be chosen. Saving merges the dialog's changes into the file as it
is then, under the file's lock, so a target another process added meanwhile
is kept.
"""

from __future__ import annotations

import html
import shlex
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ..jobs.workers import WorkerLauncher, launcher_for
from ..launchers.target_kinds import describe_target, kind_names, kind_words, target_kind
from ..launchers.targets import (
    LOCAL,
    LOCAL_TARGET,
    Target,
    Targets,
    TargetsFileError,
    check_target,
    load_targets,
    update_targets,
)

_TEXT_FIELDS = ("host", "user", "identity", "python", "preamble", "via", "partition", "gpu_type",
                "time_limit", "account")
_LIST_FIELDS = ("ssh_options", "srun_flags")
_FIELD_WORDS = {
    "host": "SSH host", "user": "User", "identity": "Key file", "python": "Remote Python",
    "preamble": "Preamble", "via": "Login node (SSH target)", "partition": "Partition",
    "gpu_type": "GPU type", "time_limit": "Time limit", "account": "Account",
    "ssh_options": "More ssh arguments", "srun_flags": "More srun flags",
}


def _fields_of(kind: str) -> frozenset[str]:
    """The fields the form shows for ``kind`` (none for a kind this version does not know)."""
    try:
        return target_kind(kind).fields
    except KeyError:
        return frozenset()


class TargetsDialog(QDialog):
    """Add, edit and remove targets; Save checks each one and writes ``targets.json``."""

    def __init__(self, targets: Targets, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Run targets")
        self.targets = Targets(list(targets.items), targets.path, list(targets.invalid))
        #: the targets as the dialog found them: Save writes only what changed since
        self._original = {t.name: t for t in self.targets.items}
        self._current: str | None = None
        self.list = QListWidget()
        self.list.currentTextChanged.connect(self._select)
        add = QPushButton("Add")
        add.clicked.connect(self._add)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self._remove)
        self.name = QLineEdit()
        self.kind = QComboBox()
        for kind in kind_names():
            self.kind.addItem(kind_words(kind), kind)
        self.kind.currentIndexChanged.connect(self._show_fields)
        self.edits: dict[str, QLineEdit] = {k: QLineEdit() for k in (*_TEXT_FIELDS, *_LIST_FIELDS)}
        self.edits["gpu_ids"] = QLineEdit()
        self.edits["gpu_ids"].setPlaceholderText("e.g. 0,1,2,3: one worker per GPU")
        self.edits["python"].setPlaceholderText("python3, or ~/venv/bin/python")
        self.edits["preamble"].setPlaceholderText("module load cuda; source ~/venv/bin/activate")
        self.edits["ssh_options"].setPlaceholderText("-o ConnectTimeout=10 -C")
        self.edits["ssh_options"].setToolTip(
            "A short list of ssh options is accepted (-4 -6 -C -q -v, -p, -l, -i, -J, -F with an "
            "absolute path to a config file only you can write, -o KEY=VALUE for keys such as "
            "ConnectTimeout, ServerAlive*, StrictHostKeyChecking, UserKnownHostsFile, "
            "IdentitiesOnly, ProxyJump, Control*). Nothing that runs a command on this machine "
            "(ProxyCommand, LocalCommand, …): put anything else in your own ~/.ssh/config."
        )
        self.port = QSpinBox()
        self.port.setRange(0, 65535)
        self.port.setSpecialValueText("default")
        self.gpus = QSpinBox()
        self.gpus.setRange(0, 1024)
        self.workers = QSpinBox()
        self.workers.setRange(0, 1024)
        self.workers.setSpecialValueText("one per GPU")
        self.form = QFormLayout()
        self.form.addRow("Name", self.name)
        self.form.addRow("Kind", self.kind)
        self._rows: dict[str, QWidget] = {}
        for key, widget in [*self.edits.items(), ("port", self.port), ("gpus", self.gpus),
                            ("workers", self.workers)]:
            words = _FIELD_WORDS.get(key, {"gpu_ids": "GPUs to use", "port": "Port",
                                           "gpus": "GPUs per job step", "workers": "Workers at once"}.get(key, key))
            self.form.addRow(words, widget)
            self._rows[key] = widget
        self.problem_label = QLabel()
        self.problem_label.setObjectName("targetProblems")
        self.problem_label.setWordWrap(True)
        self.problem_label.setStyleSheet("color: #B00020;")
        self.problem_label.setTextFormat(Qt.TextFormat.PlainText)
        self.invalid_label = QLabel(_invalid_words(self.targets))
        self.invalid_label.setObjectName("invalidTargets")
        self.invalid_label.setWordWrap(True)
        self.invalid_label.setTextFormat(Qt.TextFormat.PlainText)
        self.invalid_label.setVisible(bool(self.targets.invalid))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        left = QVBoxLayout()
        left.addWidget(self.list)
        left.addWidget(self.invalid_label)
        row = QHBoxLayout()
        row.addWidget(add)
        row.addWidget(self.remove_button)
        left.addLayout(row)
        right = QVBoxLayout()
        right.addLayout(self.form)
        right.addWidget(self.problem_label)
        top = QHBoxLayout()
        top.addLayout(left, 1)
        top.addLayout(right, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(buttons)
        self._fill_list(self.targets.names()[0])

    # -- editing ---------------------------------------------------------------------------
    def _fill_list(self, select: str) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        self.list.addItems(self.targets.names())
        self.list.blockSignals(False)
        self._current = None
        matches = self.list.findItems(select, Qt.MatchFlag.MatchExactly)
        self.list.setCurrentItem(matches[0] if matches else self.list.item(0))

    def _select(self, name: str) -> None:
        if self._current is not None and not self._keep_form():
            return
        if not name:
            return
        self._current = name
        self._load(self.targets.get(name))

    def _load(self, target: Target) -> None:
        self.name.setText(target.name)
        self.kind.setCurrentIndex(max(0, self.kind.findData(target.kind)))
        for key in _TEXT_FIELDS:
            self.edits[key].setText(getattr(target, key))
        for key in _LIST_FIELDS:
            self.edits[key].setText(shlex.join(getattr(target, key)))
        self.edits["gpu_ids"].setText(",".join(str(g) for g in target.gpu_ids))
        self.port.setValue(target.port or 0)
        self.gpus.setValue(target.gpus)
        self.workers.setValue(target.workers)
        local = target.name == LOCAL
        self.name.setEnabled(not local)
        self.kind.setEnabled(not local)
        self.remove_button.setEnabled(not local)
        self.problem_label.clear()
        self._show_fields()

    def _show_fields(self) -> None:
        kind = self.kind.currentData()
        for key, widget in self._rows.items():
            visible = key in _fields_of(kind)
            widget.setVisible(visible)
            label = self.form.labelForField(widget)
            if label is not None:
                label.setVisible(visible)

    def form_target(self) -> tuple[Target | None, list[str]]:
        """The target the form describes, checked as the file would be."""
        kind = self.kind.currentData()
        data: dict[str, object] = {"name": self.name.text().strip(), "kind": kind}
        shown = _fields_of(kind)
        problems: list[str] = []
        for key in _TEXT_FIELDS:
            if key in shown and self.edits[key].text().strip():
                data[key] = self.edits[key].text().strip()
        for key in _LIST_FIELDS:
            if key in shown and self.edits[key].text().strip():
                try:
                    data[key] = shlex.split(self.edits[key].text())
                except ValueError as exc:
                    problems.append(f"{_FIELD_WORDS[key]}: {exc}")
        if "gpu_ids" in shown and self.edits["gpu_ids"].text().strip():
            try:
                data["gpu_ids"] = [int(x) for x in self.edits["gpu_ids"].text().split(",") if x.strip()]
            except ValueError:
                problems.append("GPUs to use: a list of GPU numbers such as 0,1")
        for key, box in (("port", self.port), ("gpus", self.gpus), ("workers", self.workers)):
            if key in shown and box.value():
                data[key] = box.value()
        if problems:
            return None, problems
        return check_target(data)

    def _keep_form(self) -> bool:
        """Put the form's target back in the list; False (saying why) when it is not valid."""
        if self._current is None:
            return True
        target, problems = self.form_target()
        if target is None:
            self.problem_label.setText("\n".join(problems))
            return False
        items = [target if t.name == self._current else t for t in self.targets.items]
        self.targets = Targets(items, self.targets.path)
        problems = self.targets.problems()
        if problems:
            self.problem_label.setText("\n".join(problems))
            return False
        if target.name != self._current:
            self._current = target.name
            self._fill_list(target.name)
        return True

    def _add(self) -> None:
        if not self._keep_form():
            return
        k = 1
        while f"target{k}" in self.targets.names():
            k += 1
        name = f"target{k}"
        self.targets = self.targets.with_target(Target(name=name, kind="ssh", host="host"))
        self._current = None
        self._fill_list(name)

    def _remove(self) -> None:
        if self._current in (None, LOCAL):
            return
        self.targets = self.targets.without(self._current or "")
        self._current = None
        self._fill_list(LOCAL)

    def save(self) -> None:
        """Check the form and every target, write the file, close; says what is wrong otherwise.

        What the dialog changed (added, edited, removed targets) is applied to
        the file as it is now, under its lock: others' changes meanwhile stay.
        """
        if not self._keep_form():
            return
        edited = self.targets
        original = self._original
        kept = set(edited.names())

        def change(current: Targets) -> Targets:
            out = current
            for name in original:
                if name != LOCAL and name not in kept:
                    out = out.without(name)
            for target in edited.items:
                if target.name != LOCAL and original.get(target.name) != target:
                    out = out.with_target(target)
            problems = out.problems()
            if problems:
                raise ValueError("\n".join(problems))
            return out

        try:
            self.targets, _ = update_targets(change, edited.path)
        except (TargetsFileError, ValueError) as exc:
            self.problem_label.setText(f"cannot save the targets: {exc}")
            return
        except OSError as exc:
            self.problem_label.setText(f"cannot save the targets: {exc.strerror or exc}")
            return
        self.accept()


def _invalid_words(targets: Targets) -> str:
    """The file's targets that cannot be used, with why (empty when there are none)."""
    if not targets.invalid:
        return ""
    lines = ["Cannot be used (kept in the file as it is; replace it by adding a target of the same "
             "name, or remove it with compile-studio-cli targets remove NAME):"]
    lines += [f"{bad.name}: {bad.reason()}" for bad in targets.invalid]
    return "\n".join(lines)


class TargetChooser(QWidget):
    """``Run on: [target ▾] [Edit…]``: picks where the next run goes."""

    #: the name of the chosen target
    target_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.combo = QComboBox()
        self.combo.setToolTip("Where the worker runs: this machine, an SSH host or a Slurm cluster")
        self.combo.currentIndexChanged.connect(self._changed)
        edit = QPushButton("Edit…")
        edit.setToolTip("Add or edit SSH hosts and Slurm clusters")
        edit.clicked.connect(self.edit)
        self.problem = ""
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Run on"))
        layout.addWidget(self.combo, 1)
        layout.addWidget(edit)
        self.targets = Targets([])
        self.reload()

    def reload(self, select: str | None = None) -> None:
        """Read the targets file again (a damaged one leaves just this machine, saying why)."""
        current = select or self.current_name()
        try:
            self.targets = load_targets()
            self.problem = ""
        except TargetsFileError as exc:
            self.targets = Targets([])
            self.problem = f"The targets file cannot be used, so runs go to this machine: {exc}"
        if self.targets.invalid:
            self.problem = "; ".join(
                f"target {bad.name!r} cannot be used: {bad.reason()}" for bad in self.targets.invalid
            )
        self.combo.blockSignals(True)
        self.combo.clear()
        for t in self.targets.items:
            self.combo.addItem(t.name if t.name != LOCAL else "this machine", t.name)
            self.combo.setItemData(self.combo.count() - 1, describe_target(t), Qt.ItemDataRole.ToolTipRole)
        for bad in self.targets.invalid:
            # shown, with why, but not choosable: its data is no target name
            self.combo.addItem(f"{bad.name} (cannot be used)", None)
            row = self.combo.count() - 1
            self.combo.setItemData(row, "<p>" + html.escape(bad.reason()) + "</p>",
                                   Qt.ItemDataRole.ToolTipRole)
            item = self.combo.model().item(row)  # type: ignore[attr-defined]
            if item is not None:
                item.setEnabled(False)
        index = self.combo.findData(current)
        self.combo.setCurrentIndex(max(0, index))
        self.combo.blockSignals(False)
        if current and self.current_name() != current:
            self._changed()

    def current_name(self) -> str:
        data = self.combo.currentData()
        return str(data) if data else LOCAL

    def current(self) -> Target:
        try:
            return self.targets.get(self.current_name())
        except KeyError:
            return LOCAL_TARGET

    def is_local(self) -> bool:
        return self.current().is_local

    def set_current(self, name: str) -> None:
        index = self.combo.findData(name)
        if index >= 0:
            self.combo.setCurrentIndex(index)

    def launcher(self) -> WorkerLauncher:
        """The launcher of a worker on the chosen target (ValueError saying why not)."""
        return launcher_for(self.current(), self.targets)

    def edit(self) -> None:
        dialog = TargetsDialog(self.targets, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.reload()

    def _changed(self, *_: object) -> None:
        self.target_changed.emit(self.current_name())


def install_target_chooser(window: Any) -> TargetChooser:
    """Put a :class:`TargetChooser` above the window's Run/Stop buttons.

    Choosing a target asks that target's worker about its machine (the
    window's environment probe, run there), so the form offers its devices;
    the run then starts there (``window.start_run`` asks the chooser).
    """
    chooser = TargetChooser(window)
    buttons = window.run_button.parentWidget().layout()
    buttons.insertWidget(max(0, buttons.count() - 1), chooser)
    if chooser.problem:
        window.statusBar().showMessage(chooser.problem, 20000)

    #: the banner's text when it says the last target could not be used ("" when it does not)
    target_problem = [""]

    def say(message: str) -> None:
        window.show_error(message)
        target_problem[0] = message

    def probe_target(_: str) -> None:
        # what the banner said about the target left behind is no longer true
        shown = window.error_text
        if shown and shown in (target_problem[0], window.machine.problem):
            window.hide_error()
        target_problem[0] = ""
        try:
            launcher = chooser.launcher()
        except (KeyError, ValueError) as exc:
            window.machine.cancel(5000)
            window.machine.hello = None
            say(str(exc.args[0]))
            return
        window.machine.ask(launcher, describe_target(chooser.current()))

    chooser.target_changed.connect(probe_target)
    return chooser
