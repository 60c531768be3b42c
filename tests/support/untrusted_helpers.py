"""Shared by the tests of files, workers and text from outside: a valid saved run to damage."""

from __future__ import annotations

import json
from pathlib import Path

from compile_studio.core import protocol
from compile_studio.results import RunStore
from compile_studio.results.storage.recorder import RunRecorder


def fake_events(variants=("eager", "default"), n=20, warmup=3):
    yield {"type": "hello", "protocol": protocol.PROTOCOL_VERSION, "environment": {"torch": "2.x", "devices": ["cpu"], "device": "cpu",
                                            "device_names": {"cpu": "test cpu"}}}
    for k, name in enumerate(variants):
        yield {"type": "phase", "variant": name, "phase": "build", "iterations": 0}
        if name != "eager":
            yield {"type": "compiled", "variant": name, "compile_s": 1.5, "first_call_ms": 1500.0,
                   "graphs": 1, "graph_breaks": 0, "break_reasons": [], "recompiles": 0}
        yield {"type": "samples", "variant": name, "phase": "warmup", "first_iteration": 0,
               "wall_ms": [5.0] * warmup, "device_ms": None}
        base = 2.0 / (k + 1)
        yield {"type": "samples", "variant": name, "phase": "measure", "first_iteration": warmup,
               "wall_ms": [base + 0.001 * i for i in range(n)], "device_ms": None}
        yield {"type": "variant_done", "variant": name, "status": "done", "allclose": True,
               "max_abs_error": 1e-7, "max_rel_error": 1e-7, "peak_memory_bytes": 1024,
               "memory_kind": "rss_peak_growth", "recompiles_in_window": 0}
    yield {"type": "done", "status": "completed"}


def saved_run(root: Path, label: str = "t", variants=("eager", "default")) -> Path:
    """A complete run folder in the store at ``root``; returns its folder."""
    rec = RunRecorder.in_store(RunStore(root), {"layers": "8,8", "batch_size": 2, "label": label}, label)
    for e in fake_events(variants):
        rec.handle(protocol.from_dict(e))
    return rec.folder


def edit_json(folder: Path, change) -> None:
    path = folder / "run.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


#: Ways a shared run folder arrives damaged, each applied to a saved run's folder.
DAMAGES = {
    "ff_byte": lambda f: (f / "samples.csv").write_bytes((f / "samples.csv").read_bytes() + b"\xff"),
    "latin1": lambda f: (f / "run.json").write_bytes('{"config": {"label": "caf\u00e9"}, "variants": {}}'.encode("latin-1")),
    "nested": lambda f: (f / "run.json").write_text('{"config": {}, "variants": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    "infinity": lambda f: (f / "run.json").write_text('{"config": {}, "variants": {"eager": {"compile_s": Infinity}}, "status": 1}'),
    "device_names": lambda f: edit_json(f, lambda d: d["environment"].update(device_names=["x"])),
    "label_number": lambda f: edit_json(f, lambda d: d["config"].update(label=5)),
    "huge_int": lambda f: (f / "run.json").write_text('{"config": {}, "variants": {}, "schema_version": ' + "9" * 5000 + "}"),
    "variants_list": lambda f: edit_json(f, lambda d: d.update(variants=[1, 2])),
}
