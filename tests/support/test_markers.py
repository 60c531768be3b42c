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
    return item


def test_long_files_go_first_and_the_waiting_ones_to_the_first_process_in_turn():
    items = [_item("tests/test_a.py"), _item("tests/test_b.py", "long"),
             _item("tests/test_c.py", "waits"), _item("tests/test_a.py"),
             _item("tests/test_d.py", "waits"), _item("tests/test_e.py", "long"),
             _item("tests/test_f.py"), _item("tests/test_g.py", "waits")]
    first = items[0]
    scheduling.order(items, processes=3)
    files = list(dict.fromkeys(i.path.name for i in items))
    # xdist hands out files 1, 2, 3 to the three processes, then 4, 5, 6: 1 and 4 to the first
    assert files == ["test_c.py", "test_b.py", "test_e.py", "test_d.py", "test_a.py", "test_f.py",
                     "test_g.py"]
    a = [i for i in items if i.path.name == "test_a.py"]
    assert len(a) == 2 and a[0] is first  # a file's tests stay together, in their order


def test_with_one_process_the_order_is_long_files_then_the_rest():
    items = [_item("tests/test_a.py"), _item("tests/test_b.py", "waits"), _item("tests/test_c.py", "long")]
    scheduling.order(items, processes=1)
    assert [i.path.name for i in items] == ["test_b.py", "test_c.py", "test_a.py"]


def test_the_suite_runs_one_file_per_test_process_in_the_given_order(pytestconfig):
    """Only xdist's public options: loadfile, in the collection's order."""
    addopts = pytestconfig.getini("addopts")
    assert "--dist" in addopts and addopts[addopts.index("--dist") + 1] == "loadfile"
    assert "--no-loadscope-reorder" in addopts
