"""No function or method in app/compile_studio runs over 80 lines.

A function's length counts from its ``def`` line to the last line of its body
(decorators excluded; a nested function counts within its parent as well).
"""

from __future__ import annotations

import ast
from pathlib import Path

MAX_LINES = 80
APP = Path(__file__).resolve().parent.parent / "app" / "compile_studio"


def function_lengths(source: str) -> list[tuple[str, int, int]]:
    """(qualified name, first line, length) of every function in ``source``."""
    found: list[tuple[str, int, int]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                end = child.end_lineno or child.lineno
                found.append((name, child.lineno, end - child.lineno + 1))
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(ast.parse(source), "")
    return found


def long_functions() -> list[str]:
    long = []
    for path in sorted(APP.rglob("*.py")):
        rel = path.relative_to(APP).as_posix()
        for name, line, length in function_lengths(path.read_text(encoding="utf-8")):
            if length > MAX_LINES:
                long.append(f"{rel}:{line} {name} is {length} lines")
    return long


def test_no_function_over_80_lines():
    long = long_functions()
    assert not long, f"over {MAX_LINES} lines:\n" + "\n".join(long)


def test_the_count_sees_a_long_function():
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    source = f"class A:\n    @staticmethod\n    def f():\n{body.replace('    ', '        ')}\n"
    assert function_lengths(source) == [("A.f", 3, MAX_LINES + 1)]
