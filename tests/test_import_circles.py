"""No import circle in ``app/``, not even through imports made only for type hints.

A circle of type-only imports still says two modules cannot be read (or moved)
one without the other; the layers stay a stack when every import, runtime or
``if TYPE_CHECKING:``, points one way. The graph is grimp's (what import-linter
reads): every ``import`` statement in a module, at any depth, is an edge.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import grimp
import pytest

APP = Path(__file__).resolve().parent.parent / "app"


def circles(package: str) -> list[list[str]]:
    """Every set of modules of ``package`` that import one another in a circle (Tarjan's SCCs)."""
    graph = grimp.build_graph(package, cache_dir=None)
    modules = sorted(graph.modules)
    edges = {m: sorted(set(graph.find_modules_directly_imported_by(m)) & set(modules)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(root: str) -> None:  # iterative, so a deep package cannot overflow the stack
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))

    for module in modules:
        if module not in index:
            visit(module)
    return found


@pytest.fixture
def on_path(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("circled")]:
        del sys.modules[name]


def test_a_circle_made_only_of_type_hints_is_found(on_path):
    pkg = on_path / "circled"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import B\n\nclass A:\n    b: B\n")
    (pkg / "b.py").write_text(textwrap.dedent("""\
        from __future__ import annotations
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from .a import A
        class B:
            a: A | None = None
        """))
    (pkg / "c.py").write_text("from . import a\n")
    assert circles("circled") == [["circled.a", "circled.b"]]


def test_the_app_has_no_import_circle(monkeypatch):
    monkeypatch.syspath_prepend(str(APP))
    assert circles("compile_studio") == []
