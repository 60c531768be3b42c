"""bench/gpu_check.py in its CPU mode on tiny sizes, run as on a GPU machine (PYTHONPATH=app).

The GPU mode runs once, on a lent machine, with no second try: this keeps the
script's shared path (stages, real workers, the files it leaves, the checks)
working on every CI run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "gpu_check.py"

APP_RUNS = ("app_sequential", "app_training", "app_rounds")

#: Checks that hold on a CPU and must pass there.
MUST_PASS = [
    "compare.harness_floor",
    "compare.eager.replay_identical",
    "compare.aot_eager.replay_identical",
    "app_sequential.replay_identical",
    "app_rounds.replay_identical",
    "app_rounds.rounds",
    "imports.no_desktop_modules",
] + [
    f"{run}.{check}"
    for run in APP_RUNS
    for check in ("complete", "correct", "error_vs_eager", "harness_floor", "compile_time", "pipelined")
]

#: Checks of CUDA alone: skipped on the CPU, saying so.
CUDA_CHECKS = [
    "env.nvml_uuid",
    "env.l2",
    "env.sm_clock",
    "gemm.bf16_peak",
    "compare.eager.cold_vs_do_bench",
    "compare.aot_eager.cold_vs_do_bench",
] + [f"{run}.{check}" for run in APP_RUNS for check in ("device_time", "nvml_in_run")]

#: Timing comparisons: reported with their figures on the CPU, not asserted.
CPU_REPORTED = [
    f"compare.{variant}.{check}"
    for variant in ("eager", "aot_eager")
    for check in ("pipelined_vs_timer", "cold_ge_warm")
]


def test_gpu_check_runs_on_the_cpu_and_says_what_it_skipped(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "app"), PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        [sys.executable, "-u", str(SCRIPT), "--device", "cpu", "--tiny", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    output = proc.stdout[-6000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, output
    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.json", "gpu_check.log", "runs.tar.gz"]

    doc = json.loads((out / "gpu_check.json").read_text(encoding="utf-8"))
    assert doc["status"] == "passed" and doc["deadline_hit"] is False
    assert all(doc["stages"][s]["status"] == "done" for s in ("environment", "same_process", *APP_RUNS))
    checks = {c["id"]: c for c in doc["checks"]}
    assert doc["summary"]["FAIL"] == 0
    assert not [c for c in checks.values() if c["status"] == "FAIL"]

    for check_id in MUST_PASS:
        assert checks[check_id]["status"] == "PASS", checks.get(check_id)
    for check_id in CUDA_CHECKS:
        c = checks[check_id]
        assert c["status"] == "SKIP" and c["cuda_only"] and "CUDA only" in c["detail"], c
    for check_id in CPU_REPORTED:
        c = checks[check_id]
        assert c["status"] == "SKIP" and "reported, not asserted" in c["detail"], c
        assert "Timer" in c["figure"] or "cold" in c["figure"], c
    # every check CUDA alone can settle is skipped on the CPU, and every skip says why
    assert all(c["status"] == "SKIP" for c in checks.values() if c["cuda_only"])
    assert all(c["detail"] for c in checks.values() if c["status"] == "SKIP")

    # the figures behind the checks are kept
    same = doc["stages"]["same_process"]["figures"]
    assert set(same["medians"]) == {"eager", "aot_eager"}
    assert all(same["medians"][v]["timer"] > 0 for v in ("eager", "aot_eager"))
    seq = doc["stages"]["app_sequential"]["figures"]
    assert seq["measurement"]["harness_floor_ms"] > 0
    assert set(seq["variants"]) == {"eager", "aot_eager"}

    with tarfile.open(out / "runs.tar.gz") as tar:
        run_files = [n for n in tar.getnames() if n.endswith("/run.json")]
    assert len(run_files) == len(APP_RUNS)

    log = (out / "gpu_check.log").read_text(encoding="utf-8")
    assert "== app_rounds" in log and "gpu_check:" in log
    assert "0 FAIL" in proc.stdout and "exit status 0" in proc.stdout
