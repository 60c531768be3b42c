"""Models written outside the project, run as a new user would: the words must be right.

A model that cannot run in fp64, graph breaks and skipped frames counted from what
torch records, training checks that name what failed, keyword inputs (Hugging Face
style). Runs go through real worker processes (RunSession) with aot_eager.
"""

from __future__ import annotations

from pathlib import Path

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunStore
from compile_studio.results.summary import summarize

MODELS = Path(__file__).parent / "user_models"

SMALL = {
    "batch_size": 2, "device": "cpu", "iterations": 6, "warmup": 1, "warmup_min_ms": 0,
    "rounds": 2, "compile_timing": "in_run", "variants": ["eager", "aot_eager"],
    "diagnostics": False,
}


def run(tmp_path: Path, spec: str, **overrides):
    """A run of ``tests/user_models/FILE.py:FUNC`` in a worker: (outcome, events, log lines)."""
    file, _, func = spec.partition(":")
    events: list[protocol.Event] = []
    log: list[str] = []
    config = BenchmarkConfig.from_dict(
        {**SMALL, "model": "custom", "factory": f"{MODELS / file}:{func or 'make_model'}", **overrides}
    )
    outcome = RunSession(
        config, RunStore(tmp_path / "runs"), on_event=events.append, on_log=log.append
    ).run()
    return outcome, events, log


# -- 1. a model that cannot run in fp64 --------------------------------------------------------
def test_a_dtype_pinned_model_is_timed_and_checked_against_eager_saying_why(tmp_path):
    outcome, events, _ = run(tmp_path, "pinned_fp32.py")
    r = outcome.run
    assert r.status == "complete", r.message
    for name in ("eager", "aot_eager"):
        v = r.variants[name]
        assert v.status == "done", (name, v.error)
        assert v.stats() is not None and v.stats().n == 6
        assert v.allclose is True, v.checks
        assert v.checks["reference"] == "eager fp32"
        assert "eager fp32" in v.checks["rule"]
    m = r.measurement
    assert m["reference"] == "eager fp32"
    assert "cannot run in fp64" in m["reference_note"] and "Double" in m["reference_note"]
    assert any("reference: the model cannot run in fp64" in n for n in r.model_notes())
    rows = {row.name: row for row in summarize(r)}
    assert rows["aot_eager"].verdict not in ("", "incorrect", "failed")


def test_an_incorrect_verdict_names_the_reference_that_judged_it():
    from compile_studio.results.verdict import incorrect_text

    text = incorrect_text(["first call: error 3.1e-02 is above the fp32 bound 1e-05"], "eager fp32")
    assert text == (
        "the output differs from the eager fp32 reference (the model cannot run in fp64): "
        "error 3.1e-02 is above the fp32 bound 1e-05"
    )
