"""Try it: ``advise RUN --try``, the comparison job, trial.json, and where the verdicts are shown.

One real run of a user's model (a tiny MLP at batch 1 whose input window changes length from
call to call: dispatch-bound, and its size guards recompile) is tried end to end on CPU with
aot_eager — its larger-batch and dynamic-shapes suggestions together, three rounds of A, B1, B2.
The rest of the job (stops, failures, a wrong output, the order of the runs) runs on fake sessions
whose figures the test chooses, and the loading of trial.json on crafted files.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from compile_studio.cli import advise as cli_advise
from compile_studio.core.config import BenchmarkConfig
from compile_studio.core.protocol import RunStatus, VariantStatus
from compile_studio.jobs import trial as trial_job
from compile_studio.jobs.session import RunOutcome, RunSession
from compile_studio.results import RunResult, RunStore, load_run
from compile_studio.results.records.trial_load import load_trial, trials_of
from compile_studio.results.records.trial_record import TRIAL_JSON, VERDICT_WORDS, TrialDamaged
from compile_studio.results.suggestions.advice import CodeChange, Suggestion, advice_text
from compile_studio.results.suggestions.what_to_try import what_to_try

pytestmark = pytest.mark.long

#: The words a tried suggestion may get (a machine's speed decides which).
TIMED = ("faster", "slower", "cannot tell")

SCORER = '''
"""A user's scorer: a tiny MLP over a window of its input whose length is chosen per call."""
import itertools

import torch
from torch import nn

_calls = itertools.count()


@torch._dynamo.disable
def window(x):
    # 1 to 4 copies of the rows, chosen outside the graph: the compiled rest sees a new size
    return x.repeat(1 + next(_calls) % 4, 1)


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        return self.mlp(window(x)).mean(0, keepdim=True)


def make_model(batch_size: int = 1):
    return Scorer(), torch.randn(batch_size, 16)
'''

SOURCE = {
    "model": "custom", "batch_size": 1, "device": "cpu", "variants": ["eager", "aot_eager"],
    "iterations": 24, "warmup": 2, "rounds": 2, "warmup_min_ms": 0, "compile_timing": "in_run",
}


def args_for(run: Path | str, **kw) -> argparse.Namespace:
    base = {"run": str(run), "out": None, "try_": None, "rounds": None, "trust_code": False}
    return argparse.Namespace(**{**base, **kw})


def consistent(verdict: str, lo: float | None, hi: float | None) -> bool:
    """A timed verdict agrees with its recorded interval: faster lies above 1.00, slower below."""
    if verdict == "faster":
        return lo is not None and lo > 1.0
    if verdict == "slower":
        return hi is not None and hi < 1.0
    return verdict == "cannot tell"


# -- one real run, tried end to end ---------------------------------------------------------------

@pytest.fixture(scope="module")
def source(tmp_path_factory, worker_fork_server):
    """The user's run: the scorer at batch 1, diagnostics on (the evidence the rules read)."""
    from support import worker_zygote

    base = tmp_path_factory.mktemp("try")
    path = base / "scorer.py"
    path.write_text(SCORER)
    config = BenchmarkConfig.from_dict({**SOURCE, "factory": f"{path}:make_model"})
    with worker_zygote.forked_workers(worker_fork_server):
        outcome = RunSession(config, RunStore(base / "runs")).run()
    assert outcome.status == RunStatus.COMPLETE, outcome.run.message
    assert outcome.folder is not None
    return SimpleNamespace(folder=outcome.folder, store=base / "runs", factory=path)


def numbered(folder: Path) -> dict[str, int]:
    """The number ``advise`` prints before each suggestion, by rule."""
    run = load_run(folder)
    return {s.rule: k for k, s in enumerate(what_to_try(run, folder).suggestions, 1)}


@pytest.fixture(scope="module")
def tried(source, worker_fork_server):
    """``advise RUN --try <larger-batch>,<dynamic-shapes> --rounds 3 --trust-code``, as a user types it."""
    from support import worker_zygote

    rules = numbered(source.folder)
    assert "larger-batch" in rules and "dynamic-shapes" in rules, rules
    which = f"{rules['larger-batch']},{rules['dynamic-shapes']}"
    capture = SimpleNamespace()
    mp = pytest.MonkeyPatch()
    import io
    import sys

    out, err = io.StringIO(), io.StringIO()
    mp.setattr(sys, "stdout", out)
    mp.setattr(sys, "stderr", err)
    try:
        with worker_zygote.forked_workers(worker_fork_server):
            code = cli_advise.main(args_for(source.folder, try_=which, rounds=3, trust_code=True))
    finally:
        mp.undo()
    capture.code, capture.out, capture.err = code, out.getvalue(), err.getvalue()
    capture.rules = rules
    (listing,) = trials_of(source.folder)
    capture.folder, capture.record = listing.folder, listing.record
    return capture


def test_a_tried_suggestion_is_measured_in_alternating_rounds_and_judged(source, tried):
    assert tried.code == 0, tried.err
    record = tried.record
    assert record.status == "complete" and record.rounds == 3 and record.rounds_done() == 3
    assert record.source_run_id == source.folder.name
    assert Path(record.source_path) == source.folder
    # A, both Bs, A again, every round; the Bs' order turns (neither always runs right after A)
    order = [(r.round, r.role) for r in record.runs]
    assert order == [(1, "A"), (1, "B1"), (1, "B2"), (1, "A2"), (2, "A"), (2, "B2"), (2, "B1"), (2, "A2"),
                     (3, "A"), (3, "B1"), (3, "B2"), (3, "A2")]
    for r in record.runs:
        assert r.status == "complete", r
        assert (tried.folder / r.run / "run.json").is_file()
        assert r.run.split("_", 2)[1] == f"r{r.round}-{r.role}"
    batch, dyn = record.suggestions
    assert (batch.rule, batch.delta, batch.figure) == ("larger-batch", {"batch_size": 64}, "per_sample")
    assert (dyn.rule, dyn.delta, dyn.figure) == ("dynamic-shapes", {"dynamic": "true"}, "per_call")
    assert batch.a_variant == batch.b_variant == "eager" and dyn.b_variant == "aot_eager"
    assert BenchmarkConfig.from_dict(batch.config).batch_size == 64
    for s in (batch, dyn):
        assert [r.round for r in s.rounds] == [1, 2, 3]
        for r in s.rounds:
            # A's figure brackets B's: the geometric mean of A's runs before and after it
            assert r.a and r.b and r.a_end and r.ratio == pytest.approx(math.sqrt(r.a * r.a_end) / r.b)
            assert r.a_run and r.b_run and r.a_end_run and r.a_end_run != r.a_run
        assert s.verdict in TIMED, (s.verdict, s.verdict_reason)
        assert consistent(s.verdict, s.interval_lo, s.interval_hi), s
        assert s.interval_method == "rounds"
        assert s.interval_lo <= s.interval_point <= s.interval_hi
        ratios = [r.ratio for r in s.rounds]
        assert s.interval_point == pytest.approx(math.exp(sum(map(math.log, ratios)) / 3))
        # the A/A control: the largest difference between A's two runs of one round
        aa = [max(r.a / r.a_end, r.a_end / r.a) for r in s.rounds]
        assert s.aa_spread_pct == pytest.approx((max(aa) - 1) * 100)
    # per sample: A's per-call median over 1 sample, B's over 64
    run = load_run(tried.folder / batch.rounds[0].b_run)
    assert batch.rounds[0].b == pytest.approx(run.variants["eager"].stats().median / 64)
    # B compiled with dynamic=True: the note says what compile did in both
    assert "dynamic" in json.dumps(dyn.config) and dyn.config["dynamic"] == "true"
    assert all(r.note.startswith("recompiles: A ") for r in dyn.rounds), [r.note for r in dyn.rounds]


def test_the_table_prints_every_round_the_interval_the_control_and_the_verdict(tried):
    out = tried.out
    for s in tried.record.suggestions:
        assert f"{s.index}  {s.rule} ({s.delta_text()})" in out
        for r in s.rounds:
            assert f"{r.ratio:.2f}×" in out
            assert f"round {r.round}: A " in out
        assert s.interval_text() in out
        assert f"= {s.index}. {s.rule}: {s.verdict}: " in out
    assert "A/A spread" in out and "time per sample of eager" in out
    assert f"saved: {tried.folder}" in out
    # progress, run by run, on stderr
    assert "round 1/3 · A (the run's configuration): running…" in tried.err
    assert "round 3/3 · B2 (dynamic-shapes: dynamic=true): complete · time per call of aot_eager" in tried.err


def test_trial_json_holds_the_source_the_suggestions_the_rounds_and_the_verdicts(source, tried):
    doc = json.loads((tried.folder / TRIAL_JSON).read_text())
    assert doc["kind"] == "compile-studio-trial" and doc["schema_version"] == 1
    assert doc["source"]["run_id"] == source.folder.name
    assert doc["source"]["path"] == str(source.folder)
    assert doc["config"]["diagnostics"] is False and doc["config"]["compile_timing"] == "in_run"
    assert doc["config"]["batch_size"] == 1
    for s in doc["suggestions"]:
        assert {"rule", "title", "delta", "figure", "rounds", "interval_point", "interval_lo", "interval_hi",
                "aa_spread_pct", "verdict", "verdict_reason"} <= set(s)
        assert s["verdict"] in VERDICT_WORDS and len(s["rounds"]) == 3
        assert {"a", "b", "ratio", "a_run", "b_run", "a_end", "a_end_run"} <= set(s["rounds"][0])
    assert load_trial(tried.folder) == tried.record
    assert tried.folder.parent == source.folder / "trials"


def test_advise_shows_what_was_tried_and_what_it_gave(source, tried, capsys):
    assert cli_advise.main(args_for(source.folder)) == 0
    out = capsys.readouterr().out
    head, _, below = out.partition("What was tried")
    assert "1. " in head and "config: batch_size=64" in head
    assert tried.folder.name in below
    for s in tried.record.suggestions:
        assert f"{s.index}. {s.rule} ({s.delta_text()}): {s.verdict} — " in below
        assert ", ".join(f"{r.ratio:.2f}×" for r in s.rounds) in below


def test_a_code_change_is_shown_not_tried(source, tried, capsys):
    k = tried.rules["mark-dynamic"]
    assert cli_advise.main(args_for(source.folder, try_=str(k), trust_code=True)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"suggestion {k} (mark-dynamic): shown, not tried: edit your factory" in err
    assert len(trials_of(source.folder)) == 1  # nothing ran, no folder left


def test_a_received_runs_factory_runs_only_with_the_users_say_so(source, capsys, monkeypatch):
    started = []
    monkeypatch.setattr(trial_job, "new_trial", lambda *a, **k: started.append(a))
    k = numbered(source.folder)["larger-batch"]
    assert cli_advise.main(args_for(source.folder, try_=str(k))) == 2
    err = capsys.readouterr().err
    assert "names code that would run in the worker" in err and "--trust-code" in err
    assert str(source.factory) in err and "sha256" in err
    assert started == []


def test_bad_try_arguments_are_usage_errors(source, capsys):
    n = len(numbered(source.folder))
    for which in ("0", str(n + 1), "two", "1;2"):
        assert cli_advise.main(args_for(source.folder, try_=which, trust_code=True)) == 2
        assert f"give a number of the list (1–{n})" in capsys.readouterr().err
    assert cli_advise.main(args_for(source.folder, try_="1", rounds=2, trust_code=True)) == 2
    assert "--rounds must be 3–100" in capsys.readouterr().err
    assert cli_advise.main(args_for(source.folder, rounds=5)) == 2
    assert "--rounds goes with --try" in capsys.readouterr().err


def test_a_damaged_trial_json_gives_a_clear_message(source, tried, tmp_path, capsys):
    copy = tmp_path / "run"
    shutil.copytree(source.folder, copy, symlinks=True)
    broken = copy / "trials" / tried.folder.name
    (broken / TRIAL_JSON).write_text('{"kind": "compile-studio-trial", "suggestions": [')
    with pytest.raises(TrialDamaged, match=r"trial.json is damaged \(line 1"):
        load_trial(broken)
    assert cli_advise.main(args_for(copy)) == 0  # the advice itself still reads
    out = capsys.readouterr().out
    assert f"{tried.folder.name}: cannot be read: trial.json is damaged (line 1" in out


# -- trial.json from someone else -----------------------------------------------------------------

def crafted(tmp_path: Path, tried, change) -> Path:
    folder = tmp_path / "crafted"
    folder.mkdir(exist_ok=True)
    doc = json.loads((tried.folder / TRIAL_JSON).read_text())
    change(doc)
    (folder / TRIAL_JSON).write_text(json.dumps(doc))
    return folder


def test_crafted_trial_files_are_read_safely(tried, tmp_path):
    def escape(doc):
        doc["suggestions"][0]["rounds"][0]["a_run"] = "../../../etc"
        doc["runs"][0]["run"] = "/etc/passwd"
        doc["suggestions"][0]["verdict"] = "amazing"
        doc["suggestions"][1]["delta"] = {"rm -rf": 1, "batch_size": "many"}
        doc["suggestions"].append({"key": "A", "rule": "x"})

    record = load_trial(crafted(tmp_path, tried, escape))
    s = record.suggestions[0]
    assert s.rounds[0].a_run == "" and record.runs[0].run == ""
    assert s.verdict == "" and record.suggestions[1].delta == {}
    assert len(record.suggestions) == 2
    problems = " | ".join(record.load_problems)
    for words in ("is not a folder name", "verdict 'amazing' is unknown", "is not a configuration field",
                  "delta batch_size does not fit", "has no key"):
        assert words in problems, problems
    for change, words in (
        (lambda d: d.update(kind="something else"), "is not a Compile Studio trial record"),
        (lambda d: d.pop("source"), "the source run is missing"),
        (lambda d: d.update(schema_version=99), "written by a newer Compile Studio"),
        (lambda d: d.update(suggestions=[{}] * 40), "more than 32 suggestions"),
        (lambda d: d.update(rounds=10_000), "rounds must be 1–100"),
    ):
        with pytest.raises(TrialDamaged, match=words):
            load_trial(crafted(tmp_path, tried, change))


def test_links_and_huge_files_are_not_read(tried, tmp_path):
    folder = tmp_path / "linked"
    folder.mkdir()
    os.symlink(tried.folder / TRIAL_JSON, folder / TRIAL_JSON)
    with pytest.raises(TrialDamaged, match="is not a regular file"):
        load_trial(folder)
    huge = tmp_path / "huge"
    huge.mkdir()
    with open(huge / TRIAL_JSON, "wb") as fh:
        fh.truncate(5 * 1024 * 1024)
    with pytest.raises(TrialDamaged, match="larger than 4 MiB"):
        load_trial(huge)
    # a run folder whose trials/ is a link is never followed
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(tried.folder.parent, run / "trials")
    assert trials_of(run) == []
    linked_trial = tmp_path / "run2" / "trials"
    linked_trial.mkdir(parents=True)
    os.symlink(tried.folder, linked_trial / "elsewhere")
    assert trials_of(tmp_path / "run2") == []


# -- the job on fake sessions ---------------------------------------------------------------------

class FakeSession:
    """A session whose run is made up: ``ms(config, variant)`` is each variant's time per call."""

    def __init__(self, config, store, on_event, on_log, ms, during=None, allclose=None, fail=None,
                 first_call=None):
        self.config = config
        self.first_call = first_call
        self.folder = store.new_run_folder(config.slug())
        self.run_id = self.folder.name
        self.progress = SimpleNamespace(fraction=lambda: 0.5)
        self.stopped = False
        self.ms, self.during, self.allclose, self.fail = ms, during, allclose, fail

    def request_stop(self, message="stopped by the user"):
        self.stopped = True

    def run(self):
        if self.during is not None:
            self.during(self)
        run = RunResult(run_id=self.run_id, created="", config=self.config, status=RunStatus.COMPLETE,
                        measurement={"batch_size": self.config.batch_size})
        for name in self.config.variants:
            v = run.variant(name)
            v.status, v.allclose = VariantStatus.DONE, True
            if self.allclose is not None:
                v.allclose = self.allclose(self.config, name)
            if self.fail is not None and self.fail(self.config, name):
                v.status, v.error = VariantStatus.FAILED, "fullgraph=True: graph break at model.py:12"
                continue
            if self.first_call is not None:
                v.first_call_ms = self.first_call(self.config, name)
            for r in range(2):
                v.samples.extend(r * 10, "measure", [self.ms(self.config, name)] * 10, None, r)
        if self.stopped:
            run.status = RunStatus.STOPPED
        return RunOutcome(run=run, folder=self.folder, stop_requested=self.stopped)


def fake_run(tmp_path: Path, **config) -> tuple[RunResult, Path]:
    folder = tmp_path / "run"
    folder.mkdir()
    cfg = BenchmarkConfig.from_dict({"layers": "32,32,8", "batch_size": 4, "device": "cpu", "iterations": 20,
                                     "warmup": 2, "variants": ["eager", "default"], **config})
    run = RunResult(run_id="20261204-000000_mlp", created="", config=cfg, status=RunStatus.COMPLETE)
    run.source = folder
    return run, folder


def suggestion(rule: str, delta: dict, variant: str = "default", **kw) -> Suggestion:
    return Suggestion(rule=rule, title=f"try {rule}", evidence="…", tier=1, effect=None, effect_basis="",
                      source_title="", source_url="", variant=variant, delta=delta, **kw)


def factory_of(**kw):
    return lambda config, store, on_event, on_log: FakeSession(config, store, on_event, on_log, **kw)


def test_each_figure_is_the_one_the_suggestion_changes(tmp_path):
    run, folder = fake_run(tmp_path)

    def ms(config, name):  # a larger batch: each call slower, each sample cheaper; dynamic: slower
        base = 1.0 if name == "eager" else 0.8
        return base * (config.batch_size / 4) ** 0.5 * (1.25 if config.dynamic == "true" else 1.0)

    chosen = [(1, suggestion("larger-batch", {"batch_size": 16}, variant="eager")),
              (2, suggestion("dynamic-shapes", {"dynamic": "true"}))]
    trial = trial_job.new_trial(run, folder, chosen, rounds=3)
    outcome = trial_job.TrialRunner(trial, session_factory=factory_of(ms=ms)).run()
    batch, dyn = outcome.record.suggestions
    assert batch.figure_text() == "time per sample of eager"
    assert [r.ratio for r in batch.rounds] == pytest.approx([2.0] * 3)  # (1 ms / 4) / (2 ms / 16)
    assert batch.verdict == "faster" and batch.aa_spread_pct == 0
    assert dyn.figure_text() == "time per call of default"
    assert [r.ratio for r in dyn.rounds] == pytest.approx([0.8] * 3)
    assert dyn.verdict == "slower" and "0.80× [0.80–0.80] of A's speed across 3 rounds" in dyn.verdict_reason
    assert outcome.record.status == "complete" and outcome.failed is None


def test_a_machine_that_slows_down_steadily_moves_a_and_b_alike(tmp_path):
    """Every run 5 % slower than the one before: A's runs before and after B bracket it, so the
    ratio is B's own effect (1.25×), not the drift (A first alone would give 1.19×), and the
    A/A control is what A's two runs of a round differ by."""
    run, folder = fake_run(tmp_path)
    runs = []
    factory = factory_of(
        during=lambda session: runs.append(session.run_id),
        ms=lambda c, n: (0.8 if c.dynamic == "true" else 1.0) * 1.05 ** (len(runs) - 1),
    )
    trial = trial_job.new_trial(run, folder, [(1, suggestion("dynamic-shapes", {"dynamic": "true"}))], rounds=3)
    (tried,) = trial_job.TrialRunner(trial, session_factory=factory).run().record.suggestions
    assert len(runs) == 9
    assert [r.ratio for r in tried.rounds] == pytest.approx([1.25] * 3)
    assert [r.a / r.a_end for r in tried.rounds] == pytest.approx([1.05 ** -2] * 3)
    assert tried.aa_spread_pct == pytest.approx((1.05 ** 2 - 1) * 100)
    assert tried.verdict == "faster", tried.verdict_reason
    assert "A's two runs of a round differ by up to 10 %" in tried.verdict_reason


def test_a_cache_change_is_judged_on_the_first_call(tmp_path):
    """fx-graph-cache (compile_cache=warm) changes what the first call costs, not the calls after it."""
    run, folder = fake_run(tmp_path, compile_cache="cold")
    s = suggestion("fx-graph-cache", {"compile_cache": "warm"})
    trial = trial_job.new_trial(run, folder, [(1, s)], rounds=3)
    factory = factory_of(ms=lambda c, n: 1.0,
                         first_call=lambda c, n: 4000.0 if c.compile_cache == "cold" else 800.0)
    (tried,) = trial_job.TrialRunner(trial, session_factory=factory).run().record.suggestions
    assert tried.figure == "first_call" and tried.figure_text() == "first call (compile) of default"
    assert [(r.a, r.b, r.a_end) for r in tried.rounds] == [(4000.0, 800.0, 4000.0)] * 3
    assert [r.ratio for r in tried.rounds] == pytest.approx([5.0] * 3)
    assert tried.verdict == "faster" and tried.aa_spread_pct == 0


def test_an_added_mode_is_read_against_the_variant_it_would_replace(tmp_path):
    run, folder = fake_run(tmp_path)
    s = suggestion("no-cudagraphs", {"variants": ["max-autotune-no-cudagraphs"]}, variant="default")
    trial = trial_job.new_trial(run, folder, [(1, s)], rounds=3)
    ms = {"eager": 1.0, "default": 0.5, "max-autotune-no-cudagraphs": 0.4}
    outcome = trial_job.TrialRunner(trial, session_factory=factory_of(ms=lambda c, n: ms[n])).run()
    (tried,) = outcome.record.suggestions
    assert (tried.a_variant, tried.b_variant) == ("default", "max-autotune-no-cudagraphs")
    assert tried.figure_text() == "time per call: max-autotune-no-cudagraphs (B) vs default (A)"
    assert [r.ratio for r in tried.rounds] == pytest.approx([1.25] * 3)


def test_a_wrong_output_in_b_is_incorrect_whatever_its_speed(tmp_path):
    run, folder = fake_run(tmp_path)
    s = suggestion("dtype-bf16", {"dtype": "bf16"}, variant="eager")
    trial = trial_job.new_trial(run, folder, [(1, s)], rounds=3)
    factory = factory_of(ms=lambda c, n: 0.5 if c.dtype == "bf16" else 1.0,
                         allclose=lambda c, n: c.dtype != "bf16")
    (tried,) = trial_job.TrialRunner(trial, session_factory=factory).run().record.suggestions
    assert tried.verdict == "incorrect"
    assert "differs from the fp64 reference" in tried.verdict_reason and "does not count" in tried.verdict_reason
    assert all(r.b_allclose is False for r in tried.rounds)


def test_a_b_that_fails_is_said_so_and_not_run_again(tmp_path):
    run, folder = fake_run(tmp_path)
    s = suggestion("fullgraph", {"fullgraph": True})
    trial = trial_job.new_trial(run, folder, [(1, s)], rounds=3)
    factory = factory_of(ms=lambda c, n: 1.0, fail=lambda c, n: c.fullgraph and n == "default")
    outcome = trial_job.TrialRunner(trial, session_factory=factory).run()
    (tried,) = outcome.record.suggestions
    assert tried.verdict == "failed" and "graph break at model.py:12" in tried.verdict_reason
    assert [(r.round, r.role) for r in outcome.record.runs] == [(1, "A"), (1, "B1")]
    assert outcome.record.status == "complete" and "B1 not run to the end" in outcome.record.message


def test_a_stop_keeps_the_rounds_measured(tmp_path, capsys, monkeypatch):
    run, folder = fake_run(tmp_path)
    s = suggestion("dynamic-shapes", {"dynamic": "true"})
    trial = trial_job.new_trial(run, folder, [(1, s)], rounds=4)
    runner = None
    seen = []

    def during(session):
        seen.append(session.run_id)
        if len(seen) == 5:  # round 2's B (after A, B, A again, A): the user presses Ctrl+C
            threading.Thread(target=runner.request_stop).start()
            import time

            deadline = time.monotonic() + 5
            while not session.stopped and time.monotonic() < deadline:
                time.sleep(0.01)

    runner = trial_job.TrialRunner(trial, session_factory=factory_of(ms=lambda c, n: 1.0, during=during))
    outcome = runner.run()
    record = load_trial(outcome.folder)
    assert outcome.stop_requested and record.status == "stopped"
    assert "1 of 4 rounds measured" in record.message
    assert [(r.round, r.role, r.status) for r in record.runs] == [
        (1, "A", "complete"), (1, "B1", "complete"), (1, "A2", "complete"), (2, "A", "complete"),
        (2, "B1", "stopped")]
    (tried,) = record.suggestions
    assert tried.rounds[0].ratio == pytest.approx(1.0) and tried.rounds[1].ratio is None
    assert tried.verdict == "cannot tell" and "only 1 round" in tried.verdict_reason


def test_the_cli_says_when_the_runs_own_configuration_cannot_run(tmp_path, capsys, monkeypatch):
    run, folder = fake_run(tmp_path)
    s = suggestion("dynamic-shapes", {"dynamic": "true"})
    trial = trial_job.new_trial(run, folder, [(1, s)], rounds=3)

    class Refused(FakeSession):
        def run(self):
            outcome = super().run()
            outcome.run.status, outcome.run.message = RunStatus.FAILED, "the worker process died (signal 9)"
            return outcome

    runner = trial_job.TrialRunner(trial, session_factory=lambda *a: Refused(*a, ms=lambda c, n: 1.0))
    outcome = runner.run()
    assert outcome.failed == "configuration A (the run's own) failed in round 1: the worker process died (signal 9)"
    assert load_trial(outcome.folder).status == "failed"
    assert [r.role for r in outcome.record.runs] == ["A"]


def test_only_configuration_changes_are_tried(tmp_path):
    run, folder = fake_run(tmp_path)
    code = suggestion("item-break", {}, code=CodeChange("/u/model.py", 18, "s = h.item()", "s = h"))
    assert trial_job.not_tried_reason(code).startswith("shown, not tried: edit your factory or model code at model.py:18")
    batch = suggestion("larger-batch", {})
    assert "your factory makes the batch itself" in trial_job.not_tried_reason(batch)
    from compile_studio.core.config import ConfigError

    with pytest.raises(ConfigError, match="shown, not tried"):
        trial_job.new_trial(run, folder, [(1, code)])
    with pytest.raises(ConfigError, match="must be 3–100"):
        trial_job.new_trial(run, folder, [(1, suggestion("fullgraph", {"fullgraph": True}))], rounds=2)
    assert not (folder / "trials").exists() or not any((folder / "trials").iterdir())
    assert "nothing to suggest" in advice_text([])


# -- shown where the verdict is -------------------------------------------------------------------

def test_the_report_lists_what_to_try_with_each_verdict(source, tried):
    from compile_studio.results.report.run_export import markdown_report

    report = markdown_report(load_run(source.folder))
    section = report.split("### What to try", 1)[1]
    rules = tried.rules
    for s in tried.record.suggestions:
        line = next(x for x in section.splitlines() if x.startswith(f"{rules[s.rule]}. "))
        assert f"tried: **{s.verdict}** (" in line and s.interval_text() in line, line
    mark = next(x for x in section.splitlines() if x.startswith(f"{rules['mark-dynamic']}. "))
    assert "shown, not tried" in mark


def test_the_why_tab_lists_what_to_try_with_each_verdict(source, tried, qtbot):
    from compile_studio.gui.why_view import WhyView

    view = WhyView()
    qtbot.addWidget(view)
    view.show_folder(load_run(source.folder), source.folder)
    table = view.try_table
    assert table.rowCount() == len(tried.rules)
    for s in tried.record.suggestions:
        row = tried.rules[s.rule] - 1
        assert table.item(row, 2).text() == f"config: {s.delta_text()}"
        assert table.item(row, 3).text().startswith(f"{s.verdict} — {s.figure_text()}: {s.interval_text()}")
        assert "round 1: A " in table.item(row, 3).toolTip()
    assert "shown, not tried" in table.item(tried.rules["mark-dynamic"] - 1, 2).text()


def test_try_it_from_the_why_tab_runs_the_comparison_off_the_gui_thread(source, tried, qtbot, tmp_path):
    from compile_studio.gui.why_view import WhyView

    folder = tmp_path / "run"
    shutil.copytree(source.folder, folder, ignore=shutil.ignore_patterns("trials"))
    view = WhyView()
    qtbot.addWidget(view)
    asked, threads = [], []
    view.trials.consent.ask = lambda refs, where: asked.append(([r.what for r in refs], where)) or True

    def ms(config, name):
        threads.append(threading.get_ident())
        return 1.0  # per call, whatever the batch: a batch of 64 is 64 times cheaper per sample

    view.trials.session_factory = factory_of(ms=ms)
    view.show_folder(load_run(folder), folder)
    view.try_table.selectRow(tried.rules["mark-dynamic"] - 1)
    assert not view.try_button.isEnabled()  # a code change: shown, not tried
    view.try_table.selectRow(tried.rules["larger-batch"] - 1)
    assert view.try_button.isEnabled() and view.try_button.text() == "Try it"
    view.try_button.click()
    assert asked == [(["factory"], f"the run {folder.name}")]  # the run's factory: the user's say-so
    assert view.trials.trial_thread is not None and view.try_button.text() == "Stop trying"
    qtbot.waitUntil(lambda: view.trials.trial_thread is None, timeout=60_000)
    assert threads and threading.get_ident() not in threads
    (listing,) = trials_of(folder)
    assert listing.record.status == "complete" and listing.record.rounds_done() == 3
    row = tried.rules["larger-batch"] - 1
    assert view.try_table.item(row, 3).text().startswith("faster — time per sample of eager: 64.00×")
    assert "Tried (complete): " in view.try_note.text()


def test_the_factory_is_the_one_the_run_used_or_its_copy_in_the_run_folder(tmp_path):
    import hashlib

    code = b"import torch\ndef make_model(batch_size=1):\n    return torch.nn.Linear(4, 4), torch.randn(batch_size, 4)\n"
    original = tmp_path / "model.py"
    original.write_bytes(code)
    run, folder = fake_run(tmp_path, model="custom", factory=f"{original}:make_model")
    (folder / "factory").mkdir()
    (folder / "factory" / "model.py").write_bytes(code)
    run.measurement = {"factory_file": str(original), "factory_sha256": hashlib.sha256(code).hexdigest(),
                       "factory_copy": "factory/model.py"}
    config, notes = trial_job.trial_config(run, folder)
    assert config.factory == f"{original}:make_model" and not any("factory" in n for n in notes)
    assert config.diagnostics is False and config.compile_timing == "in_run"
    original.write_bytes(code + b"# edited since\n")  # changed since the run: its own copy runs
    config, notes = trial_job.trial_config(run, folder)
    assert config.factory == f"{(folder / 'factory' / 'model.py').resolve()}:make_model"
    assert any("the run's own copy, factory/model.py" in n for n in notes)
    (folder / "factory" / "model.py").unlink()
    config, notes = trial_job.trial_config(run, folder)
    assert config.factory == f"{original}:make_model" and any("sha256 does not match" in n for n in notes)


def test_closing_the_window_stops_a_comparison_and_keeps_its_rounds(source, tried, qtbot, tmp_path):
    """The window closes while Try it runs: the run going on stops, no thread is left, and
    trial.json says why, with the runs done before it kept."""
    import time

    from support.gui_helpers import open_window

    folder = tmp_path / "run"
    shutil.copytree(source.folder, folder, ignore=shutil.ignore_patterns("trials"))
    window = open_window(qtbot)
    view = window.why_view
    view.trials.consent.ask = lambda refs, where: True
    started = []

    def hold_until_stopped(session):  # round 1's B: measuring until the window stops it
        started.append(session.run_id)
        if len(started) == 2:
            deadline = time.monotonic() + 60
            while not session.stopped and time.monotonic() < deadline:
                time.sleep(0.01)

    view.trials.session_factory = factory_of(ms=lambda c, n: 1.0, during=hold_until_stopped)
    view.show_folder(load_run(folder), folder)
    assert view.try_suggestion(tried.rules["larger-batch"])
    thread = view.trials.trial_thread
    qtbot.waitUntil(lambda: len(started) == 2, timeout=30_000)
    window.close()
    assert thread.isFinished()
    (listing,) = trials_of(folder)
    record = listing.record
    assert record.status == "stopped"
    assert record.message.startswith("the window was closed during the comparison")
    assert [(r.round, r.role, r.status) for r in record.runs] == [(1, "A", "complete"), (1, "B1", "stopped")]
