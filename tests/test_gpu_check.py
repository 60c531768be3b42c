"""bench/gpu_check in its CPU mode on tiny sizes, run as on a GPU machine (PYTHONPATH=app).

The GPU mode runs once, on a lent machine, with no second try: this keeps the
check's shared path (stages, real workers, the files it leaves, the checks)
working on every CI run, shows that it runs without numpy (the stages that
need it skipped, saying so), and tries the parts that read the machine —
NVML through ctypes, the processes under /proc — on stand-ins.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
import types
from pathlib import Path

import pytest

pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parent.parent
#: The package folder: ``python3 bench/gpu_check …`` runs it.
SCRIPT = ROOT / "bench" / "gpu_check"

APP_RUNS = ("app_rounds", "app_sequential", "app_training")
INFERENCE_RUNS = ("app_rounds", "app_sequential")
LAUNCH_MODELS = ("app_model", "seed_mlp")
LAUNCH_VARIANTS = ("eager", "default", "reduce-overhead")

#: Checks that hold on a CPU and must pass there.
MUST_PASS = [
    "compare.harness_floor",
    "compare.eager.replay_identical",
    "compare.aot_eager.replay_identical",
    "app_sequential.replay_identical",
    "app_rounds.replay_identical",
    "app_rounds.rounds",
    "app_training.params_drift",
    "app_training.params_judged_or_said",
    "imports.no_desktop_modules",
    "fixed.cold_l2_order",
    "fixed.lowp_training.params_judged_or_said",
    "fixed.startup_outside_compile",
    "fixed.sweep_order",
    "fixed.triton_recorded",
] + [
    f"{run}.{check}"
    for run in APP_RUNS
    for check in ("complete", "correct", "error_vs_eager", "harness_floor", "compile_time", "pipelined")
]

#: Checks of CUDA alone: skipped on the CPU, saying so.
CUDA_CHECKS = (
    [
        "env.nvml_uuid",
        "env.l2",
        "env.sm_clock",
        "gemm.bf16_peak",
        "compare.eager.cold_vs_do_bench",
        "compare.aot_eager.cold_vs_do_bench",
        "cudagraph_skip.recorded",
        "app_rounds.clock_warm_start",
        "app_rounds.clock_steady",
        "tf32_probe.not_incorrect",
        "fixed.uncovered_reported",
        "fixed.app_nvml",
    ]
    + [f"{run}.{check}" for run in APP_RUNS for check in ("device_time", "nvml_in_run")]
    + [f"{run}.cudagraph_memory" for run in INFERENCE_RUNS]
    + [
        f"launch.{model}.{variant}.{check}"
        for model in LAUNCH_MODELS
        for variant in LAUNCH_VARIANTS
        for check in ("kernels_le_device", "device_matches_kernels")
    ]
)

#: Timing comparisons: reported with their figures on the CPU, not asserted.
CPU_REPORTED = [
    f"compare.{variant}.{check}"
    for variant in ("eager", "aot_eager")
    for check in ("pipelined_vs_timer", "cold_ge_warm")
]

#: Stages of CUDA alone: recorded as skipped on the CPU.
CUDA_STAGES = ("gemm", "launch_bound", "cudagraph_skip", "tf32_probe")

#: Runs the check with numpy hidden as a machine without it hides it: ``import numpy``
#: raises ModuleNotFoundError and ``importlib.util.find_spec("numpy")`` says None
#: (torch probes numpy both ways on import).
NO_NUMPY_RUNNER = """
import runpy, sys
sys.modules["numpy"] = None
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT / "app"), PYTHONUNBUFFERED="1")


def _package(module: str) -> types.ModuleType:
    """``bench.gpu_check.<module>``, imported from the checkout."""
    added = str(ROOT) not in sys.path
    if added:
        sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module(f"bench.gpu_check.{module}")
    finally:
        if added:
            sys.path.remove(str(ROOT))


def test_gpu_check_runs_on_the_cpu_and_says_what_it_skipped(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-u", str(SCRIPT), "--device", "cpu", "--tiny", "--out", str(out)],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=280,
    )
    output = proc.stdout[-6000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, output
    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.json", "gpu_check.log", "runs.tar.gz"]

    doc = json.loads((out / "gpu_check.json").read_text(encoding="utf-8"))
    assert doc["status"] == "passed" and doc["deadline_hit"] is False
    stages = doc["stages"]
    assert all(stages[s]["status"] == "done" for s in ("environment", "same_process", *APP_RUNS))
    assert all(stages[s]["status"] == "skipped" and "CUDA only" in stages[s]["reason"]
               for s in CUDA_STAGES)
    assert list(stages).index("app_rounds") < list(stages).index("app_sequential")
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
    env = doc["environment"]
    assert isinstance(env["inductor_compile_threads"], int) and env["cpu_affinity"]
    same = stages["same_process"]["figures"]
    assert set(same["medians"]) == {"eager", "aot_eager"}
    assert all(same["medians"][v]["timer"] > 0 for v in ("eager", "aot_eager"))
    seq = stages["app_sequential"]["figures"]
    assert seq["measurement"]["harness_floor_ms"] > 0
    assert set(seq["variants"]) == {"eager", "aot_eager"}
    assert seq["config"]["compile_cache"] == "warm"
    assert stages["app_rounds"]["figures"]["config"]["compile_cache"] == "warm"
    drift = stages["app_training"]["figures"]["variants"]["aot_eager"]["checks"]["params_drift"]
    assert isinstance(drift, float)
    for run in APP_RUNS:
        figs = stages[run]["figures"]
        worker = figs["processes"]["worker"]
        assert "compile_studio.worker" in worker["cmd"] and worker["cpus"], worker
        assert isinstance(figs["compile_threads"]["gpu_check"], int)

    with tarfile.open(out / "runs.tar.gz") as tar:
        run_files = [n for n in tar.getnames() if n.endswith("/run.json")]
    assert len(run_files) == len(APP_RUNS)

    log = (out / "gpu_check.log").read_text(encoding="utf-8")
    assert "== app_rounds" in log and "gpu_check:" in log
    assert "0 FAIL" in proc.stdout and "exit status 0" in proc.stdout


def test_gpu_check_runs_without_numpy_and_skips_what_needs_it(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", NO_NUMPY_RUNNER, str(SCRIPT),
         "--device", "cpu", "--tiny", "--out", str(out)],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.json", "gpu_check.log"]
    doc = json.loads((out / "gpu_check.json").read_text(encoding="utf-8"))
    assert doc["status"] == "passed" and doc["environment"]["numpy"] == "not installed"
    stages, checks = doc["stages"], {c["id"]: c for c in doc["checks"]}
    # the stages that need numpy (the results layer) are skipped, saying why ...
    for run in APP_RUNS:
        assert stages[run] == {"status": "skipped", "reason": "numpy is not installed"}
        assert checks[f"{run}.ran"]["status"] == "SKIP"
        assert checks[f"{run}.ran"]["detail"] == "numpy is not installed"
    assert not [c for c in checks if c.startswith("app_") and not c.endswith(".ran")]
    # ... and the others run
    assert stages["environment"]["status"] == "done"
    assert stages["same_process"]["status"] == "done"
    assert stages["imports"]["status"] == "done"
    for check_id in ("compare.harness_floor", "compare.eager.replay_identical",
                     "compare.aot_eager.replay_identical", "imports.no_desktop_modules"):
        assert checks[check_id]["status"] == "PASS", checks[check_id]
    assert doc["summary"]["FAIL"] == 0


# -- NVML through ctypes, on a stand-in for libnvidia-ml -------------------------------------


def _fake_nvml(uuids: dict[int, bytes], by_uuid: bool = False) -> types.SimpleNamespace:
    """Functions with libnvidia-ml's names and C calling shape (ctypes arguments, int return)."""

    def out(arg, value):
        arg._obj.value = value
        return 0

    def get_uuid(handle, buf, length):
        raw = uuids[handle.value] + b"\0"
        assert len(raw) <= length.value
        ctypes.memmove(buf, raw, len(raw))
        return 0

    def handle_by_uuid(uuid, handle):
        if not by_uuid:
            return 13  # NVML_ERROR_FUNCTION_NOT_FOUND
        index = next(i for i, u in uuids.items() if u == uuid.value)
        return out(handle, index)

    def version(buf, length):
        ctypes.memmove(buf, b"570.86.15\0", 10)
        return 0

    return types.SimpleNamespace(
        nvmlInit_v2=lambda: 0,
        nvmlShutdown=lambda: 0,
        nvmlErrorString=lambda code: b"Function Not Found",
        nvmlDeviceGetCount_v2=lambda count: out(count, len(uuids)),
        nvmlDeviceGetHandleByIndex_v2=lambda index, handle: out(handle, 100 + index.value),
        nvmlDeviceGetHandleByUUID=handle_by_uuid,
        nvmlDeviceGetUUID=get_uuid,
        nvmlDeviceGetClockInfo=lambda h, kind, v: out(v, 1980 if kind.value == 1 else 2619),
        nvmlDeviceGetMaxClockInfo=lambda h, kind, v: out(v, 1980),
        nvmlDeviceGetTemperature=lambda h, sensor, v: out(v, 41),
        nvmlDeviceGetPowerUsage=lambda h, v: out(v, 123_000),
        nvmlDeviceGetEnforcedPowerLimit=lambda h, v: out(v, 700_000),
        nvmlDeviceGetCurrentClocksEventReasons=lambda h, v: out(v, 0x4),
        nvmlSystemGetDriverVersion=version,
    )


def test_ctypes_nvml_finds_the_gpu_by_uuid_and_reads_it_as_pynvml_does():
    nvml = _package("nvml")
    from compile_studio.engine.clocks import ClockProbe

    lib = _fake_nvml({100: b"GPU-aaaa-1111", 101: b"GPU-bbbb-2222"})
    binding = nvml.CtypesNvml(lib)
    opened = nvml.open_ctypes("bbbb-2222", 0, load=lambda: binding)
    assert isinstance(opened, nvml.Nvml), opened
    # NVML's lookup by UUID failed: each index's UUID was compared instead (never index 0 alone)
    assert opened.uuid == "bbbb-2222" and opened.handle.value == 101
    assert opened.found_by == "index 1 (its UUID)"
    assert binding.nvmlDeviceGetMaxClockInfo(opened.handle, binding.NVML_CLOCK_SM) == 1980
    assert binding.nvmlDeviceGetPowerUsage(opened.handle) == 123_000
    assert binding.nvmlSystemGetDriverVersion() == "570.86.15"
    # the app's clock probe reads it as it reads pynvml
    probe = ClockProbe.for_device(types.SimpleNamespace(type="cuda"), opened.handle, binding)
    reading = probe.read()
    assert probe.source == "nvml_sm_clock"
    assert reading.mhz == 1980.0 and reading.reasons == ["sw_power_cap"]

    direct = nvml.open_ctypes("aaaa-1111", None, load=lambda: nvml.CtypesNvml(
        _fake_nvml({100: b"GPU-aaaa-1111"}, by_uuid=True)))
    assert isinstance(direct, nvml.Nvml) and direct.found_by == "uuid"

    with pytest.raises(nvml.NvmlError, match="Function Not Found"):
        binding.nvmlDeviceGetHandleByUUID("GPU-cccc")
    missing = nvml.open_ctypes("cccc", 0, load=lambda: binding)
    assert isinstance(missing, str) and "no NVML device has torch's UUID cccc" in missing


def test_ctypes_nvml_says_why_where_the_library_is_absent():
    nvml = _package("nvml")

    def absent():
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    reason = nvml.open_ctypes("aaaa", 0, load=absent)
    assert isinstance(reason, str) and reason.startswith("libnvidia-ml.so.1 cannot be loaded")


# -- small parts: figures, the processes below a process --------------------------------------


def test_figures_agreement_and_cpu_lists():
    figures = _package("figures")
    assert figures.agrees(0.0105, 0.010, 0.10, 0.002)  # 5 %
    assert figures.agrees(0.0035, 0.002, 0.10, 0.002)  # +1.5 µs: within the 2 µs floor
    assert not figures.agrees(0.030, 0.020, 0.10, 0.002)  # +10 µs, 50 %
    assert figures.at_most(0.0101, 0.010, 0.02, 0.001)
    assert not figures.at_most(0.013, 0.010, 0.02, 0.001)
    assert figures.cpu_list({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11"
    assert figures.cpu_list([]) == "none"
    assert figures.as_float("1980.0") == 1980.0 and figures.as_float("") is None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_process_watch_sees_a_child_and_its_cores():
    processes = _package("processes")
    code = "import subprocess, sys, time; subprocess.Popen(['sleep', '5']); time.sleep(5)"
    child = subprocess.Popen([sys.executable, "-c", code])
    watch = processes.ProcessWatch(lambda: child.pid, interval_s=0.05).start()
    try:
        for _ in range(100):
            if any(p["depth"] == 1 for p in list(watch.seen.values())):
                break
            time.sleep(0.05)
        watch.stop()
    finally:
        for pid in [p for p, info in watch.seen.items() if info["depth"] == 1]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        child.kill()
        child.wait()
    figs = watch.figures()
    assert figs["worker"]["pid"] == child.pid and figs["worker"]["cpu_count"] >= 1
    assert [p["name"] for p in figs["worker_children"]] == ["sleep"]
    assert figs["worker_children"][0]["cpus"] == figs["worker"]["cpus"]


# -- the CUDA-only judges, on made-up runs: each must fail on the defect it is for ------------


def _variant(**fields):
    base = {"clock": {}, "warnings": [], "peak_memory_bytes": None, "memory_kind": "", "checks": {},
            "samples": [0] * 25}
    return types.SimpleNamespace(**{**base, **fields})


def _statuses(report) -> dict[str, str]:
    return {c.id: c.status for c in report.checks}


def test_the_cuda_judges_fail_on_their_defects(tmp_path):
    app_checks = _package("app_checks")
    launch_bound = _package("launch_bound")
    plan_mod = _package("plan")
    report_mod = _package("report")
    report = report_mod.Report(tmp_path, {}, 60.0)

    def clocks(tag, start_mhz, change, warnings=()):
        variants = {
            "eager": _variant(clock={"start": {"mhz": start_mhz}, "end": {"mhz": 1980.0},
                                     "max_change": change}, warnings=list(warnings)),
            "default": _variant(clock={"start": {"mhz": 1980.0}, "end": {"mhz": 1980.0},
                                       "max_change": 0.0}),
        }
        run = types.SimpleNamespace(variants=variants, measurement={"clock_source": "nvml_sm_clock"},
                                    gpu_state=[{"sm_clock_mhz": "1980"}, {"sm_clock_mhz": "1965"}])
        app_checks.judge_clocks(report, tag, run, True, None, None)

    clocks("good", 1965.0, 0.01)
    clocks("cold", 1100.0, 0.40, ["eager: the nvml sm clock changed by +40 % inside a timed window"])

    def memory(tag, graphed_bytes, second_bytes=90 << 20, kind="cuda_allocator_peak+graph_recording"):
        variants = {"eager": _variant(peak_memory_bytes=100 << 20, memory_kind="cuda_allocator_peak"),
                    "reduce-overhead": _variant(peak_memory_bytes=graphed_bytes, memory_kind=kind),
                    "max-autotune": _variant(peak_memory_bytes=second_bytes, memory_kind=kind)}
        cfg = types.SimpleNamespace(variants=list(variants))
        app_checks.judge_graph_memory(report, tag, cfg, variants, True)

    memory("good", 90 << 20)
    memory("pools_left_out", 1 << 20)
    # the second graph variant charged what torch's shared pool grew by (the old figure)
    memory("second_in_shared_pool", 90 << 20, second_bytes=256 << 10,
           kind="cuda_allocator_peak+graph_pools")
    # reserved pool segments against eager's allocated bytes: not comparable
    memory("reserved_vs_allocated", 90 << 20, kind="cuda_allocator_peak+graph_pools")

    def drift(tag, value):
        variants = {"eager": _variant(), "default": _variant(checks={"params_drift": value})}
        app_checks.judge_params_drift(report, tag, variants, ["default"])

    drift("good", 0.012)
    drift("left_out", None)

    def judged(tag, checks):
        variants = {"eager": _variant(), "default": _variant(checks=checks)}
        app_checks.judge_drift_judged_or_said(report, tag, variants, ["default"])

    judged("fp32", {"params_drift": 1e-4, "params_drift_bound": 1.4e-3})
    judged("bf16_said", {"params_drift": 0.0, "params_drift_bound": None,
                         "params_drift_not_judged": "the updates are rounding in bf16"})
    judged("bf16_silent", {"params_drift": 0.0, "params_drift_bound": None})  # the old run.json

    model = plan_mod.LaunchModel("m", "8,8", 4, "bf16")

    def launch(variant, device_ms, kernel_ms):
        figures = {"app_device_median_ms": device_ms, "app_host_median_ms": 0.1, "app_uncovered": 0,
                   "kernel_ms": kernel_ms, "kernels_per_call": 6.0, "busy_pair_ms": kernel_ms,
                   "busy_pair_covered": "9/9", "do_bench_ms": None, "launch_ms_per_call": 0.05}
        launch_bound.judge(report, model, variant, figures)

    launch("good", 0.0315, 0.0300)
    launch("gaps", 0.0500, 0.0300)  # the device time holds the launch gaps
    launch("short", 0.0200, 0.0300)  # the device time misses kernels

    got = _statuses(report)
    assert got["good.clock_warm_start"] == "PASS" and got["good.clock_steady"] == "PASS"
    assert got["cold.clock_warm_start"] == "FAIL" and got["cold.clock_steady"] == "FAIL"
    assert got["good.cudagraph_memory"] == "PASS" and got["pools_left_out.cudagraph_memory"] == "FAIL"
    assert got["second_in_shared_pool.cudagraph_memory"] == "FAIL"
    assert got["reserved_vs_allocated.cudagraph_memory"] == "FAIL"
    assert got["good.params_drift"] == "PASS" and got["left_out.params_drift"] == "FAIL"
    assert got["fp32.params_judged_or_said"] == "PASS"
    assert got["bf16_said.params_judged_or_said"] == "PASS"
    assert got["bf16_silent.params_judged_or_said"] == "FAIL"
    assert got["launch.m.good.kernels_le_device"] == "PASS"
    assert got["launch.m.good.device_matches_kernels"] == "PASS"
    assert got["launch.m.gaps.kernels_le_device"] == "PASS"
    assert got["launch.m.gaps.device_matches_kernels"] == "FAIL"
    assert got["launch.m.short.kernels_le_device"] == "FAIL"
    assert got["launch.m.short.device_matches_kernels"] == "FAIL"
    assert all(c.cuda_only for c in report.checks
               if not c.id.endswith(("params_drift", "params_judged_or_said")))
    report.log.close()


def test_the_fixed_point_judges_fail_on_the_old_behaviour():
    """Each judge of the fixed_points stage, on what the old app did."""
    fixed = _package("fixed_points")
    # cold L2: the device-timed call right after the wall-timed one found the cache warm
    assert fixed.judge_cold_l2_order("fwdfwdfwd", cuda=True)[0] is False
    assert fixed.judge_cold_l2_order("fwfdfwfdfwfd", cuda=True)[0] is True
    assert fixed.judge_cold_l2_order("ftftft", cuda=False)[0] is True
    assert fixed.judge_cold_l2_order("", cuda=False)[0] is False
    # launch gaps: counted but never reported (no checks.device_time, no warning)
    assert fixed.judge_uncovered({"device_time": None, "warned": []})[0] is False
    assert fixed.judge_uncovered({"device_time": {"samples": 12, "uncovered": 3},
                                  "warned": ["… launch gaps …"]})[0] is False
    assert fixed.judge_uncovered({"device_time": {"samples": 12, "uncovered": 12},
                                  "warned": ["… launch gaps …"]})[0] is True
    # start-up inside the timed first call of the compiled variant listed first
    assert fixed.judge_startup(["timed aot_eager", "start-up", "timed eager"], "aot_eager")[0] is False
    assert fixed.judge_startup(["start-up", "timed aot_eager", "timed eager"], "aot_eager")[0] is True
    # pinning: a compile on the timing thread's one core (before round 2), or timing unpinned
    found = {"cpus": [0, 1, 2, 3], "timing_cpu": 3, "compile": [[0, 1, 2, 3]], "timed": [[3]]}
    assert fixed.judge_pinning(found)[0] is True
    assert fixed.judge_pinning({**found, "compile": [[3]]})[0] is False
    assert fixed.judge_pinning({**found, "timed": [[3], [0, 1, 2, 3]]})[0] is False
    # the shape sweep: eager always first, and no flush (the old order)
    assert fixed.judge_sweep_order("EVEVEVEVEV")[0] is False
    assert fixed.judge_sweep_order("EVfEfVfEfVfEfVfEfV")[0] is False  # flushed, eager first
    assert fixed.judge_sweep_order("EVEVVEEVVE")[0] is False  # alternating, cold L2 ignored
    assert fixed.judge_sweep_order("EVfEfVfVfEfEfVfVfE")[0] is True
    # on CUDA a sample's device-timed call needs its own flush too
    assert fixed.judge_sweep_order("EVfEfVfVfEfEfVfVfE", between=0, cuda=True)[0] is False
    assert fixed.judge_sweep_order("EVfEfVfVfEfEfVfVfE", between=8, cuda=True)[0] is True
