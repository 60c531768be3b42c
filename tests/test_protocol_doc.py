"""docs/protocol.md shows one message of each event kind, and each one is read back by the
protocol's own decoder as that kind (a new event without a sample, or a sample the decoder
refuses, fails here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from compile_studio.core import protocol

DOC = Path(__file__).resolve().parents[1] / "docs" / "protocol.md"


def _sample_lines() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## One message of each kind", 1)[1]
    block = re.search(r"```jsonl\n(.*?)```", section, re.S)
    assert block, "the section has no ```jsonl block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_every_event_kind_has_one_sample_and_it_decodes_as_that_kind():
    seen: dict[str, int] = {}
    for line in _sample_lines():
        data = json.loads(line)
        event = protocol.decode(line)
        assert event is not None, f"not an event: {line[:80]}"
        assert event.TYPE == data["type"]
        # every field the sample shows is one the event declares (no stale names in the doc)
        declared = {f for f in protocol.to_dict(event)}
        assert set(data) <= declared, (data["type"], set(data) - declared)
        seen[event.TYPE] = seen.get(event.TYPE, 0) + 1
    assert set(seen) == set(protocol.EVENT_CLASSES), set(protocol.EVENT_CLASSES) ^ set(seen)
    assert all(n == 1 for n in seen.values()), seen


def test_the_versioning_rule_names_the_current_version():
    text = DOC.read_text(encoding="utf-8")
    rule = text.split("## Versioning", 1)[1].split("##", 1)[0]
    assert f"now {protocol.PROTOCOL_VERSION}" in rule
