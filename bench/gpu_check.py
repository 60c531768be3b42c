"""Self-checking proof of Compile Studio's figures on a CUDA GPU (H100/H200), or on the CPU.

Runs from a checkout with ``PYTHONPATH=app``; needs torch (and on a GPU
machine Triton and nvidia-ml-py), nothing else: no PySide6, no network, no
install. Stages run in order, print as they go (unbuffered) and save their
figures after every step. An internal deadline (``--deadline``, 230 s by
default) ends the script with what it has. At most three files land in
``--out``:

* ``gpu_check.json`` — every figure and every check (PASS / FAIL / SKIP);
* ``gpu_check.log``  — everything printed, plus the workers' stderr;
* ``runs.tar.gz``    — the run folders the app wrote.

Stages:

1. ``environment`` — versions; the NVML UUID of the device used against torch's
   ``props.uuid``; L2 size and the cold-L2 flush buffer; SM clock and throttle reasons.
2. ``gemm`` — a 4096×4096 bf16 Linear at batch 8192, timed by the app's loop
   (CUDA events), against the device's dense bf16 peak (:data:`PEAK_BF16_TFLOPS`).
3. ``same_process`` — eager, default, reduce-overhead on the same weights, input
   and flags: the app's loop (warm and cold L2), ``Timer.blocked_autorange``,
   ``triton.testing.do_bench`` (median, L2 flushed), ``do_bench_cudagraph``, a
   pipelined loop and the harness floor, in rounds (A B C A B C …) ×3; then a
   profiler trace, Inductor's CUDA-graph skip counter, replay identity and an
   L2-resident probe.
4. ``app_sequential`` — bf16 inference, eager / default / reduce-overhead /
   max-autotune, through a real worker, cold compile cache, one variant after another.
5. ``app_training`` — an fp32 training step, eager and default, compile timed in a
   fresh process (``compile_timing=isolated``).
6. ``app_rounds`` — the run of stage 4 in rounds (A B A B …).

``--device cpu`` runs the same stages in fp32 with eager, default and aot_eager
(``--tiny``: eager and aot_eager on a 32,32,8 MLP, for the test), the training
run with eager and aot_eager; the GEMM stage and every CUDA-only check are
skipped with the reason.

Checks (each PASS, FAIL or SKIP with its figure; ``cuda_only`` ones are skipped
on the CPU, timing comparisons there are reported, not asserted):

* NVML UUID of the device = torch's; L2 size known and the flush buffer ≥ 2× L2;
  SM clock readable;
* bf16 GEMM ≥ 60 % of dense peak by device time;
* per variant: the app's cold-L2 device median within ±5 % of do_bench's; its
  pipelined figure within ±5 % of Timer's; cold-L2 device time ≥ warm;
* harness floor below every variant's fastest call; the profiler shows
  ``cudaGraphLaunch`` for reduce-overhead; 0 CUDA-graph skips; replay output
  bit-identical to the first; cold L2 slows an L2-resident read;
* per app run: complete; correct (the app's rule); compiled error ≤ the allowed
  multiple of eager's; replay bit-identical (``checks.replay_max_diff == 0``);
  CUDA graphs ``used``; harness floor below every minimum; CUDA-event device time
  per call and ≤ host time; peak memory differs between variants; SM clock read at
  the window edges; NVML readings and the GPU's UUID in the run; compile time
  reported; pipelined figure; rounds recorded;
* no desktop-only module (PySide6, pyqtgraph, platformdirs, psutil users) imported.

Exit status: 0 every check passed or was skipped, 1 a check failed, 2 the
deadline hit (or a stage had to be left out for lack of time).

    PYTHONPATH=app python3 -u bench/gpu_check.py --out "$OUT" --deadline 230
    PYTHONPATH=app python3 -u bench/gpu_check.py --device cpu [--tiny] --out /tmp/gpu-check
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import inspect
import json
import os
import platform
import shutil
import statistics
import sys
import tarfile
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from compile_studio import __version__ as APP_VERSION
from compile_studio import protocol
from compile_studio.config import CUDAGRAPH_VARIANTS, BenchmarkConfig, format_bytes
from compile_studio.engine import checks as rule
from compile_studio.engine.cache_flush import CacheFlush, last_level_cache_bytes
from compile_studio.engine.clocks import ClockProbe, normalise_uuid, read_cpu_mhz
from compile_studio.engine.environment import compile_modes
from compile_studio.engine.gpu_monitor import nvml_handle
from compile_studio.engine.model import TORCH_DTYPES
from compile_studio.engine.models import build_workload
from compile_studio.engine.runner import BenchmarkRunner, make_input, resolve_device
from compile_studio.engine.timing import CallTimer
from compile_studio.engine.variant import build_variant
from compile_studio.results import RunResult, RunStore, load_run, summarize
from compile_studio.session import RunSession
from compile_studio.supervisor import WorkerLauncher

APP_DIR = Path(__file__).resolve().parent.parent / "app"
JSON_NAME = "gpu_check.json"
LOG_NAME = "gpu_check.log"
TAR_NAME = "runs.tar.gz"
#: The log stops taking worker lines past this size (max-autotune is talkative).
LOG_CAP_BYTES = 8 << 20

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
EXIT_OK, EXIT_FAILED, EXIT_DEADLINE = 0, 1, 2

#: Agreement asked of two timing methods: ±5 %.
AGREEMENT = 0.05
#: Cold-L2 device time may undercut warm by this much (run-to-run noise) and still pass.
COLD_WARM_SLACK = 0.02
#: An L2-resident read must be at least this much slower after a flush.
L2_PROBE_MIN_RATIO = 1.05
#: Fraction of the dense bf16 peak the GEMM must reach.
GEMM_MIN_FRACTION = 0.60
GEMM_LAYERS = "4096,4096"
GEMM_BATCH = 8192

#: Dense bf16 tensor-core peak (TFLOP/s) by a part of the device name, first match wins,
#: with its source. NVIDIA quotes bf16 "with sparsity": the dense figure is half of it.
PEAK_BF16_TFLOPS: list[tuple[str, float, str]] = [
    ("H100 PCIe", 756.0, "NVIDIA H100 datasheet, H100 PCIe: 1,513 TFLOPS bf16 with sparsity"),
    ("H100 NVL", 835.0, "NVIDIA H100 datasheet, H100 NVL: 1,671 TFLOPS bf16 with sparsity"),
    ("H200 NVL", 835.0, "NVIDIA H200 datasheet, H200 NVL: 1,671 TFLOPS bf16 with sparsity"),
    ("H200", 989.0, "NVIDIA H200 datasheet, H200 SXM: 1,979 TFLOPS bf16 with sparsity"),
    ("H100", 989.0, "NVIDIA H100 datasheet, H100 SXM: 1,979 TFLOPS bf16 with sparsity"),
    ("A100", 312.0, "NVIDIA A100 datasheet: 312 TFLOPS bf16 dense"),
]

#: Modules the device image lacks (or the GUI alone needs): none may load here.
DESKTOP_MODULES = ("PySide6", "pyqtgraph")
#: compile_studio modules that import them or platformdirs at import time. (The
#: session's load reading imports psutil inside a guarded call: where psutil is
#: missing, a run simply has no load reading.)
DESKTOP_APP_MODULES = (
    "compile_studio.gui",
    "compile_studio.cli",
    "compile_studio.results.locations",
)

CPU_TIMING = "on the CPU timing comparisons are reported, not asserted"
CUDA_ONLY = "CUDA only (--device cpu)"


def peak_bf16(name: str) -> tuple[float, str] | None:
    """(dense bf16 TFLOP/s, source) for a device name; None for a device not in the table."""
    for key, tflops, source in PEAK_BF16_TFLOPS:
        if key.lower() in name.lower():
            return tflops, source
    return None


# -- the plan: sizes per mode -------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """Every size the stages use, for one mode (CUDA or CPU, full or tiny)."""

    app_layers: str
    app_batch: int
    app_dtype: str
    app_variants: tuple[str, ...]
    app_iterations: int
    app_warmup: int
    app_warmup_min_ms: int
    app_rounds: int
    train_dtype: str
    train_variants: tuple[str, ...]
    train_iterations: int
    train_compile_timing: str
    compare_layers: str
    compare_batch: int
    compare_dtype: str
    compare_variants: tuple[str, ...]
    rounds: int
    calls: int
    cold_calls: int
    pipelined_calls: int
    pipelined_repeats: int
    timer_min_s: float
    bench_rep_ms: int
    warmup_s: float
    gemm_calls: int
    probe_calls: int
    #: seconds a stage needs at least (started only with that much left)
    stage_needs_s: dict[str, float] = field(default_factory=dict)


def make_plan(cuda: bool, tiny: bool) -> Plan:
    if cuda:
        return Plan(
            app_layers="256,256,256" if tiny else "1024,1024,1024,1024",
            app_batch=64 if tiny else 1024,
            app_dtype="bf16",
            app_variants=("eager", "default", "reduce-overhead", "max-autotune"),
            app_iterations=50 if tiny else 200,
            app_warmup=10 if tiny else 20,
            app_warmup_min_ms=50 if tiny else 200,
            app_rounds=4,
            train_dtype="fp32",
            train_variants=("eager", "default"),
            train_iterations=30 if tiny else 100,
            train_compile_timing="isolated",
            compare_layers="1024,1024,1024" if tiny else "4096,4096,4096,4096,4096",
            compare_batch=1024 if tiny else 16384,
            compare_dtype="bf16",
            compare_variants=("eager", "default", "reduce-overhead"),
            rounds=3,
            calls=10 if tiny else 20,
            cold_calls=10 if tiny else 20,
            pipelined_calls=10 if tiny else 20,
            pipelined_repeats=3 if tiny else 5,
            timer_min_s=0.05 if tiny else 0.2,
            bench_rep_ms=20 if tiny else 50,
            warmup_s=0.1 if tiny else 0.3,
            gemm_calls=30 if tiny else 100,
            probe_calls=30 if tiny else 50,
            stage_needs_s={
                "gemm": 5,
                "same_process": 30,
                "app_sequential": 40,
                "app_training": 25,
                "app_rounds": 40,
            },
        )
    return Plan(
        app_layers="32,32,8" if tiny else "1024,1024,512,10",
        app_batch=4 if tiny else 256,
        app_dtype="fp32",
        app_variants=("eager", "aot_eager") if tiny else ("eager", "default", "aot_eager"),
        app_iterations=30 if tiny else 100,
        app_warmup=5 if tiny else 10,
        app_warmup_min_ms=0 if tiny else 200,
        app_rounds=3 if tiny else 4,
        train_dtype="fp32",
        train_variants=("eager", "aot_eager"),
        train_iterations=20 if tiny else 50,
        train_compile_timing="in_run",
        compare_layers="32,32,8" if tiny else "1024,1024,512,10",
        compare_batch=4 if tiny else 256,
        compare_dtype="fp32",
        compare_variants=("eager", "aot_eager") if tiny else ("eager", "default", "aot_eager"),
        rounds=3,
        calls=20 if tiny else 30,
        cold_calls=3 if tiny else 10,
        pipelined_calls=20 if tiny else 30,
        pipelined_repeats=3,
        timer_min_s=0.02 if tiny else 0.2,
        bench_rep_ms=0,
        warmup_s=0.0 if tiny else 0.2,
        gemm_calls=0,
        probe_calls=0,
        stage_needs_s={
            "same_process": 5 if tiny else 20,
            "app_sequential": 8 if tiny else 30,
            "app_training": 8 if tiny else 20,
            "app_rounds": 8 if tiny else 30,
        },
    )


# -- the report: checks, figures and the three files ---------------------------------------


@dataclass
class Check:
    id: str
    name: str
    stage: str
    status: str
    figure: str = ""
    detail: str = ""
    #: asserted only on CUDA: on the CPU it is skipped (with its figure where there is one)
    cuda_only: bool = False


class Report:
    """Prints, logs and saves as the stages go; owns the deadline's last word."""

    def __init__(self, out: Path, args: dict[str, Any], deadline_s: float):
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.lock = threading.RLock()
        self.t0 = time.monotonic()
        self.deadline_s = deadline_s
        self.log = open(out / LOG_NAME, "w", encoding="utf-8", buffering=1)
        self.log_bytes = 0
        self.log_cut = False
        self.checks: list[Check] = []
        self.stage = ""
        self.closed = False
        self.deadline_hit = False
        self.runs_root: Path | None = None
        self.active_session: RunSession | None = None
        self.session_idle = threading.Event()
        self.session_idle.set()
        self.data: dict[str, Any] = {
            "script": "bench/gpu_check.py",
            "app_version": APP_VERSION,
            "args": args,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "status": "running",
            "deadline_s": deadline_s,
            "environment": {},
            "stages": {},
            "checks": [],
        }

    # -- time ------------------------------------------------------------------------------
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def left(self) -> float:
        return self.deadline_s - self.elapsed()

    # -- output ----------------------------------------------------------------------------
    def say(self, text: str = "") -> None:
        with self.lock:
            print(text, flush=True)
            self._log(text)

    def _log(self, text: str) -> None:
        try:
            self.log.write(text + "\n")
            self.log_bytes += len(text) + 1
        except ValueError:
            pass

    def worker_line(self, tag: str, line: str) -> None:
        with self.lock:
            if self.log_bytes > LOG_CAP_BYTES:
                if not self.log_cut:
                    self._log(f"[{tag}] … the log is full; further worker lines are left out")
                    self.log_cut = True
                return
            self._log(f"[{tag}] {line}")

    # -- checks ----------------------------------------------------------------------------
    def _add(self, check: Check) -> None:
        with self.lock:
            if self.closed:
                return
            self.checks.append(check)
            text = f"{check.status} {check.id}: {check.name}"
            if check.figure:
                text += f" — {check.figure}"
            if check.detail:
                text += f" [{check.detail}]"
            self.say(text)
        self.save()

    def check(
        self, id: str, name: str, ok: bool, figure: str = "", detail: str = "",
        cuda_only: bool = False,
    ) -> bool:
        self._add(Check(id, name, self.stage, PASS if ok else FAIL, figure, detail, cuda_only))
        return ok

    def skip(
        self, id: str, name: str, reason: str, figure: str = "", cuda_only: bool = False
    ) -> None:
        self._add(Check(id, name, self.stage, SKIP, figure, reason, cuda_only))

    def judge(
        self, cuda: bool, id: str, name: str, ok: bool, figure: str, reason_on_cpu: str
    ) -> None:
        """A check asserted on CUDA only; on the CPU its figure is reported and it is skipped."""
        if cuda:
            self.check(id, name, ok, figure, cuda_only=True)
        else:
            self.skip(id, name, reason_on_cpu, figure, cuda_only=True)

    # -- stages ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def stage_of(self, name: str) -> Iterator[dict[str, Any]]:
        figures: dict[str, Any] = {}
        entry: dict[str, Any] = {"status": "running", "start_s": round(self.elapsed(), 2),
                                 "figures": figures}
        with self.lock:
            self.stage = name
            self.data["stages"][name] = entry
        self.say(f"\n== {name}  (t = {self.elapsed():.0f} s, {self.left():.0f} s left)")
        self.save()
        try:
            yield figures
            entry["status"] = "done"
        except Exception as exc:  # noqa: BLE001 - a broken stage is a failed check, the rest go on
            entry["status"] = "error"
            entry["error"] = f"{type(exc).__name__}: {exc}"[:2000]
            with self.lock:
                self._log(traceback.format_exc())
            self.check(f"{name}.ran", f"stage {name} ran to its end", False,
                       f"{type(exc).__name__}: {str(exc)[:300]}")
        finally:
            entry["elapsed_s"] = round(self.elapsed() - entry["start_s"], 2)
            self.say(f"   ({name}: {entry['elapsed_s']:.1f} s)")
            self.save()

    @contextlib.contextmanager
    def guard(self, id: str, name: str) -> Iterator[None]:
        """One part of a stage: an exception in it is a failed check, and the stage goes on."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001
            with self.lock:
                self._log(traceback.format_exc())
            self.check(id, name, False, f"{type(exc).__name__}: {str(exc)[:300]}", cuda_only=True)
            with contextlib.suppress(Exception):
                if torch.cuda.is_available():
                    torch.cuda.synchronize()

    def may_start(self, name: str, needs_s: float) -> bool:
        """False (and the stage recorded as left out) when less time is left than it needs."""
        left = self.left()
        if left >= needs_s:
            return True
        with self.lock:
            self.deadline_hit = True
            self.data["stages"][name] = {
                "status": "left out",
                "reason": f"deadline: {left:.0f} s left, the stage needs about {needs_s:.0f} s",
            }
        self.say(f"\n== {name}: left out, {left:.0f} s left and it needs about {needs_s:.0f} s")
        self.save()
        return False

    # -- files -----------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        out = {PASS: 0, FAIL: 0, SKIP: 0}
        for c in self.checks:
            out[c.status] += 1
        return out

    def save(self, status: str | None = None) -> None:
        with self.lock:
            if self.closed and status is None:
                return
            if status is not None:
                self.data["status"] = status
            self.data["elapsed_s"] = round(self.elapsed(), 2)
            self.data["deadline_hit"] = self.deadline_hit
            self.data["checks"] = [asdict(c) for c in self.checks]
            self.data["summary"] = self.counts()
            path = self.out / JSON_NAME
            tmp = self.out / f".{JSON_NAME}.tmp"
            tmp.write_text(json.dumps(self.data, indent=1, default=_json_default), encoding="utf-8")
            os.replace(tmp, path)

    def pack_runs(self) -> None:
        """The run folders so far as one tarball (replaced whole each time)."""
        if self.runs_root is None or not self.runs_root.is_dir():
            return
        with self.lock:
            tmp = self.out / f".{TAR_NAME}.tmp"
            with tarfile.open(tmp, "w:gz") as tar:
                tar.add(self.runs_root, arcname="runs")
            os.replace(tmp, self.out / TAR_NAME)

    # -- the end ---------------------------------------------------------------------------
    def summary_lines(self) -> list[str]:
        lines = ["", "== checks"]
        for c in self.checks:
            lines.append(f"{c.status} {c.id}" + (f" — {c.figure}" if c.figure else ""))
        n = self.counts()
        lines.append(f"gpu_check: {n[PASS]} PASS, {n[FAIL]} FAIL, {n[SKIP]} SKIP "
                     f"in {self.elapsed():.0f} s" + ("; the deadline hit" if self.deadline_hit else ""))
        return lines

    def exit_code(self) -> int:
        if self.deadline_hit:
            return EXIT_DEADLINE
        return EXIT_FAILED if self.counts()[FAIL] else EXIT_OK

    def close(self, status: str) -> int:
        with self.lock:
            for line in self.summary_lines():
                self.say(line)
            code = self.exit_code()
            self.say(f"files in {self.out}: {', '.join(sorted(p.name for p in self.out.iterdir() if not p.name.startswith('.')))}")
            self.say(f"exit status {code}")
            self.save(status)
            self.closed = True
            self.log.flush()
        return code

    def expire(self) -> None:
        """The deadline: stop the worker, keep what exists, leave with status 2."""
        got = self.lock.acquire(timeout=10)
        try:
            self.deadline_hit = True
            stage = self.data["stages"].get(self.stage)
            if stage is not None and stage.get("status") == "running":
                stage["status"] = "cut short by the deadline"
            self.say(f"\n!! deadline of {self.deadline_s:.0f} s reached in stage {self.stage}: "
                     "stopping, saving what there is")
            session = self.active_session
        finally:
            if got:
                self.lock.release()
        if session is not None:
            session.request_stop("the gpu_check deadline")
            self.session_idle.wait(6.0)
        try:
            self.pack_runs()
        except Exception as exc:  # noqa: BLE001
            self.say(f"   could not pack the runs: {exc}")
        code = self.close("deadline")
        sys.stdout.flush()
        os._exit(code)


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "value"):
        return value.value
    return str(value)


class Deadline:
    """Calls ``on_expire`` from a thread of its own once ``seconds`` have passed."""

    def __init__(self, seconds: float, on_expire: Callable[[], None]):
        self._cancel = threading.Event()
        self._seconds = seconds
        self._on_expire = on_expire
        self._thread = threading.Thread(target=self._wait, name="deadline", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def cancel(self) -> None:
        self._cancel.set()

    def _wait(self) -> None:
        if not self._cancel.wait(self._seconds):
            self._on_expire()


# -- small helpers -------------------------------------------------------------------------


def ms(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f} ms"


def median(values: list[float]) -> float | None:
    clean = [v for v in values if v is not None]
    return statistics.median(clean) if clean else None


def ratios(a: list[float | None], b: list[float | None]) -> list[float]:
    return [x / y for x, y in zip(a, b) if x is not None and y is not None and y > 0]


def ratio_text(rs: list[float]) -> str:
    if not rs:
        return "no figures"
    return f"ratio {statistics.median(rs):.3f} (rounds {', '.join(f'{r:.3f}' for r in rs)})"


def call_supported(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with the keyword arguments ``fn`` does not take left out."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
    return fn(*args, **kwargs)


@dataclass
class LoopFigures:
    host_median: float
    host_min: float
    device_median: float | None
    device_min: float | None


def app_loop(
    timer: CallTimer, fn: Callable[[], Any], calls: int, flush: CacheFlush | None = None
) -> LoopFigures:
    """The app's timed loop: CallTimer around each call, the cache flushed before it if asked."""
    host: list[float] = []
    device: list[float] = []
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(max(1, calls)):
            if flush is not None:
                flush.evict()
                timer.sync()
            h, d = timer.time(fn)
            host.append(h)
            if d is not None:
                device.append(d)
    finally:
        if enabled:
            gc.enable()
    return LoopFigures(
        statistics.median(host), min(host),
        statistics.median(device) if device else None, min(device) if device else None,
    )


def warm_up(fn: Callable[[], Any], timer: CallTimer, seconds: float, calls: int = 3) -> None:
    end = time.monotonic() + seconds
    for _ in range(calls):
        fn()
    while time.monotonic() < end:
        fn()
    timer.sync()


def timer_ms(fn: Callable[[], Any], min_run_time: float, threads: int) -> float:
    from torch.utils import benchmark

    m = benchmark.Timer(
        stmt="fn()", globals={"fn": fn}, num_threads=threads
    ).blocked_autorange(min_run_time=min_run_time)
    return float(m.median) * 1e3


def do_bench_ms(fn: Callable[[], Any], rep_ms: int) -> float:
    from triton.testing import do_bench

    return float(call_supported(do_bench, fn, warmup=25, rep=rep_ms, return_mode="median"))


def do_bench_cudagraph_ms(fn: Callable[[], Any], rep_ms: int) -> float:
    from triton.testing import do_bench_cudagraph

    with torch.cuda.stream(torch.cuda.Stream()):
        value = call_supported(do_bench_cudagraph, fn, rep=rep_ms, return_mode="median")
    torch.cuda.synchronize()
    return float(value)


def worker_environment() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(APP_DIR)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def versions() -> dict[str, Any]:
    out: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.cuda.is_available() else None,
        "compile_studio": APP_VERSION,
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    try:
        import triton

        out["triton"] = triton.__version__
    except Exception as exc:  # noqa: BLE001
        out["triton"] = f"not importable: {type(exc).__name__}"
    return out


# -- stage 1: environment ------------------------------------------------------------------


@dataclass
class Nvml:
    pynvml: Any
    handle: Any
    uuid: str


def stage_environment(report: Report, device: torch.device, figures: dict[str, Any]) -> Nvml | None:
    cuda = device.type == "cuda"
    env = versions()
    figures["versions"] = env
    report.data["environment"] = env
    report.say("   " + ", ".join(f"{k} {v}" for k, v in env.items() if v is not None))
    if not cuda:
        cpu_mhz = read_cpu_mhz()
        llc = last_level_cache_bytes()
        flush = CacheFlush.for_device(device)
        figures.update(cpu_mhz=cpu_mhz, last_level_cache_bytes=llc, flush_bytes=flush.nbytes)
        report.say(f"   CPU: last-level cache {format_bytes(llc) if llc else 'unknown'}, "
                   f"flush buffer {format_bytes(flush.nbytes)}, clock "
                   f"{f'{cpu_mhz:.0f} MHz' if cpu_mhz else 'not exposed in sysfs'}")
        for id_, name in (
            ("env.nvml_uuid", "NVML UUID of the device = torch's props.uuid"),
            ("env.l2", "L2 size known, cold-L2 flush buffer ≥ 2× L2"),
            ("env.sm_clock", "SM clock and throttle reasons readable"),
        ):
            report.skip(id_, name, CUDA_ONLY, cuda_only=True)
        return None

    props = torch.cuda.get_device_properties(device)
    torch_uuid = uuid_of(getattr(props, "uuid", ""))
    gpu = {
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "sm_count": props.multi_processor_count,
        "memory_bytes": int(props.total_memory),
        "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0),
        "torch_uuid": torch_uuid,
        "pci_bus_id": getattr(props, "pci_bus_id", None),
    }
    figures["gpu"] = gpu
    report.data["environment"]["gpu"] = gpu
    report.say(f"   GPU {props.name} (sm {gpu['capability']}, {gpu['sm_count']} SMs, "
               f"{format_bytes(gpu['memory_bytes'])}, L2 {format_bytes(gpu['l2_bytes'])})")

    found = nvml_handle(device)
    nvml: Nvml | None = None
    if found is None:
        report.check("env.nvml_uuid", "NVML UUID of the device = torch's props.uuid", False,
                     "no NVML handle (nvidia-ml-py missing or nvmlInit failed)", cuda_only=True)
    else:
        pynvml, handle, _ = found
        raw = pynvml.nvmlDeviceGetUUID(handle)
        nvml_uuid = uuid_of(raw.decode() if isinstance(raw, bytes) else raw)
        nvml = Nvml(pynvml, handle, nvml_uuid)
        try:
            bus = pynvml.nvmlDeviceGetPciInfo(handle).busId
            gpu["nvml_pci_bus"] = bus.decode() if isinstance(bus, bytes) else str(bus)
        except Exception as exc:  # noqa: BLE001
            gpu["nvml_pci_bus"] = f"unreadable: {exc}"
        try:
            driver = pynvml.nvmlSystemGetDriverVersion()
            report.data["environment"]["driver"] = (
                driver.decode() if isinstance(driver, bytes) else str(driver)
            )
        except Exception:  # noqa: BLE001
            pass
        gpu["nvml_uuid"] = nvml_uuid
        report.check(
            "env.nvml_uuid", "NVML UUID of the device = torch's props.uuid",
            bool(torch_uuid) and nvml_uuid == torch_uuid,
            f"torch {torch_uuid or '–'}, NVML {nvml_uuid} (PCI {gpu.get('nvml_pci_bus')})",
            cuda_only=True,
        )

    flush = CacheFlush.for_device(device)
    gpu["flush_bytes"] = flush.nbytes
    report.check(
        "env.l2", "L2 size known, cold-L2 flush buffer ≥ 2× L2",
        gpu["l2_bytes"] > 0 and flush.nbytes >= 2 * gpu["l2_bytes"],
        f"L2 {format_bytes(gpu['l2_bytes'])}, flush buffer {format_bytes(flush.nbytes)}",
        cuda_only=True,
    )
    del flush

    if nvml is None:
        report.check("env.sm_clock", "SM clock and throttle reasons readable", False,
                     "no NVML handle", cuda_only=True)
        return None
    probe = ClockProbe.for_device(device, nvml.handle, nvml.pynvml)
    reading = probe.read()
    clocks: dict[str, Any] = {"sm_mhz": reading.mhz, "reasons": reading.reasons}
    p = nvml.pynvml
    for key, fn, args in (
        ("sm_max_mhz", "nvmlDeviceGetMaxClockInfo", (p.NVML_CLOCK_SM,)),
        ("mem_mhz", "nvmlDeviceGetClockInfo", (p.NVML_CLOCK_MEM,)),
        ("temperature_c", "nvmlDeviceGetTemperature", (p.NVML_TEMPERATURE_GPU,)),
        ("power_w", "nvmlDeviceGetPowerUsage", ()),
        ("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", ()),
    ):
        try:
            value = getattr(p, fn)(nvml.handle, *args)
            clocks[key] = value / 1000.0 if key.startswith("power") else value
        except Exception:  # noqa: BLE001
            clocks[key] = None
    gpu["clocks_start"] = clocks
    report.check(
        "env.sm_clock", "SM clock and throttle reasons readable", reading.mhz is not None,
        f"SM {reading.mhz} MHz of max {clocks.get('sm_max_mhz')} MHz, reasons "
        f"{', '.join(reading.reasons) or 'none'}, {clocks.get('temperature_c')} °C, "
        f"{clocks.get('power_w')} W of {clocks.get('power_limit_w')} W",
        cuda_only=True,
    )
    return nvml


def uuid_of(value: object) -> str:
    text = str(value or "").strip()
    return normalise_uuid(text) if text else ""


# -- stage 2: a bf16 GEMM against the dense peak --------------------------------------------


def stage_gemm(report: Report, plan: Plan, device: torch.device, figures: dict[str, Any]) -> None:
    name = torch.cuda.get_device_properties(device).name
    cfg = BenchmarkConfig(layers=GEMM_LAYERS, batch_size=GEMM_BATCH, dtype="bf16",
                          device=str(device), variants=["eager"])
    BenchmarkRunner._apply_precision(cfg.dtype)
    v = build_variant(cfg, "eager", device, torch.bfloat16, compile_modes())
    x = make_input(cfg).to(device, torch.bfloat16)
    timer = CallTimer(device, use_events=True)
    with torch.inference_mode():

        def fn() -> Any:
            return v.step((x,))

        warm_up(fn, timer, 0.5)
        loop = app_loop(timer, fn, plan.gemm_calls)
        bench = None
        with contextlib.suppress(Exception):
            bench = do_bench_ms(fn, plan.bench_rep_ms)
    flops = cfg.flops_per_call()
    assert loop.device_median is not None
    tflops = flops / (loop.device_median / 1e3) / 1e12
    figures.update(device=name, flops=flops, device_median_ms=loop.device_median,
                   host_median_ms=loop.host_median, do_bench_ms=bench, tflops=tflops)
    peak = peak_bf16(name)
    text = (f"{tflops:.0f} TFLOP/s (device median {ms(loop.device_median)}, do_bench "
            f"{ms(bench)}) for {GEMM_BATCH}×{GEMM_LAYERS.replace(',', '×')} bf16")
    if peak is None:
        report.skip("gemm.bf16_peak", f"bf16 GEMM ≥ {GEMM_MIN_FRACTION:.0%} of dense peak",
                    f"{name} is not in the peak table", text, cuda_only=True)
        return
    figures.update(peak_tflops=peak[0], peak_source=peak[1], fraction=tflops / peak[0])
    report.check(
        "gemm.bf16_peak", f"bf16 GEMM ≥ {GEMM_MIN_FRACTION:.0%} of dense peak",
        tflops >= GEMM_MIN_FRACTION * peak[0],
        f"{text} = {tflops / peak[0]:.0%} of {peak[0]:.0f} ({peak[1]})", cuda_only=True,
    )


# -- stage 3: timing methods side by side in one process -----------------------------------

METHODS = ("app_host", "app_device", "app_cold_host", "app_cold_device", "pipelined",
           "timer", "do_bench", "do_bench_cudagraph")


def stage_same_process(
    report: Report, plan: Plan, device: torch.device, figures: dict[str, Any]
) -> None:
    cuda = device.type == "cuda"
    cfg = BenchmarkConfig(layers=plan.compare_layers, batch_size=plan.compare_batch,
                          dtype=plan.compare_dtype, device=str(device),
                          variants=list(plan.compare_variants))
    BenchmarkRunner._apply_precision(cfg.dtype)
    dtype = TORCH_DTYPES[cfg.dtype]
    workload = build_workload(cfg)
    x_cpu = workload.inputs[0]
    x = x_cpu.to(device, dtype)
    with torch.no_grad():
        reference = workload.model.to(device, torch.float64)(x_cpu.to(device, torch.float64))
    del workload
    timer = CallTimer(device, use_events=cuda)
    flush = CacheFlush.for_device(device)
    threads = torch.get_num_threads()
    figures.update(layers=cfg.layers, batch=cfg.batch_size, dtype=cfg.dtype, threads=threads,
                   flush_bytes=flush.nbytes, rounds=plan.rounds, calls=plan.calls)
    report.say(f"   MLP {cfg.layers}, batch {cfg.batch_size}, {cfg.dtype}, {threads} threads, "
               f"flush {format_bytes(flush.nbytes)}, {plan.rounds} rounds")
    modes = compile_modes()
    steps: dict[str, Callable[[], Any]] = {}
    first: dict[str, torch.Tensor] = {}
    per: dict[str, dict[str, list[float | None]]] = {}
    errors: dict[str, dict[str, str]] = {}
    with torch.inference_mode():
        for name in cfg.variants:
            t0 = time.perf_counter()
            v = build_variant(cfg, name, device, dtype, modes)

            def fn(step: Callable[[tuple[Any, ...]], Any] = v.step,
                   xx: torch.Tensor = x) -> Any:
                return step((xx,))

            first[name] = fn().detach().clone()
            timer.sync()
            compiled_s = time.perf_counter() - t0
            warm_up(fn, timer, plan.warmup_s)
            steps[name] = fn
            per[name] = {m: [] for m in METHODS}
            errors[name] = {}
            report.say(f"   {name}: built, first call and warm-up in {time.perf_counter() - t0:.1f} s "
                       f"(first call {compiled_s:.1f} s)")

        floors: list[tuple[float, float | None]] = []
        for r in range(plan.rounds):
            floors.append(timer.floor())
            for name, fn in steps.items():
                row = per[name]
                warm = app_loop(timer, fn, plan.calls)
                cold = app_loop(timer, fn, plan.cold_calls, flush)
                row["app_host"].append(warm.host_median)
                row["app_device"].append(warm.device_median)
                row["app_cold_host"].append(cold.host_median)
                row["app_cold_device"].append(cold.device_median)
                row.setdefault("app_min_host", []).append(min(warm.host_min, cold.host_min))
                if warm.device_min is not None and cold.device_min is not None:
                    row.setdefault("app_min_device", []).append(min(warm.device_min, cold.device_min))
                row["pipelined"].append(statistics.median(
                    timer.pipelined(fn, plan.pipelined_calls) for _ in range(plan.pipelined_repeats)
                ))
                row["timer"].append(timer_ms(fn, plan.timer_min_s, threads))
                if cuda:
                    for method, measure in (("do_bench", do_bench_ms),
                                            ("do_bench_cudagraph", do_bench_cudagraph_ms)):
                        if method == "do_bench_cudagraph" and name in CUDAGRAPH_VARIANTS:
                            continue
                        try:
                            row[method].append(measure(fn, plan.bench_rep_ms))
                        except Exception as exc:  # noqa: BLE001 - reported as the method's figure
                            errors[name][method] = f"{type(exc).__name__}: {str(exc)[:200]}"
                            row[method].append(None)
                            with contextlib.suppress(Exception):
                                torch.cuda.synchronize()
                report.say(
                    f"   round {r + 1} {name:16s} app {ms(warm.host_median)} host"
                    + (f" / {ms(warm.device_median)} dev, cold {ms(cold.device_median)} dev"
                       if cuda else f", cold {ms(cold.host_median)}")
                    + f", pipelined {ms(row['pipelined'][-1])}, Timer {ms(row['timer'][-1])}"
                    + (f", do_bench {ms(row['do_bench'][-1])}, do_bench_cudagraph "
                       f"{ms(row['do_bench_cudagraph'][-1] if row['do_bench_cudagraph'] else None)}"
                       if cuda else "")
                )
            report.save()

        figures["floor_host_ms"] = [f[0] for f in floors]
        figures["floor_device_ms"] = [f[1] for f in floors]
        figures["per_round"] = per
        figures["method_errors"] = errors
        figures["medians"] = {
            name: {m: median(vals) for m, vals in row.items()} for name, row in per.items()
        }
        _judge_timing(report, cuda, per, errors, figures)
        _judge_floor(report, cuda, per, floors)
        late = {name: fn().detach().clone() for name, fn in steps.items()}
        timer.sync()
        if cuda:
            with report.guard("compare.profiler", "profiler trace and CUDA-graph skip counter"):
                _profile(report, steps, figures)
        _replay_and_errors(report, cuda, cfg.dtype, first, late, reference, figures)
        if cuda:
            for name in [n for n in steps if n in CUDAGRAPH_VARIANTS]:
                try:
                    value = do_bench_cudagraph_ms(steps[name], plan.bench_rep_ms)
                    figures["medians"][name]["do_bench_cudagraph"] = value
                    report.say(f"   {name}: do_bench_cudagraph {ms(value)} (after the rounds)")
                except Exception as exc:  # noqa: BLE001
                    errors[name]["do_bench_cudagraph"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                    report.say(f"   {name}: do_bench_cudagraph failed: {errors[name]['do_bench_cudagraph']}")
                    with contextlib.suppress(Exception):
                        torch.cuda.synchronize()
            with report.guard("compare.l2_probe", "cold L2 slows an L2-resident read"):
                _l2_probe(report, plan, device, timer, flush, figures)
    from torch._dynamo import reset as dynamo_reset

    steps.clear()
    first.clear()
    del flush, reference
    gc.collect()
    dynamo_reset()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def _judge_timing(
    report: Report, cuda: bool, per: dict[str, dict[str, list[float | None]]],
    errors: dict[str, dict[str, str]], figures: dict[str, Any],
) -> None:
    summary: dict[str, Any] = {}
    for name, row in per.items():
        cold = row["app_cold_device"] if cuda else row["app_cold_host"]
        warm = row["app_device"] if cuda else row["app_host"]
        vs_bench = ratios(cold, row["do_bench"]) if cuda else []
        failed = "; ".join(f"{m}: {e}" for m, e in errors.get(name, {}).items())
        vs_timer = ratios(row["pipelined"], row["timer"])
        cold_warm = ratios(cold, warm)
        summary[name] = {"cold_vs_do_bench": vs_bench, "pipelined_vs_timer": vs_timer,
                         "cold_vs_warm": cold_warm}
        if cuda:
            ok = bool(vs_bench) and abs(statistics.median(vs_bench) - 1) <= AGREEMENT
            report.check(
                f"compare.{name}.cold_vs_do_bench",
                f"{name}: app cold-L2 device median within ±5 % of do_bench's", ok,
                f"app {ms(median(cold))}, do_bench {ms(median(row['do_bench']))}, "
                + ratio_text(vs_bench), failed, cuda_only=True,
            )
        else:
            report.skip(f"compare.{name}.cold_vs_do_bench",
                        f"{name}: app cold-L2 device median within ±5 % of do_bench's",
                        CUDA_ONLY, cuda_only=True)
        report.judge(
            cuda, f"compare.{name}.pipelined_vs_timer",
            f"{name}: app pipelined figure within ±5 % of Timer.blocked_autorange",
            bool(vs_timer) and abs(statistics.median(vs_timer) - 1) <= AGREEMENT,
            f"pipelined {ms(median(row['pipelined']))}, Timer {ms(median(row['timer']))}, "
            + ratio_text(vs_timer), CPU_TIMING,
        )
        report.judge(
            cuda, f"compare.{name}.cold_ge_warm",
            f"{name}: cold-L2 {'device' if cuda else 'host'} time ≥ warm "
            f"(within {COLD_WARM_SLACK:.0%})",
            bool(cold_warm) and statistics.median(cold_warm) >= 1 - COLD_WARM_SLACK,
            f"cold {ms(median(cold))}, warm {ms(median(warm))}, " + ratio_text(cold_warm),
            CPU_TIMING,
        )
    figures["ratios"] = summary


def _judge_floor(
    report: Report, cuda: bool, per: dict[str, dict[str, list[float | None]]],
    floors: list[tuple[float, float | None]],
) -> None:
    floor_host = statistics.median(f[0] for f in floors)
    device_floors = [f[1] for f in floors if f[1] is not None]
    floor_device = statistics.median(device_floors) if device_floors else None
    fastest = {n: min(v for v in row["app_min_host"] if v is not None) for n, row in per.items()}
    ok = all(floor_host < m for m in fastest.values())
    figure = f"floor {ms(floor_host, 5)} host; fastest calls " + ", ".join(
        f"{n} {ms(m)}" for n, m in fastest.items())
    if cuda:
        fastest_dev = {n: min(row.get("app_min_device") or [float("inf")]) for n, row in per.items()}
        ok = ok and floor_device is not None and all(floor_device < m for m in fastest_dev.values())
        figure += f"; device floor {ms(floor_device, 5)}, fastest " + ", ".join(
            f"{n} {ms(m)}" for n, m in fastest_dev.items())
    report.check("compare.harness_floor", "harness floor below every variant's fastest call",
                 ok, figure)


def _profile(report: Report, steps: dict[str, Callable[[], Any]], figures: dict[str, Any]) -> None:
    from torch.profiler import ProfilerActivity, profile

    launches: dict[str, int] = {}
    for name, fn in steps.items():
        calls = 5
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
        launches[name] = sum(
            int(e.count) for e in prof.key_averages() if "graphlaunch" in e.key.lower()
        )
        report.say(f"   profiler {name}: {launches[name]} cudaGraphLaunch in {calls} calls")
    figures["cuda_graph_launches"] = launches
    for name in [n for n in steps if n in CUDAGRAPH_VARIANTS]:
        report.check(f"compare.{name}.cudagraph_launch",
                     f"profiler shows cudaGraphLaunch for {name}", launches[name] >= 5,
                     f"{launches[name]} launches in 5 calls; others: " + ", ".join(
                         f"{n} {c}" for n, c in launches.items() if n != name), cuda_only=True)
    from torch._dynamo.utils import counters

    skips = int(counters["inductor"].get("cudagraph_skips", 0))
    figures["cudagraph_skips"] = skips
    report.check("compare.cudagraph_skips", "Inductor counted 0 CUDA-graph skips", skips == 0,
                 f"cudagraph_skips = {skips}", cuda_only=True)


def _replay_and_errors(
    report: Report, cuda: bool, dtype: str, first: dict[str, torch.Tensor],
    late: dict[str, torch.Tensor], reference: torch.Tensor, figures: dict[str, Any],
) -> None:
    errors = {n: rule.deviation(out, reference).error for n, out in first.items()}
    figures["output_error"] = errors
    report.say("   normwise error vs fp64: " + ", ".join(f"{n} {e:.2e}" for n, e in errors.items()))
    for name in first:
        diff = (float((late[name].double() - first[name].double()).abs().max())
                if first[name].numel() else 0.0)
        figures.setdefault("replay_max_diff", {})[name] = diff
        if cuda and name not in CUDAGRAPH_VARIANTS:
            continue
        report.check(f"compare.{name}.replay_identical",
                     f"{name}: a later call's output is bit-identical to the first",
                     diff == 0.0, f"max |late − first| = {diff:.3g}")


def _l2_probe(
    report: Report, plan: Plan, device: torch.device, timer: CallTimer, flush: CacheFlush,
    figures: dict[str, Any],
) -> None:
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    if l2 <= 0:
        report.skip("compare.l2_probe", "cold L2 slows an L2-resident read", "L2 size unknown",
                    cuda_only=True)
        return
    data = torch.randn(max(1, l2 // 4 // 4), device=device)

    def read() -> Any:
        return data.sum()

    warm_up(read, timer, 0.05)
    warm = app_loop(timer, read, plan.probe_calls)
    cold = app_loop(timer, read, plan.probe_calls, flush)
    assert warm.device_median is not None and cold.device_median is not None
    r = cold.device_median / warm.device_median
    figures["l2_probe"] = {"bytes": data.numel() * 4, "warm_ms": warm.device_median,
                           "cold_ms": cold.device_median, "ratio": r}
    report.check("compare.l2_probe", "cold L2 slows an L2-resident read (the flush evicts)",
                 r >= L2_PROBE_MIN_RATIO,
                 f"sum of {format_bytes(data.numel() * 4)}: warm {ms(warm.device_median)}, "
                 f"cold {ms(cold.device_median)}, ratio {r:.2f} (needs ≥ {L2_PROBE_MIN_RATIO})",
                 cuda_only=True)


# -- stages 4-6: the app through real workers ------------------------------------------------


def run_app(report: Report, store: RunStore, tag: str, config: BenchmarkConfig) -> RunResult:
    config.validate()

    def on_event(event: protocol.Event) -> None:
        if isinstance(event, protocol.WarningEvent):
            report.say(f"   warning: {event.message}")
        elif isinstance(event, protocol.ErrorEvent):
            report.say(f"   error ({event.kind}) in {event.variant or 'the run'}: {event.message}")
        elif isinstance(event, protocol.CompiledEvent):
            report.say(f"   {event.variant}: compile {event.compile_s:.2f} s ({event.compile_timing})")
        elif isinstance(event, protocol.PhaseEvent) and event.variant:
            report.say(f"   {event.variant}: {event.phase}  (t = {report.elapsed():.0f} s)")

    session = RunSession(
        config, store, launcher=WorkerLauncher(env=worker_environment()), on_event=on_event,
        on_log=lambda line: report.worker_line(tag, line),
    )
    report.session_idle.clear()
    report.active_session = session
    try:
        outcome = session.run()
    finally:
        report.active_session = None
        report.session_idle.set()
    report.pack_runs()
    if outcome.folder is None:
        return outcome.run
    return load_run(outcome.folder)


def app_config(plan: Plan, device: str, **changes: Any) -> BenchmarkConfig:
    base: dict[str, Any] = dict(
        layers=plan.app_layers, batch_size=plan.app_batch, dtype=plan.app_dtype, device=device,
        workload="inference", variants=list(plan.app_variants), iterations=plan.app_iterations,
        warmup=plan.app_warmup, warmup_min_ms=plan.app_warmup_min_ms, rounds=1,
        compile_cache="cold", compile_timing="in_run", label="gpu_check",
    )
    base.update(changes)
    return BenchmarkConfig(**base)


def _status(value: object) -> str:
    return str(getattr(value, "value", value))


def variant_figures(run: RunResult) -> dict[str, dict[str, Any]]:
    rows = {r.name: r for r in summarize(run)}
    out: dict[str, dict[str, Any]] = {}
    for name, v in run.variants.items():
        row = rows.get(name)
        out[name] = {
            "status": _status(v.status),
            "error": v.error,
            "median_ms": row.median_ms if row else None,
            "device_median_ms": row.device_median_ms if row else None,
            "pipelined_ms": v.pipelined_ms,
            "speedup": row.speedup if row else None,
            "device_speedup": row.device_speedup if row else None,
            "verdict": row.verdict_text if row else "",
            "compile_s": v.compile_s,
            "compile_timing": v.compile_timing,
            "cudagraph_record_ms": v.cudagraph_record_ms,
            "peak_memory_bytes": v.peak_memory_bytes,
            "memory_kind": v.memory_kind,
            "allclose": v.allclose,
            "checks": v.checks,
            "cudagraphs": v.cudagraphs,
            "clock": v.clock,
            "warnings": v.warnings,
            "rounds": len(v.samples.measured_rounds()),
        }
    return out


def print_app_table(report: Report, figs: dict[str, dict[str, Any]]) -> None:
    report.say(f"   {'variant':16s} {'median':>11s} {'device':>11s} {'pipelined':>11s} "
               f"{'speedup':>8s} {'dev spd':>8s} {'compile':>8s} {'peak mem':>10s} correct")
    for name, f in figs.items():
        def num(v: float | None, fmt: str) -> str:
            return "–" if v is None else format(v, fmt)

        report.say(
            f"   {name:16s} {num(f['median_ms'], '.4f'):>8s} ms {num(f['device_median_ms'], '.4f'):>8s} ms "
            f"{num(f['pipelined_ms'], '.4f'):>8s} ms {num(f['speedup'], '.2f'):>7s}× "
            f"{num(f['device_speedup'], '.2f'):>7s}× {num(f['compile_s'], '.2f'):>7s}s "
            f"{format_bytes(f['peak_memory_bytes']) if f['peak_memory_bytes'] is not None else '–':>10s} "
            f"{f['allclose']}"
            + (f"  cudagraphs: {f['cudagraphs']}" if f["cudagraphs"] else "")
        )


def check_app_run(
    report: Report, tag: str, run: RunResult, cuda: bool, nvml: Nvml | None,
    figures: dict[str, Any], compile_timing: str,
) -> None:
    cfg = run.config
    assert cfg is not None
    inference = cfg.workload == "inference"
    figs = variant_figures(run)
    figures["run_id"] = run.run_id
    figures["status"] = _status(run.status)
    figures["message"] = run.message
    figures["measurement"] = run.measurement
    figures["variants"] = figs
    print_app_table(report, figs)
    variants = run.variants

    problems = [f"{n}: {v.error}" for n, v in variants.items() if v.error]
    done = [n for n, v in variants.items() if _status(v.status) == "done"]
    report.check(
        f"{tag}.complete", "run complete, every variant done",
        _status(run.status) == "complete" and len(done) == len(cfg.variants) and not problems,
        f"status {_status(run.status)}; done: {', '.join(done) or 'none'}",
        "; ".join(problems)[:500] or run.message[:300],
    )

    def err(v: Any, key: str) -> float | None:
        d = v.checks.get(key) or {}
        return d.get("error") if isinstance(d, dict) else None

    errs = ", ".join(
        f"{n} {err(v, 'output'):.2e}" + (f" (grads {err(v, 'gradients'):.2e})" if err(v, "gradients") is not None else "")
        for n, v in variants.items() if err(v, "output") is not None
    )
    report.check(
        f"{tag}.correct", "every variant correct by the app's rule",
        bool(variants) and all(v.allclose is True for v in variants.values()),
        f"normwise error vs fp64: {errs}",
        "; ".join(p for v in variants.values() for p in (v.checks.get("problems") or []))[:500],
    )

    compiled = [n for n in cfg.variants if n in variants and n not in ("eager", "eager-aa")]
    bound: list[str] = []
    ok = bool(compiled)
    for n in compiled:
        own, eager = err(variants[n], "output"), err(variants[n], "eager_output")
        if own is None or eager is None:
            ok = False
            bound.append(f"{n} no figures")
            continue
        allowed = max(rule.EAGER_MULTIPLE * eager, rule.ERROR_FLOOR[cfg.dtype])
        ok = ok and own <= allowed
        bound.append(f"{n} {own:.2e} ≤ {allowed:.2e}")
    report.check(f"{tag}.error_vs_eager",
                 f"compiled error ≤ max({rule.EAGER_MULTIPLE:g}× eager's, the {cfg.dtype} floor)",
                 ok, ", ".join(bound))

    if inference:
        diffs = {n: v.checks.get("replay_max_diff") for n, v in variants.items()}
        report.check(f"{tag}.replay_identical",
                     "steady-state output bit-identical to the first (replay_max_diff == 0)",
                     bool(diffs) and all(d == 0 for d in diffs.values()),
                     ", ".join(f"{n} {d}" for n, d in diffs.items()))
        graphed = [n for n in cfg.variants if n in CUDAGRAPH_VARIANTS]
        states = ", ".join(f"{n}: {variants[n].cudagraphs}" for n in graphed if n in variants)
        if not graphed:
            report.skip(f"{tag}.cudagraphs_used", "CUDA graphs used by the CUDA-graph variants",
                        "no CUDA-graph variant in this run" + ("" if cuda else f"; {CUDA_ONLY}"),
                        cuda_only=True)
        elif cuda:
            report.check(f"{tag}.cudagraphs_used", "CUDA graphs used by the CUDA-graph variants",
                         all(n in variants and variants[n].cudagraphs == "used" for n in graphed),
                         states, cuda_only=True)
        else:
            report.skip(f"{tag}.cudagraphs_used", "CUDA graphs used by the CUDA-graph variants",
                        CUDA_ONLY, states, cuda_only=True)

    m = run.measurement
    floor, floor_dev = m.get("harness_floor_ms"), m.get("harness_floor_device_ms")
    mins = {n: float(v.samples.measured_wall_ms().min()) for n, v in variants.items()
            if v.samples.measured_wall_ms().size}
    ok = floor is not None and bool(mins) and all(floor < x for x in mins.values())
    figure = f"floor {ms(floor, 5)}; fastest " + ", ".join(f"{n} {ms(x)}" for n, x in mins.items())
    if cuda:
        dev_mins = {n: float(d.min()) for n, v in variants.items()
                    if (d := v.samples.measured_device_ms()) is not None and d.size}
        ok = ok and floor_dev is not None and all(floor_dev < x for x in dev_mins.values())
        figure += f"; device floor {ms(floor_dev, 5)}"
    report.check(f"{tag}.harness_floor", "harness floor in run.json, below every variant's minimum",
                 ok, figure)

    if cuda:
        lines, ok = [], bool(variants)
        for n, v in variants.items():
            wall, dev = v.samples.measured_wall_ms(), v.samples.measured_device_ms()
            has = dev is not None and len(dev) == len(wall) and len(wall) > 0
            below = has and float(statistics.median(dev)) <= float(statistics.median(wall)) * 1.02
            ok = ok and bool(below)
            lines.append(f"{n} {len(dev) if dev is not None else 0}/{len(wall)} "
                         + (f"dev {statistics.median(dev):.4f} ≤ host {statistics.median(wall):.4f}" if has else ""))
        report.check(f"{tag}.device_time", "CUDA-event device time per call, ≤ host time", ok,
                     "; ".join(lines), cuda_only=True)
    else:
        report.skip(f"{tag}.device_time", "CUDA-event device time per call, ≤ host time",
                    CUDA_ONLY, cuda_only=True)

    peaks = {n: v.peak_memory_bytes for n, v in variants.items()}
    peak_text = ", ".join(f"{n} {format_bytes(p) if p is not None else '–'}" for n, p in peaks.items())
    kind = next((v.memory_kind for v in variants.values() if v.memory_kind), "")
    report.judge(
        cuda, f"{tag}.memory_differs",
        "each variant's own peak memory: eager's > 0 and not all the same",
        all(p is not None for p in peaks.values()) and (peaks.get("eager") or 0) > 0
        and len(set(peaks.values())) > 1,
        f"{kind}: {peak_text}",
        "on the CPU a tiny model's peaks fall inside memory already resident: reported only",
    )

    starts = {n: (v.clock.get("start") or {}).get("mhz") for n, v in variants.items()}
    source = m.get("clock_source")
    clock_text = f"source {source}; start MHz " + ", ".join(f"{n} {s}" for n, s in starts.items())
    if cuda:
        if nvml is None:
            report.skip(f"{tag}.clock_readings", "SM clock read at each timed window's edges",
                        "no NVML on this machine", clock_text, cuda_only=True)
        else:
            report.check(
                f"{tag}.clock_readings", "SM clock read at each timed window's edges",
                source == "nvml_sm_clock" and all(s is not None for s in starts.values()),
                clock_text, cuda_only=True,
            )
    elif any(s is not None for s in starts.values()):
        report.check(f"{tag}.clock_readings", "core clock read at each timed window's edges",
                     all(s is not None for s in starts.values()), clock_text)
    else:
        report.skip(f"{tag}.clock_readings", "core clock read at each timed window's edges",
                    "this machine exposes no CPU frequency in sysfs", clock_text)

    if cuda:
        if nvml is None:
            report.skip(f"{tag}.nvml_in_run", "NVML readings and the GPU's UUID kept in the run",
                        "no NVML on this machine", cuda_only=True)
        else:
            folder_text = ""
            with contextlib.suppress(OSError):
                folder_text = run_json_text(report, run)
            has_uuid = bool(nvml.uuid) and nvml.uuid in folder_text.lower()
            report.check(
                f"{tag}.nvml_in_run", "NVML readings and the GPU's UUID kept in the run",
                len(run.gpu_state) > 0 and has_uuid,
                f"{len(run.gpu_state)} gpu_state readings; UUID {nvml.uuid} "
                f"{'found' if has_uuid else 'not found'} in run.json", cuda_only=True,
            )
    else:
        report.skip(f"{tag}.nvml_in_run", "NVML readings and the GPU's UUID kept in the run",
                    CUDA_ONLY, cuda_only=True)

    times = {n: (variants[n].compile_s, variants[n].compile_timing) for n in compiled if n in variants}
    report.check(
        f"{tag}.compile_time", f"compile time reported per compiled variant ({compile_timing})",
        bool(times) and all(s is not None and s > 0 and t == compile_timing for s, t in times.values()),
        ", ".join(f"{n} {s if s is None else round(s, 2)} s {t}" for n, (s, t) in times.items()),
    )
    pipe = {n: v.pipelined_ms for n, v in variants.items()}
    report.check(f"{tag}.pipelined", "pipelined figure per variant",
                 bool(pipe) and all(p is not None and p > 0 for p in pipe.values()),
                 ", ".join(f"{n} {ms(p)}" for n, p in pipe.items()))
    if cfg.rounds > 1:
        got = {n: len(v.samples.measured_rounds()) for n, v in variants.items()}
        report.check(f"{tag}.rounds", f"{cfg.rounds} rounds recorded per variant",
                     bool(got) and all(g == cfg.rounds for g in got.values()),
                     ", ".join(f"{n} {g}" for n, g in got.items()))


def run_json_text(report: Report, run: RunResult) -> str:
    if report.runs_root is None:
        return ""
    for path in report.runs_root.glob(f"*{run.run_id}*/run.json"):
        return path.read_text(encoding="utf-8")
    for path in report.runs_root.glob("*/run.json"):
        text = path.read_text(encoding="utf-8")
        if run.run_id and run.run_id in text:
            return text
    return ""


def stage_app(
    report: Report, store: RunStore, tag: str, config: BenchmarkConfig, cuda: bool,
    nvml: Nvml | None, figures: dict[str, Any],
) -> None:
    figures["config"] = config.to_dict()
    report.say(f"   {config.workload}, {config.dtype}, MLP {config.layers}, batch {config.batch_size}, "
               f"{'+'.join(config.variants)}, rounds {config.rounds}, cache {config.compile_cache}, "
               f"compile timing {config.compile_timing}")
    run = run_app(report, store, tag, config)
    check_app_run(report, tag, run, cuda, nvml, figures, config.compile_timing)


# -- the end: imports ------------------------------------------------------------------------


def stage_imports(report: Report, figures: dict[str, Any]) -> None:
    loaded = sorted(
        m for m in sys.modules
        if m.split(".")[0] in DESKTOP_MODULES
        or any(m == a or m.startswith(a + ".") for a in DESKTOP_APP_MODULES)
    )
    figures["loaded"] = loaded
    report.check("imports.no_desktop_modules",
                 "no desktop-only module imported (PySide6, pyqtgraph, platformdirs, the GUI, "
                 "the CLI, psutil users)", not loaded, ", ".join(loaded) or "none")


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=None,
                    help="folder for the three files (default: a new temporary folder)")
    ap.add_argument("--deadline", type=float, default=230.0,
                    help="seconds after which the script stops with what it has (exit 2)")
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    ap.add_argument("--tiny", action="store_true", help="tiny sizes (the test's CPU run)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    with contextlib.suppress(Exception):
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    args = parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="gpu-check-"))
    report = Report(out, {k: str(v) for k, v in vars(args).items()}, args.deadline)
    deadline = Deadline(args.deadline, report.expire)
    deadline.start()
    device = torch.device(resolve_device(args.device))
    cuda = device.type == "cuda"
    plan = make_plan(cuda, args.tiny)
    report.data["plan"] = asdict(plan)
    report.say(f"gpu_check: device {device}, {'tiny' if args.tiny else 'full'} sizes, "
               f"deadline {args.deadline:.0f} s, files in {out}")
    work = Path(tempfile.mkdtemp(prefix="gpu-check-runs-"))
    report.runs_root = work / "runs"
    store = RunStore(report.runs_root)
    if cuda and not torch.cuda.is_available():
        with report.stage_of("environment"):
            report.check("env.cuda", "CUDA available", False,
                         f"torch {torch.__version__} sees no CUDA device", cuda_only=True)
        deadline.cancel()
        return report.close("failed")
    if cuda:
        torch.cuda.set_device(device)

    nvml: Nvml | None = None
    with report.stage_of("environment") as figures:
        nvml = stage_environment(report, device, figures)
    if cuda:
        if report.may_start("gemm", plan.stage_needs_s.get("gemm", 0)):
            with report.stage_of("gemm") as figures:
                stage_gemm(report, plan, device, figures)
    else:
        report.skip("gemm.bf16_peak", f"bf16 GEMM ≥ {GEMM_MIN_FRACTION:.0%} of dense peak",
                    CUDA_ONLY, cuda_only=True)
    if report.may_start("same_process", plan.stage_needs_s["same_process"]):
        with report.stage_of("same_process") as figures:
            stage_same_process(report, plan, device, figures)
    dev = "cuda" if cuda else "cpu"
    if cuda and device.index:
        dev = f"cuda:{device.index}"
    sequential_s = plan.stage_needs_s["app_sequential"]
    if report.may_start("app_sequential", sequential_s):
        with report.stage_of("app_sequential") as figures:
            stage_app(report, store, "app_sequential", app_config(plan, dev), cuda, nvml, figures)
        sequential_s = report.data["stages"]["app_sequential"].get("elapsed_s", sequential_s)
    if report.may_start("app_training", plan.stage_needs_s["app_training"]):
        with report.stage_of("app_training") as figures:
            config = app_config(
                plan, dev, workload="training", dtype=plan.train_dtype,
                variants=list(plan.train_variants), iterations=plan.train_iterations,
                compile_timing=plan.train_compile_timing,
            )
            stage_app(report, store, "app_training", config, cuda, nvml, figures)
    if report.may_start("app_rounds", max(plan.stage_needs_s["app_rounds"], 0.8 * sequential_s)):
        with report.stage_of("app_rounds") as figures:
            config = app_config(plan, dev, rounds=plan.app_rounds)
            stage_app(report, store, "app_rounds", config, cuda, nvml, figures)
    with report.stage_of("imports") as figures:
        stage_imports(report, figures)
    if nvml is not None:
        with contextlib.suppress(Exception):
            end = ClockProbe.for_device(device, nvml.handle, nvml.pynvml).read()
            report.data["environment"].setdefault("gpu", {})["clocks_end"] = end.to_dict()
            report.say(f"   SM clock at the end: {end.mhz} MHz, reasons {', '.join(end.reasons) or 'none'}")
    deadline.cancel()
    report.pack_runs()
    shutil.rmtree(work, ignore_errors=True)
    return report.close("deadline" if report.deadline_hit else
                        ("failed" if report.counts()[FAIL] else "passed"))


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
