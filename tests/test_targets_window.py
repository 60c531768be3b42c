"""The window's target chooser and targets dialog (real widgets, offscreen; no services needed)."""

from __future__ import annotations

import socket
import sys

from PySide6.QtWidgets import QDialog

from compile_studio.gui.targets_dialog import TargetsDialog
from compile_studio.launchers.remote import RemoteLauncher
from compile_studio.launchers.targets import Target, Targets, load_targets, save_targets
from support.gui_helpers import open_window


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dialog_refuses_a_bad_target_and_saves_a_good_one(qtbot):
    dialog = TargetsDialog(Targets([]))
    qtbot.addWidget(dialog)
    dialog._add()
    dialog.name.setText("box")
    dialog.kind.setCurrentIndex(1)  # SSH host
    dialog.edits["host"].setText("-oProxyCommand=touch /tmp/x")
    dialog.save()
    assert dialog.result() != QDialog.DialogCode.Accepted
    assert "not an ssh host name" in dialog.problem_label.text()
    assert load_targets().names() == ["local"]
    dialog.edits["host"].setText("gpu-box")
    dialog.edits["python"].setText("~/venv/bin/python")
    dialog.edits["gpu_ids"].setText("0,1")
    dialog.save()
    assert dialog.result() == QDialog.DialogCode.Accepted
    saved = load_targets().get("box")
    assert saved == Target(name="box", kind="ssh", host="gpu-box", python="~/venv/bin/python", gpu_ids=(0, 1))
    assert not dialog.edits["partition"].isVisible()  # Slurm fields are hidden for an SSH host


def test_window_runs_on_the_chosen_target_and_says_when_it_is_unreachable(qtbot):
    save_targets([Target(name="gone", kind="ssh", host="127.0.0.1", port=_closed_port(),
                         ssh_options=("-o", "ConnectTimeout=3"), python=sys.executable)])
    window = open_window(qtbot)
    chooser = window.target_chooser
    assert [chooser.combo.itemData(k) for k in range(chooser.combo.count())] == ["local", "gone"]
    assert chooser.is_local()
    with qtbot.waitSignal(chooser.target_changed, timeout=5000):
        chooser.set_current("gone")
    assert isinstance(chooser.launcher(), RemoteLauncher)
    qtbot.waitUntil(lambda: "cannot reach SSH target 'gone'" in window.error_text, timeout=30_000)
