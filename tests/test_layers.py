"""The layer rules, executable: engine/results/CLI import no Qt; results/CLI import no torch."""

from __future__ import annotations

import subprocess
import sys

import pytest


def imported_after(modules: list[str]) -> set[str]:
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'PySide6', 'pyqtgraph', 'shiboken6'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {m.split(".")[0] for m in out.stdout.split()}


@pytest.mark.parametrize(
    "modules",
    [
        ["compile_studio.engine.runner", "compile_studio.engine.environment", "compile_studio.worker"],
        ["compile_studio.results", "compile_studio.results.report.run_export", "compile_studio.results.storage.recorder"],
        ["compile_studio.cli", "compile_studio.launchers.supervisor", "compile_studio.core.config"],
    ],
)
def test_no_qt_outside_the_gui(modules):
    assert imported_after(modules) & {"PySide6", "pyqtgraph", "shiboken6"} == set()


def test_results_cli_and_supervisor_need_no_torch():
    mods = ["compile_studio.results.report.run_export", "compile_studio.cli", "compile_studio.launchers.supervisor"]
    assert "torch" not in imported_after(mods)
