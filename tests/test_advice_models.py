"""What to try for models people write, end to end: a real run of each, then ``advise`` on its folder.

The factories are in tests/user_models/: a ``.item()`` graph break, a forward
that changes a Python attribute every call, a tiny MLP at batch 1 and a
compute-bound fp32 MLP. Each gets the suggestion its evidence calls for, and
nothing the CPU cannot do. The .item() model's fullgraph suggestion is tried
end to end here; the rest of trying is tests/test_advice_try.py's subject.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compile_studio.core.config import BenchmarkConfig
from compile_studio.core.protocol import RunStatus
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunStore, load_run
from compile_studio.results.suggestions.what_to_try import what_to_try

pytestmark = pytest.mark.long

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


def test_trying_fullgraph_on_an_item_break_measures_the_model_as_one_graph(tmp_path, capsys):
    """``advise RUN --try <fullgraph>`` on the real .item() model: B compiles it as one graph
    (A's run breaks once, B's not at all), every round is measured and judged in the run's
    verdict words, and ``advise`` shows what was tried and what it gave."""
    import argparse

    from compile_studio.cli import advise as cli_advise
    from compile_studio.results.records.trial_load import trials_of

    outcome = RunSession(
        BenchmarkConfig.from_dict({**RUN, "model": "custom", "factory": f"{MODELS / 'item_scale.py'}:make_model"}),
        RunStore(tmp_path),
    ).run()
    assert outcome.status == RunStatus.COMPLETE and outcome.folder is not None
    found = what_to_try(load_run(outcome.folder), outcome.folder).suggestions
    number = next(k for k, s in enumerate(found, 1) if s.rule == "fullgraph")
    args = argparse.Namespace(run=str(outcome.folder), out=None, try_=str(number), rounds=3, trust_code=True)
    assert cli_advise.main(args) == 0
    out = capsys.readouterr().out
    (listing,) = trials_of(outcome.folder)
    record = listing.record
    assert record.status == "complete" and record.rounds_done() == 3
    (tried,) = record.suggestions
    assert tried.rule == "fullgraph" and tried.delta == {"fullgraph": True}
    assert tried.figure_text() == "time per call of aot_eager"
    assert [r.note for r in tried.rounds] == ["graph breaks: A 1, B 0"] * 3
    assert all(r.a and r.b and r.a_end and r.ratio for r in tried.rounds)
    lo, hi = tried.interval_lo, tried.interval_hi
    assert lo is not None and hi is not None and lo <= tried.interval_point <= hi
    assert (tried.verdict, lo > 1.0, hi < 1.0) in {
        ("faster", True, False), ("slower", False, True), ("cannot tell", lo > 1.0, hi < 1.0)
    }, (tried.verdict, tried.verdict_reason)
    assert f"= {number}. fullgraph: {tried.verdict}: " in out
    plain = argparse.Namespace(run=str(outcome.folder), out=None, try_=None, rounds=None, trust_code=False)
    assert cli_advise.main(plain) == 0
    assert f"{number}. fullgraph (fullgraph=true): {tried.verdict} — time per call of aot_eager" in capsys.readouterr().out
