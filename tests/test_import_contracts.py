"""The import-linter contracts in pyproject.toml hold, and a forbidden import breaks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "app" / "compile_studio"

LAYERS = "Layers: front ends, jobs, launchers, results, worker, engine, core"
FRONT_ENDS = "Front ends, jobs, launchers and results stay off the engine, the worker and torch"
NO_QT = "Engine and results stay off Qt"
WORKER_ONLY = "Worker and engine need only Python, torch, numpy and the core"
QT_IN_WINDOW = "Qt only in the window"
WORKERS_THROUGH_JOBS = "The window and the CLI reach workers only through jobs"


def lint_imports_command() -> str:
    found = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which(
        "lint-imports"
    )
    if found is None:
        pytest.skip("lint-imports is not installed (pip install import-linter, part of .[test])")
    return found


def lint_imports(source_root: Path, config: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run lint-imports on the ``compile_studio`` found in ``source_root``."""
    env = dict(os.environ, PYTHONPATH=str(source_root), COLUMNS="1000", NO_COLOR="1")
    return subprocess.run(
        [lint_imports_command(), "--no-cache", "--no-logo", str(config)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def lint_with_a_line_added(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess[str]:
    """lint-imports on a copy of the package with ``line`` added to ``module``."""
    copy = tmp_path / "src" / "compile_studio"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    config = tmp_path / "pyproject.toml"
    shutil.copyfile(ROOT / "pyproject.toml", config)
    return lint_imports(tmp_path / "src", config, tmp_path)


def contract_line(output: str, name: str) -> str:
    """The summary line of contract ``name`` (``... KEPT`` or ``... BROKEN``)."""
    flat = " ".join(output.split())
    for verdict in ("KEPT", "BROKEN"):
        if f"{name} {verdict}" in flat:
            return verdict
    raise AssertionError(f"contract {name!r} not reported:\n{output}")


def test_the_tree_keeps_every_contract():
    result = lint_imports(ROOT / "app", ROOT / "pyproject.toml", ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in (LAYERS, FRONT_ENDS, NO_QT, WORKER_ONLY, QT_IN_WINDOW, WORKERS_THROUGH_JOBS):
        assert contract_line(result.stdout, name) == "KEPT"


@pytest.mark.parametrize(
    ("module", "line", "contract", "chain"),
    [
        (
            "gui/colors.py",
            "from compile_studio import worker",
            FRONT_ENDS,
            "compile_studio.gui.colors -> compile_studio.worker",
        ),
        (
            "results/report/formatting.py",
            "import torch",
            FRONT_ENDS,
            "compile_studio.results.report.formatting -> torch",
        ),
        (
            "results/analysis/stats.py",
            "import PySide6.QtCore",
            NO_QT,
            "compile_studio.results.analysis.stats -> PySide6",
        ),
        ("engine/mlp.py", "import psutil", WORKER_ONLY, "compile_studio.engine.mlp -> psutil"),
        (
            "jobs/session.py",
            "from PySide6 import QtCore",
            QT_IN_WINDOW,
            "compile_studio.jobs.session -> PySide6",
        ),
        (
            "gui/colors.py",
            "from compile_studio.launchers.supervisor import WorkerProcess",
            WORKERS_THROUGH_JOBS,
            "compile_studio.gui.colors -> compile_studio.launchers.supervisor",
        ),
        (
            "cli/why.py",
            "from compile_studio.launchers import standby_worker",
            WORKERS_THROUGH_JOBS,
            "compile_studio.cli.why -> compile_studio.launchers.standby_worker",
        ),
        (
            "worker.py",
            "from compile_studio.results.storage import store",
            WORKER_ONLY,
            "compile_studio.worker -> compile_studio.results.storage.store",
        ),
    ],
)
def test_a_forbidden_import_breaks_its_contract(tmp_path, module, line, contract, chain):
    result = lint_with_a_line_added(tmp_path, module, line)
    assert result.returncode != 0, result.stdout
    assert contract_line(result.stdout, contract) == "BROKEN"
    assert chain in result.stdout, result.stdout


def test_every_module_is_in_a_layer_and_outside_the_window_in_the_qt_contract():
    """A new module or folder cannot slip past the contracts: each one is in a layer, and each
    one beside gui/ is listed in the Qt contract."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c["name"] == LAYERS]
    in_layers = {m.strip() for layer in layers["layers"] for m in layer.split("|")}
    (qt,) = [c for c in contracts if c["name"] == QT_IN_WINDOW]
    here = {
        f"compile_studio.{p.stem if p.is_file() else p.name}"
        for p in PACKAGE.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())
    }
    assert here - in_layers == set(), "modules in no layer"
    assert here - set(qt["source_modules"]) - {"compile_studio.gui", "compile_studio.__main__"} == set()


@pytest.mark.parametrize(
    ("module", "line"),
    [
        ("core/config.py", "from compile_studio.jobs import session"),
        ("launchers/supervisor.py", "from compile_studio.jobs.session import RunSession"),
        ("results/analysis/stats.py", "from compile_studio.launchers import remote"),
    ],
)
def test_an_import_from_a_layer_above_breaks_the_layers(tmp_path, module, line):
    result = lint_with_a_line_added(tmp_path, module, line)
    assert result.returncode != 0, result.stdout
    assert contract_line(result.stdout, LAYERS) == "BROKEN"
