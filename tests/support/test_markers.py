"""The tests' markers: each one used is declared, each one declared is used, the rules of
support/markers.py hold, and the scheduling reads them (support/scheduling.py)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from support import markers, scheduling

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
MARK = re.compile(r"pytest\.mark\.([A-Za-z_]\w*)")


def _used(pattern: str = "*.py") -> dict[str, str]:
    """Each marker name written in the tests' sources → the first file that writes it."""
    used: dict[str, str] = {}
    for path in sorted(TESTS.rglob(pattern)):
        if path.name == Path(__file__).name:
            continue
        for name in MARK.findall(path.read_text(encoding="utf-8")):
            used.setdefault(name, str(path.relative_to(TESTS)))
    return used


def _declared_in_pyproject() -> list[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^markers = \[(.*?)^\]", text, re.S | re.M)
    assert block, "pyproject.toml declares no markers"
    return re.findall(r'^\s*"(\w+):', block.group(1), re.M)


def test_every_marker_the_tests_use_is_declared(pytestconfig):
    known = markers.declared(pytestconfig)
    undeclared = {name: where for name, where in _used().items() if name not in known}
    assert not undeclared, f"declare these in pyproject.toml's markers: {undeclared}"
    assert "--strict-markers" in pytestconfig.getini("addopts"), "a misspelt marker must fail"


def test_every_marker_pyproject_declares_is_used():
    declared = _declared_in_pyproject()
    assert {"waits", "long", "fresh_worker", "inductor"} <= set(declared)
    used = _used("test_*.py")
    assert [name for name in declared if name not in used] == []


def test_a_test_that_waits_on_a_service_says_so():
    assert markers.problems(("tmp_path", "box", "ssh_config"), {"parametrize"}) == [
        "uses ssh_config (waits for an SSH worker starting) without pytest.mark.waits"
    ]
    assert markers.problems(("slurm",), set()) != []
    assert markers.problems(("box", "ssh_config"), {"waits"}) == []
    assert markers.problems(("tmp_path",), set()) == []


def test_the_tests_collected_in_this_run_follow_the_rules(request):
    wrong = {item.nodeid: markers.problems_of(item) for item in request.session.items}
    assert {k: v for k, v in wrong.items() if v} == {}


def _item(path: str, *marks: str):
    own = [pytest.mark.__getattr__(m)().mark for m in marks]
    item = SimpleNamespace(path=Path(path), own=own)
    item.get_closest_marker = lambda name: next((m for m in item.own if m.name == name), None)
    item.add_marker = lambda mark: item.own.append(mark.mark)
    return item


def test_waiting_tests_share_one_group_and_go_first_then_the_long_files():
    items = [_item("tests/test_a.py"), _item("tests/test_b.py", "long"),
             _item("tests/test_c.py", "waits"), _item("tests/test_a.py"),
             _item("tests/test_d.py", "waits", "long"), _item("tests/test_e.py", "long")]
    config = SimpleNamespace(
        pluginmanager=SimpleNamespace(hasplugin=lambda name: name == "xdist"),
        getoption=lambda name, default=None: "loadgroup" if name == "dist" else default,
    )
    scheduling.group_and_order(config, items)
    order = [(i.path.name, i.get_closest_marker("xdist_group").args[0]) for i in items]
    assert order == [
        ("test_c.py", "waits"), ("test_d.py", "waits"), ("test_b.py", "test_b.py"),
        ("test_e.py", "test_e.py"), ("test_a.py", "test_a.py"), ("test_a.py", "test_a.py"),
    ]


def test_without_loadgroup_no_group_is_given():
    items = [_item("tests/test_a.py"), _item("tests/test_b.py", "waits")]
    config = SimpleNamespace(pluginmanager=SimpleNamespace(hasplugin=lambda name: True),
                             getoption=lambda name, default=None: "no")
    scheduling.group_and_order(config, items)
    assert [i.path.name for i in items] == ["test_b.py", "test_a.py"]
    assert all(i.get_closest_marker("xdist_group") is None for i in items)
