"""Code runs only as agreed: every job asks about the code of every configuration it will run
(a sweep's points, a trial's tried configurations), and what runs is the bytes agreed to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from compile_studio.cli import commands as cli
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.sweep import new_sweep, sweep_configs
from compile_studio.jobs.sweep_spec import SweepSpec
from compile_studio.jobs.trust import code_of_configs
from compile_studio.results.suggestions.advice import Suggestion
from support.untrusted_helpers import saved_run

CLI = [sys.executable, "-m", "compile_studio.cli"]


def marker_code(tmp_path: Path, name: str = "their_model") -> tuple[Path, Path]:
    """A factory file that leaves a marker file behind if it is ever imported."""
    marker = tmp_path / f"{name}.ran"
    code = tmp_path / f"{name}.py"
    code.write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "import torch\n\n"
        "def make_model():\n"
        "    return torch.nn.Linear(8, 8), (torch.randn(2, 8),)\n"
    )
    return code, marker


def received_base(code: Path) -> BenchmarkConfig:
    """A base configuration that names a factory but does not run it (model mlp)."""
    return BenchmarkConfig.from_dict({
        "layers": "8,8", "device": "cpu", "variants": ["eager"], "iterations": 5, "warmup": 1,
        "rounds": 1, "factory": f"{code}:make_model", "batch_size": 2,
    })


# -- 1: every configuration a job runs ----------------------------------------------------

def test_a_received_sweep_over_model_asks_about_the_factory_a_point_runs(tmp_path):
    code, marker = marker_code(tmp_path)
    folder = new_sweep(SweepSpec.parse("model", "mlp,custom"), received_base(code), tmp_path / "sweeps")
    assert [r.path for r in code_of_configs(sweep_configs(folder.record))] == [str(code.resolve())]
    p = subprocess.run(
        [*CLI, "sweep", "--resume", str(folder.path), "--quiet"], capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=120,
    )
    assert p.returncode == cli.EXIT_BAD_CONFIG, p.stderr
    assert str(code.resolve()) in p.stderr and "sha256" in p.stderr and "--trust-code" in p.stderr
    assert not marker.exists()


def test_a_new_sweep_from_a_config_file_asks_about_the_points_code(tmp_path, capsys):
    code, marker = marker_code(tmp_path)
    config = tmp_path / "shared.json"
    config.write_text(json.dumps({"config": received_base(code).to_dict()}))
    rc = cli.main(["sweep", "--config", str(config), "--param", "model", "--values", "mlp,custom",
                   "--out", str(tmp_path / "sweeps"), "--quiet"])
    assert rc == cli.EXIT_BAD_CONFIG
    assert str(code.resolve()) in capsys.readouterr().err
    assert not marker.exists()


def test_a_trial_whose_tried_configuration_names_a_factory_asks_first(tmp_path, monkeypatch, capsys):
    """Configuration B of a trial makes the run's (unused) factory the model: asked about."""
    from compile_studio.cli import advise as advise_cli

    code, marker = marker_code(tmp_path)
    folder = saved_run(tmp_path / "runs")
    doc = json.loads((folder / "run.json").read_text())
    doc["config"].update(factory=f"{code}:make_model", device="cpu", layers="8,8")
    (folder / "run.json").write_text(json.dumps(doc))
    custom = Suggestion(
        rule="custom-model", title="try your factory", evidence="e", tier=1, effect=None,
        effect_basis="", source_title="", source_url="", variant="eager", delta={"model": "custom"},
    )
    monkeypatch.setattr(advise_cli, "advise", lambda facts: [custom])
    monkeypatch.setattr(sys, "stdin", open(os.devnull))
    rc = cli.main(["advise", str(folder), "--try", "1"])
    err = capsys.readouterr().err
    assert rc == cli.EXIT_BAD_CONFIG, err
    assert str(code.resolve()) in err and "--trust-code" in err
    assert not marker.exists()
    assert not (folder / "trials").exists() or not any((folder / "trials").iterdir())


# -- 2: what was agreed is what runs -------------------------------------------------------

class _AnswerAfterRewrite:
    """A terminal whose user says yes, while someone rewrites the file between prompt and answer."""

    def __init__(self, path: Path, text: str):
        self.path, self.text = path, text

    def isatty(self) -> bool:
        return True

    def readline(self, limit: int = -1) -> str:
        self.path.write_text(self.text)
        return "y\n"


def test_a_file_rewritten_between_the_prompt_and_the_run_is_a_new_question(tmp_path, monkeypatch, capsys):
    code, marker = marker_code(tmp_path)
    evil = tmp_path / "evil.ran"
    config = tmp_path / "shared.json"
    config.write_text(json.dumps({"config": {**received_base(code).to_dict(), "model": "custom"}}))
    monkeypatch.setattr(sys, "stdin", _AnswerAfterRewrite(code, f"open({str(evil)!r}, 'w').write('x')\n"))
    rc = cli.main(["run", "--config", str(config), "--out", str(tmp_path / "runs"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == cli.EXIT_BAD_CONFIG, err
    assert "changed after it was shown" in err
    assert not evil.exists() and not marker.exists()
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_the_agreed_bytes_run_though_the_file_changes_after_the_yes(tmp_path):
    from compile_studio.jobs.session import RunSession
    from compile_studio.jobs.trust import agree
    from compile_studio.results import RunStore, load_run

    code, marker = marker_code(tmp_path)
    config = dataclasses_replace(received_base(code), model="custom")
    refs = code_of_configs([config])
    agreement = agree(refs)
    evil = tmp_path / "evil.ran"
    code.write_text(f"open({str(evil)!r}, 'w').write('x')\n" + code.read_text())  # after the yes
    outcome = RunSession(agreement.apply(config), RunStore(tmp_path / "runs")).run()
    assert outcome.status == "complete", outcome.run.message
    assert marker.exists() and not evil.exists()
    run = load_run(outcome.folder)
    assert run.measurement["factory_sha256"] == refs[0].sha256
    copy = Path(run.config.factory.rsplit(":", 1)[0])
    assert copy.parent.name == f"sha256-{refs[0].sha256}"
    assert (copy.parent.stat().st_mode & 0o077) == 0  # a private folder


def test_an_agreed_copy_whose_bytes_changed_is_not_imported(tmp_path):
    from compile_studio.jobs.session import RunSession
    from compile_studio.jobs.trust import agree
    from compile_studio.results import RunStore

    code, marker = marker_code(tmp_path)
    config = dataclasses_replace(received_base(code), model="custom")
    agreement = agree(code_of_configs([config]))
    copy = Path(agreement.copies[str(code.resolve())])
    copy.chmod(0o600)
    evil = tmp_path / "evil.ran"
    copy.write_text(f"open({str(evil)!r}, 'w').write('x')\n")
    outcome = RunSession(agreement.apply(config), RunStore(tmp_path / "runs")).run()
    assert outcome.status == "failed"
    assert "not the code agreed to" in (outcome.run.message + " ".join(outcome.stderr_tail)
                                        + " ".join(str(v.error) for v in outcome.run.variants.values()))
    assert not evil.exists() and not marker.exists()


def dataclasses_replace(config: BenchmarkConfig, **changes) -> BenchmarkConfig:
    import dataclasses

    return dataclasses.replace(config, **changes)
