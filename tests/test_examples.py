"""The factory files in examples/, each run through the CLI as the README shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from compile_studio.results import load_run
from compile_studio.results.records.sweep_load import load_sweep

pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CLI = [sys.executable, "-m", "compile_studio.cli"]
QUICK = [
    "--device", "cpu", "--iterations", "6", "--warmup", "1", "--warmup-min-ms", "0",
    "--rounds", "2", "--compile-timing", "in_run", "--variants", "eager,aot_eager",
    "--no-diagnostics",
]


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def factory(name: str) -> str:
    return f"examples/{name}.py:make_model"


def only_run(folder: Path):
    (run_folder,) = [p for p in folder.iterdir() if p.is_dir()]
    return load_run(run_folder)


def test_the_batchnorm_cnn_is_correct_at_its_own_batch(tmp_path):
    p = cli("run", "--model", "custom", "--factory", factory("cnn_batchnorm"), *QUICK, "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr[-3000:]
    run = only_run(tmp_path)
    assert run.status == "complete"
    for v in run.variants.values():
        assert v.allclose is True, (v.name, v.checks)
    # the factory makes 4 images: the configuration's default 256 is not what was measured
    assert run.measurement["batch_size"] == 4
    assert run.batch() == 4
    assert "batch 4 " in p.stdout and "batch 256" not in p.stdout
    assert "inputs: 4×3×32×32 fp32" in p.stdout
    assert "_b256_" not in run.run_id


def test_the_transformer_block_with_a_dict_output_runs_both_workloads(tmp_path):
    for workload in ("inference", "training"):
        out = tmp_path / workload
        p = cli("run", "--model", "custom", "--factory", factory("transformer_dict"), *QUICK,
                "--workload", workload, "--out", str(out))
        assert p.returncode == 0, p.stderr[-3000:]
        run = only_run(out)
        assert run.status == "complete"
        assert {v.name: v.allclose for v in run.variants.values()} == {
            "eager": True, "aot_eager": True
        }, [v.checks for v in run.variants.values()]
        assert run.measurement["inputs"] == [{"shape": [2, 32], "dtype": "int64"}]


def test_a_batch_sweep_over_the_mlp_that_takes_batch_size(tmp_path):
    p = cli("sweep", "--param", "batch_size", "--values", "1,8", "--model", "custom",
            "--factory", factory("mlp_batch"), *QUICK, "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr[-3000:]
    (folder,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    record = load_sweep(folder)
    assert [pt.status for pt in record.points] == ["complete", "complete"]
    measured = []
    for pt in record.points:
        run = load_run(folder / pt.run)
        measured.append(run.measurement["batch_size"])
        assert all(v.allclose for v in run.variants.values())
    assert measured == [1, 8]


@pytest.mark.parametrize(
    "example, param, values",
    [("cnn_batchnorm", "batch_size", "1,8"), ("mlp_batch", "layers", "8,8;16,16")],
)
def test_a_sweep_over_a_field_the_factory_does_not_take_is_refused(tmp_path, example, param, values):
    p = cli("sweep", "--param", param, "--values", values, "--model", "custom",
            "--factory", factory(example), *QUICK, "--out", str(tmp_path))
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert f"does not take {param}" in p.stderr
    assert not any(tmp_path.iterdir())


def test_a_hugging_face_gpt2_with_keyword_inputs_runs_and_is_checked(tmp_path):
    pytest.importorskip("transformers", reason="transformers is in the test extras: pip install -e '.[test]'")
    p = cli("run", "--factory", factory("hf_gpt2"), *QUICK, "--batch-size", "2", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr[-3000:]
    run = only_run(tmp_path)
    assert run.status == "complete"
    assert {v.name: v.allclose for v in run.variants.values()} == {
        "eager": True, "aot_eager": True
    }, [(v.error, v.checks) for v in run.variants.values()]
    assert run.measurement["inputs"] == [
        {"name": "input_ids", "shape": [2, 32], "dtype": "int64"},
        {"name": "attention_mask", "shape": [2, 32], "dtype": "int64"},
    ]
    assert "inputs: input_ids 2×32 int64, attention_mask 2×32 int64" in p.stdout
    # the ModelOutput's logits are checked against the fp64 reference
    checks = run.variants["aot_eager"].checks
    assert checks["reference"] == "fp64" and checks["output"]["error"] < 1e-5
