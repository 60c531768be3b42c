"""The tests' own markers (declared in pyproject.toml) and the rules they follow.

- ``waits`` (on a file): its tests mostly wait (an SSH or Slurm worker starting, a queued job, a
  stopped worker's watch limit); such files are spread so that they do not all wait at once
  (support/scheduling.py). A test that uses a fixture of :data:`WAITING_FIXTURES` must carry
  it (:func:`problems`).
- ``long`` (on a file): the file takes one test process over ~20 s; these are handed out first.
- ``fresh_worker``: the test's local workers start as the app starts them (``Popen``), not forked
  from the tests' server. A test without it whose plain local worker cannot fork (another
  environment for what torch reads at import) fails
  (support/workers.py): what a test pays for a fresh worker is said where the test is.
- ``inductor``: the test runs the real Inductor compiler (slow on a cold cache).

tests/support/test_markers.py checks the rules.
"""

from __future__ import annotations

from typing import Any

#: Fixtures that wait on a service, and what they wait for.
WAITING_FIXTURES = {"ssh_config": "an SSH worker starting", "slurm": "a Slurm job"}

def problems(fixturenames: list[str] | tuple[str, ...], marker_names: set[str]) -> list[str]:
    """What is wrong with the markers of a test that uses ``fixturenames`` and carries
    ``marker_names`` (empty when nothing is)."""
    found = []
    if "waits" not in marker_names:
        for fixture, what in WAITING_FIXTURES.items():
            if fixture in fixturenames:
                found.append(f"uses {fixture} (waits for {what}) without pytest.mark.waits")
    return found


def problems_of(item: Any) -> list[str]:
    """:func:`problems` of a collected test."""
    return problems(tuple(getattr(item, "fixturenames", ())), {m.name for m in item.iter_markers()})


def declared(config: Any) -> set[str]:
    """The marker names pytest knows: pytest's own, its plugins' and those of pyproject.toml."""
    return {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
