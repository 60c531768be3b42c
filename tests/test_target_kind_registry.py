"""A new kind of target is one registration: the file, its checks, the CLI, the dialog and runs follow."""

from __future__ import annotations

import json

import pytest
from PySide6.QtWidgets import QDialog

from compile_studio.cli import commands as cli
from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.targets_dialog import TargetsDialog
from compile_studio.jobs.session import RunSession
from compile_studio.launchers.remote import launcher_for
from compile_studio.launchers.supervisor import WorkerLauncher
from compile_studio.launchers.target_kinds import (
    TargetKind,
    describe_target,
    kind_names,
    register_kind,
    unregister_kind,
)
from compile_studio.launchers.targets import Targets, load_targets, targets_file
from compile_studio.results import RunStore


def _container_launcher(target, plan):
    # a worker on this machine, started through `env` with the container's name set (made up for
    # the test: a real kind would start it inside the container)
    return WorkerLauncher(prefix=("env", f"CONTAINER={target.host}"))


CONTAINER = TargetKind(
    name="container", words="Container", fields=frozenset({"host", "python", "workers"}),
    launcher=_container_launcher,
    describe=lambda t: f"container {t.host}",
    check=lambda values: [] if values.get("host") else [f"target {values['name']!r}: a container needs a host"],
    order=40,
)


@pytest.fixture
def container_kind():
    register_kind(CONTAINER)
    yield CONTAINER
    unregister_kind("container")


def _write(entries: list[dict]) -> None:
    path = targets_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "targets": entries}), encoding="utf-8")


def test_a_registered_kind_loads_checks_and_lists(container_kind, capsys):
    _write([{"name": "box", "kind": "container", "host": "ci-box"},
            {"name": "nameless", "kind": "container"}])
    targets = load_targets()
    assert describe_target(targets.get("box")) == "container ci-box"
    (bad,) = targets.invalid
    assert bad.name == "nameless" and "a container needs a host" in bad.problems[0]
    assert kind_names() == ("local", "ssh", "slurm", "container")
    assert cli.main(["targets"]) == 0
    out = capsys.readouterr().out
    assert "box" in out and "Container" in out and "container ci-box" in out


def test_a_run_goes_through_the_kinds_launcher(container_kind, tiny_config, tmp_path):
    _write([{"name": "box", "kind": "container", "host": "ci-box"}])
    launcher = launcher_for("box")
    assert launcher.prefix == ("env", "CONTAINER=ci-box")
    config = BenchmarkConfig(**{**tiny_config, "variants": ["eager"]})
    outcome = RunSession(config, RunStore(tmp_path / "runs"), launcher=launcher).run()
    assert outcome.run.status == "complete"
    assert outcome.run.variants["eager"].samples.count("measure") == tiny_config["iterations"]


def test_the_dialog_offers_the_kind_and_shows_only_its_fields(container_kind, qtbot):
    dialog = TargetsDialog(Targets([]))
    qtbot.addWidget(dialog)
    dialog.show()
    dialog._add()
    dialog.name.setText("box")
    dialog.kind.setCurrentIndex(dialog.kind.findData("container"))
    assert dialog.kind.currentText() == "Container"
    assert dialog.edits["host"].isVisible() and not dialog.edits["partition"].isVisible()
    dialog.edits["host"].setText("ci-box")
    dialog.save()
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert load_targets().get("box").kind == "container"


def test_without_its_kind_a_target_is_invalid_and_says_so():
    _write([{"name": "box", "kind": "container", "host": "ci-box"}])
    targets = load_targets()
    (bad,) = targets.invalid
    assert "kind must be one of local, ssh, slurm" in bad.problems[0]
