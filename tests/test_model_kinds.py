"""Model kinds and the user's own factory, with real workers."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pytest
import torch

from compile_studio.cli import commands as cli
from compile_studio.core.config import BenchmarkConfig
from compile_studio.engine.workloads import build_workload, count_flops
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunStore, load_run

pytestmark = pytest.mark.long

SMALL = {
    "batch_size": 2, "device": "cpu", "iterations": 6, "warmup": 1, "warmup_min_ms": 0,
    "rounds": 2, "compile_timing": "in_run", "variants": ["eager", "aot_eager"],
    "layers": "16,32,32", "transformer": "32,4,64,8,1", "cnn": "8,3,4,8",
}

FACTORY = '''
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 32)
        self.proj = nn.Linear(32, 8)

    def forward(self, tokens, scale):
        return self.proj(self.emb(tokens)) * scale


def make_model():
    tokens = torch.randint(0, 100, (4, 16))  # token ids stay integers
    return Tagger(), (tokens, torch.tensor(0.5)), lambda out: out.square().sum()
'''


def run(tmp_path: Path, **overrides):
    config = BenchmarkConfig.from_dict({**SMALL, **overrides})
    return RunSession(config, RunStore(tmp_path / "runs")).run()


@pytest.mark.parametrize("kind", ["mlp", "mlp_ln_residual", "transformer", "cnn"])
def test_each_model_kind_runs_and_is_correct(tmp_path, kind):
    outcome = run(tmp_path, model=kind)
    assert outcome.run.status == "complete", outcome.run.message
    for v in outcome.run.variants.values():
        assert v.allclose is True, (kind, v.name, v.checks)
        assert v.samples.count("measure") == SMALL["iterations"]
    assert outcome.run.measurement["flops_per_call"] > 0


@pytest.mark.inductor
def test_inductor_compiles_the_transformer_and_the_cnn(tmp_path):
    for kind in ("transformer", "cnn"):
        outcome = run(tmp_path / kind, model=kind, variants=["eager", "default"])
        assert outcome.run.status == "complete", outcome.run.message
        assert outcome.run.variants["default"].allclose is True


def test_flop_counts_match_the_analytic_ones():
    mlp = BenchmarkConfig(layers="64,128,10", batch_size=8)
    assert count_flops(build_workload(mlp), training=False) == mlp.flops_per_call()
    tf = BenchmarkConfig(model="transformer", transformer="64,4,256,32,2", batch_size=2)
    d, ffn, seq, layers, b = 64, 256, 32, 2, 2
    analytic = layers * b * (2 * seq * d * 3 * d + 2 * 2 * seq * seq * d + 2 * seq * d * d
                             + 2 * 2 * seq * d * ffn)
    counted = count_flops(build_workload(tf), training=False)
    assert counted == pytest.approx(analytic, rel=0.10)


def test_a_custom_factory_with_token_ids_a_tuple_and_its_own_loss(tmp_path):
    path = tmp_path / "mymodel.py"
    path.write_text(FACTORY)
    outcome = run(tmp_path, model="custom", factory=f"{path}:make_model", workload="training")
    run_ = outcome.run
    assert run_.status == "complete", run_.message
    assert all(v.allclose for v in run_.variants.values()), [v.checks for v in run_.variants.values()]
    copy = outcome.folder / "factory" / "mymodel.py"
    assert copy.read_text() == FACTORY
    assert run_.measurement["factory_sha256"] == hashlib.sha256(FACTORY.encode()).hexdigest()
    assert load_run(outcome.folder).measurement["factory_copy"] == "factory/mymodel.py"
    workload = build_workload(BenchmarkConfig(model="custom", factory=f"{path}:make_model"))
    assert workload.inputs[0].dtype == torch.int64


@pytest.mark.parametrize(
    ("source", "words"),
    [
        (None, "does not exist"),
        ("def make_model(:\n", "syntax error in"),
        ("def make_model():\n    raise RuntimeError('no weights here')\n", "raised RuntimeError: no weights here"),
        ("def make_model():\n    return 3\n", "must return (model, inputs"),
        ("import torch\ndef make_model():\n    return torch.nn.Linear(2, 2), 'x'\n", "a mapping of keyword inputs"),
    ],
)
def test_a_bad_factory_is_a_configuration_problem_in_the_cli(tmp_path, capfd, source, words):
    path = tmp_path / "bad.py"
    if source is not None:
        path.write_text(source)
    # the CLI's own entry point (``python -m compile_studio.cli`` exits with what it returns),
    # in this process: the model is built in the worker it starts
    code = cli.main(
        ["run", "--quiet", "--out", str(tmp_path / "runs"),
         "--model", "custom", "--factory", f"{path}:make_model", "--device", "cpu",
         "--iterations", "3", "--warmup", "0", "--rounds", "1", "--variants", "eager"]
    )
    stderr = capfd.readouterr().err
    assert code == 2, stderr
    assert "factory:" in stderr and words in stderr
    assert "Traceback" not in stderr.split("The configuration cannot run:")[-1]


def test_factory_example_in_the_docs_runs(tmp_path):
    page = (Path(__file__).parents[1] / "docs" / "models.md").read_text()
    example = page.split("<!-- factory example -->")[1].split("```python")[1].split("```")[0]
    path = tmp_path / "readme_model.py"
    path.write_text(textwrap.dedent(example))
    workload = build_workload(BenchmarkConfig(model="custom", factory=f"{path}:make_model"))
    out = workload.model(*workload.inputs)
    assert isinstance(out, torch.Tensor)
