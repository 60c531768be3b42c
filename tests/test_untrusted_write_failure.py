"""A run folder that stops being writable mid-run: the run stops, keeps what it measured, says why."""

from __future__ import annotations

import errno
import sys

from compile_studio.cli import commands as cli
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunStore
from compile_studio.results.storage.run_files import RunWriter


def _fail_after(monkeypatch, calls: int, err: int) -> None:
    """RunWriter.append_samples raises ``err`` from its ``calls``-th call on (as a full disk does)."""
    original = RunWriter.append_samples
    seen = [0]

    def append(self, *args, **kwargs):
        seen[0] += 1
        if seen[0] >= calls:
            raise OSError(err, "No space left on device" if err == errno.ENOSPC else "gone")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(RunWriter, "append_samples", append)


def test_a_full_disk_mid_run_keeps_the_samples_in_memory(tmp_path, tiny_config, monkeypatch):
    _fail_after(monkeypatch, 3, errno.ENOSPC)
    tiny_config.update(iterations=2000, rounds=1)
    config = BenchmarkConfig.from_dict(tiny_config)
    outcome = RunSession(config, RunStore(tmp_path)).run()
    assert outcome.status == "failed"
    assert outcome.write_error and outcome.write_error.startswith("the disk is full at")
    assert "kept in memory" in outcome.run.message
    eager = outcome.run.variants["eager"]
    assert len(eager.samples) > 0  # what arrived after the failure is still there


def test_the_cli_prints_the_table_from_memory_and_exits_3(tmp_path, tiny_config, monkeypatch, capsys):
    _fail_after(monkeypatch, 2, errno.ENOSPC)
    config = tmp_path / "c.json"
    config.write_text(BenchmarkConfig.from_dict({**tiny_config, "rounds": 1}).to_json())
    code = cli.main(["run", "--quiet", "--out", str(tmp_path / "runs"), "--config", str(config)])
    out = capsys.readouterr()
    assert code == cli.EXIT_FAILED
    assert "eager" in out.out and "not saved in full: the disk is full" in out.out
    assert "Traceback" not in out.err
    assert sys.exc_info() == (None, None, None)
