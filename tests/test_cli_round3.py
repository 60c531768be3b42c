"""The CLI's small answers (real sweeps through real workers, a real CLI main): a sweep with
points not run prints the command that runs them; ``sweep --resume latest`` resumes the newest
sweep; one point is "1 point"; ``advise --try`` prints each round's ratio once, as its table has it."""

from __future__ import annotations

import contextlib
import io
import re
import shlex

import pytest

from compile_studio.cli import advise as cli_advise
from compile_studio.cli import main as cli_main
from compile_studio.cli.sweep_show import default_sweep_root
from compile_studio.jobs import trial as trial_job
from compile_studio.jobs.sweep import new_sweep
from compile_studio.jobs.sweep_spec import SweepSpec, describe_points
from compile_studio.results.records.sweep_load import load_sweep
from compile_studio.results.suggestions.what_to_try import trial_table
from support import worker_zygote
from test_advice_try import factory_of, fake_run, suggestion
from test_sweep import sweep_base


def _cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(args)
    return code, out.getvalue(), err.getvalue()


def test_a_sweep_with_points_not_run_names_the_command_and_resume_latest_runs_them(worker_fork_server):
    root = default_sweep_root()
    older = new_sweep(SweepSpec.parse("batch_size", "2,3"), sweep_base(), root)
    newest = new_sweep(SweepSpec.parse("batch_size", "4"), sweep_base(), root)
    assert newest.path.name > older.path.name
    assert describe_points(load_sweep(newest.path)) == "1 point: 1 pending"

    # show: what is missing and the command that runs it, ready to paste
    code, out, _ = _cli(["show", str(newest.path)])
    assert code == 0
    [hint] = [line for line in out.splitlines() if "--resume" in line]
    assert hint.startswith("to run the 1 missing point: compile-studio-cli sweep --resume ")
    assert shlex.split(hint.split(": ", 1)[1])[-1] == str(newest.path)
    assert "1 points" not in out

    # latest is the newest sweep; latest~1 the one before; latest~2 none
    code, _, err = _cli(["sweep", "--resume", "latest~2"])
    assert code == 2 and "no sweep latest~2" in err and "2 sweeps there" in err
    with worker_zygote.forked_workers(worker_fork_server):
        code, out, err = _cli(["sweep", "--resume", "latest", "--quiet"])
    assert code == 0, err
    assert [p.status for p in load_sweep(newest.path).points] == ["complete"]
    assert [p.status for p in load_sweep(older.path).points] == ["pending", "pending"]
    assert "--resume" not in out  # nothing left to run


def test_ctrl_c_on_a_sweep_prints_the_command_that_runs_the_rest(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    out_root = tmp_path / "sweeps"
    proc = subprocess.Popen(
        [sys.executable, "-m", "compile_studio.cli", "sweep", "--param", "iterations", "--values", "10,1000000,20",
         "--layers", "32,32,8", "--device", "cpu", "--warmup", "2", "--rounds", "1", "--warmup-min-ms", "0",
         "--variants", "eager", "--no-diagnostics", "--out", str(out_root)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        folders = list(out_root.iterdir()) if out_root.exists() else []
        if folders and (folders[0] / "sweep.json").exists():
            record = load_sweep(folders[0])
            if record.points[1].status == "running":
                break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert re.search(r"2 points not run \(resume runs them\)", stdout), stdout
    [hint] = [line for line in stdout.splitlines() if "--resume" in line and "compile-studio-cli" in line]
    assert hint == f"to run the 2 missing points: compile-studio-cli sweep --resume {shlex.quote(str(folders[0]))}"


def test_advise_try_prints_each_rounds_ratio_once_as_the_table_has_it(tmp_path, monkeypatch):
    """A's runs before and after B differ (the machine drifts): the ratio of a round is known
    only after A's second run; the line printed then holds the table's figure."""
    run, folder = fake_run(tmp_path)
    runs: list[str] = []
    factory = factory_of(
        during=lambda session: runs.append(session.run_id),
        ms=lambda c, n: (0.8 if c.dynamic == "true" else 1.0) * 1.07 ** (len(runs) - 1),
    )
    trial = trial_job.new_trial(run, folder, [(1, suggestion("dynamic-shapes", {"dynamic": "true"}))], rounds=3)
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    record = trial_job.TrialRunner(trial, session_factory=factory, on_run=cli_advise._progress).run().record
    monkeypatch.undo()
    printed = re.findall(r"→ (\d+\.\d\d×)", err.getvalue())
    table = trial_table(record)
    (tried,) = record.suggestions
    assert printed == [f"{r.ratio:.2f}×" for r in tried.rounds], err.getvalue()
    for ratio in printed:
        assert ratio in table
    # while B ran, its figure alone: no ratio that the table would not hold
    assert "(the ratio follows A's run again)" in err.getvalue()


@pytest.mark.parametrize("n, words", [(1, "1 point"), (3, "3 points")])
def test_one_point_is_a_point(tmp_path, n, words):
    folder = new_sweep(SweepSpec.parse("batch_size", ",".join(str(k + 1) for k in range(n))), sweep_base(), tmp_path)
    assert describe_points(load_sweep(folder.path)).startswith(f"{words}: ")
