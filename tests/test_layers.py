"""The layer rules, executable: engine/results/CLI import no Qt; results/CLI import no torch."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

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


APP = Path(__file__).resolve().parent.parent / "app" / "compile_studio"


def test_results_is_grouped_in_sub_packages_of_at_most_12_files():
    results = APP / "results"
    assert sorted(p.name for p in results.glob("*.py")) == ["__init__.py"]
    packages = [p for p in results.iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert len(packages) >= 4
    for package in packages:
        files = [p for p in package.iterdir() if p.name != "__pycache__"]
        assert (package / "__init__.py").is_file() and len(files) <= 12, (package.name, len(files))
        assert ast.get_docstring(ast.parse((package / "__init__.py").read_text())), package.name


# the variant words are asked of core/variants.py, never written out
WRITTEN_OUT = re.compile(
    r"""in \(\s*["']eager["'],\s*(AA_CONTROL|["']eager-aa["'])\s*\)|["']eager-aa["']|in (EAGER|CUDAGRAPH)_VARIANTS\b"""
)


def test_no_module_writes_the_variant_words_out():
    found = [
        f"{path.relative_to(APP)}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0)}"
        for path in sorted(APP.rglob("*.py"))
        if path != APP / "core" / "variants.py"
        for text in [path.read_text()]
        for m in WRITTEN_OUT.finditer(text)
    ]
    assert found == []
