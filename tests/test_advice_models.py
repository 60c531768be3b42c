"""What to try for models people write, end to end: a real run of each, then ``advise`` on its folder.

The factories are in tests/user_models/: a ``.item()`` graph break, a forward
that changes a Python attribute every call, a tiny MLP at batch 1 and a
compute-bound fp32 MLP. Each gets the suggestion its evidence calls for, and
nothing the CPU cannot do. Trying a configuration change is
tests/test_advice_try.py's subject.
"""

from __future__ import annotations

from pathlib import Path

from compile_studio.core.config import BenchmarkConfig
from compile_studio.core.protocol import RunStatus
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunStore, load_run
from compile_studio.results.what_to_try import what_to_try

MODELS = Path(__file__).resolve().parent / "user_models"
RUN = {
    "device": "cpu", "variants": ["eager", "aot_eager"], "iterations": 16, "warmup": 2, "rounds": 2,
    "warmup_min_ms": 0, "compile_timing": "in_run",
}


def advised(tmp_path: Path, **config) -> list:
    outcome = RunSession(BenchmarkConfig.from_dict({**RUN, **config}), RunStore(tmp_path)).run()
    assert outcome.status == RunStatus.COMPLETE, outcome.run.message
    assert outcome.folder is not None
    return what_to_try(load_run(outcome.folder), outcome.folder).suggestions


def rules(found: list) -> list[str]:
    return [s.rule for s in found]


def test_an_item_break_gets_its_code_change_and_fullgraph(tmp_path):
    found = advised(tmp_path, model="custom", factory=f"{MODELS / 'item_scale.py'}:make_model")
    assert {"item-break", "fullgraph"} <= set(rules(found)), rules(found)
    item = next(s for s in found if s.rule == "item-break")
    assert item.code is not None and item.code.place == "item_scale.py:17"
    assert item.code.before == "scale = h.abs().max().item()"
    assert next(s for s in found if s.rule == "fullgraph").delta == {"fullgraph": True}


def test_a_counter_in_forward_gets_the_python_value_change(tmp_path):
    found = advised(tmp_path, model="custom", factory=f"{MODELS / 'call_counter.py'}:make_model")
    assert rules(found)[0] == "python-value-guard", rules(found)
    s = found[0]
    assert "self.calls" in s.title and s.code is not None and s.code.before == "self.calls += 1"
    assert s.code.place == "call_counter.py:16"
    assert "dynamic-shapes" not in rules(found)  # not a size guard


def test_a_tiny_mlp_at_batch_1_gets_a_larger_batch(tmp_path):
    found = advised(tmp_path, layers="16,16,4", batch_size=1)
    batch = next(s for s in found if s.rule == "larger-batch")
    assert batch.delta["batch_size"] > 1


def test_a_compute_bound_fp32_mlp_on_the_cpu_gets_nothing_the_cpu_cannot_do(tmp_path):
    found = advised(tmp_path, layers="512,1024,1024,512", batch_size=128, dtype="fp32", iterations=8)
    assert "larger-batch" not in rules(found)  # its calls are busy with GEMMs, not dispatch
    cuda_only = [r for r in rules(found) if r in ("reduce-overhead", "no-cudagraphs") or r.startswith("dtype-")]
    assert cuda_only == [], rules(found)  # no CUDA graphs, no faster dtype on this CPU
