"""The window is a composition of parts: MainWindow stays small, no part imports it back, and
the views that show jobs do not run them (read from the source, no Qt needed)."""

from __future__ import annotations

import ast
from pathlib import Path

import compile_studio.gui as gui

GUI = Path(gui.__file__).parent
#: what MainWindow may grow to: the parts hold the rest
MAX_LINES = 300
MAX_METHODS = 25
#: the modules that make a window (the entry points), not parts of one
OPENERS = {"app.py", "self_test.py", "main_window.py"}


def _tree(name: str) -> ast.Module:
    return ast.parse((GUI / name).read_text(encoding="utf-8"))


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def _imported(tree: ast.Module) -> set[str]:
    """Every module a module imports, type-only imports included (relative names as written)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            out.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_main_window_is_small():
    text = (GUI / "main_window.py").read_text(encoding="utf-8")
    methods = [n for n in _class(_tree("main_window.py"), "MainWindow").body if isinstance(n, ast.FunctionDef)]
    assert len(text.splitlines()) <= MAX_LINES
    assert len(methods) <= MAX_METHODS, [m.name for m in methods]


def test_no_part_of_the_window_imports_it_back():
    back = []
    for path in sorted(GUI.rglob("*.py")):
        if path.name in OPENERS and path.parent == GUI:
            continue
        imported = _imported(ast.parse(path.read_text(encoding="utf-8")))
        if {".main_window", "..main_window", "compile_studio.gui.main_window"} & imported:
            back.append(path.name)
    assert back == []


def test_the_views_that_show_jobs_hold_no_thread():
    """SweepView and WhyView show; their controllers start, stop and hold the job threads."""
    for module, view in (("sweep_view.py", "SweepView"), ("why_view.py", "WhyView")):
        source = ast.unparse(_class(_tree(module), view))
        assert "Thread(" not in source, view
        assert ".start()" not in source.replace("self._timer.start()", ""), view
