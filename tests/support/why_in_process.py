"""Diagnostics tests that run torch (Dynamo, the profiler, the runner) in the test process.

``tests/test_why.py`` runs each of them in a Python process of its own (:func:`run_check`):
the pytest processes also drive Qt widgets, and the window process never holds torch.
Those processes fork from multiprocessing's forkserver, which has imported torch and
Dynamo and runs nothing else: each check starts with Dynamo, the profiler and the thread
settings as a fresh Python has them, without importing torch again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import traceback
from types import SimpleNamespace

import torch
from torch import nn

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.engine.diagnostics import WhyCollector
from compile_studio.engine.runner import BenchmarkRunner
from compile_studio.engine.sink import ListSink
from compile_studio.engine.workloads import Workload, count_flops, own_forward
from compile_studio.results.explain.why import classify, sentence
from compile_studio.results.explain.why_files import compact
from compile_studio.results.explain.why_rules import Evidence, evidence_of
from compile_studio.results.storage.recorder import RunRecorder

BASE = {
    "layers": "32,32,8", "batch_size": 4, "device": "cpu", "iterations": 12, "warmup": 2,
    "warmup_min_ms": 0, "rounds": 2, "compile_timing": "in_run",
}


def check_recompile_with_its_guard_reason() -> None:
    weight = torch.randn(8, 8)

    def layer(x):
        return torch.relu(x @ weight)

    collector = WhyCollector()
    try:
        fn = torch.compile(layer, backend="aot_eager", dynamic=False)
        collector.first_call_starts("v")
        fn(torch.randn(2, 8))
        collector.first_call_done("v", 1.0)
        fn(torch.randn(3, 8))
        collector.recompiled("v", in_window=True)
        sink = ListSink()
        runner = SimpleNamespace(
            sink=sink, device=torch.device("cpu"), x=(torch.randn(3, 8),), stop=threading.Event(),
            timer=SimpleNamespace(sync=lambda: None), no_grad=torch.no_grad,
        )
        collector.report(runner, "v", lambda xs: fn(*xs), compiled=True)
    finally:
        collector.close()
    (event,) = [e for e in sink.events if isinstance(e, protocol.DiagnosticsEvent)]
    (recompile,) = event.why["recompiles"]
    assert "size mismatch at index 0" in recompile["reason"] and "expected 2, actual 3" in recompile["reason"]
    assert recompile["in_window"] is True and "layer" in recompile["frame"]
    assert event.why["compile"]["graphs"] == 1 and event.why["profile"]["calls"] >= 1


def check_hit_recompile_limit() -> None:
    weight = torch.randn(8, 8)

    def capped(x):
        return torch.tanh(x @ weight)

    collector = WhyCollector()
    try:
        with torch._dynamo.config.patch(recompile_limit=1):
            fn = torch.compile(capped, backend="eager", dynamic=False)
            collector.first_call_starts("v")
            fn(torch.randn(2, 8))
            collector.first_call_done("v", 1.0)
            fn(torch.randn(3, 8))  # over the limit: Dynamo gives up and runs it eagerly
        sink = ListSink()
        runner = SimpleNamespace(
            sink=sink, device=torch.device("cpu"), x=(torch.randn(3, 8),), stop=threading.Event(),
            timer=SimpleNamespace(sync=lambda: None), no_grad=torch.no_grad,
        )
        collector.report(runner, "v", lambda xs: fn(*xs), compiled=True)
    finally:
        collector.close()
    (event,) = [e for e in sink.events if isinstance(e, protocol.DiagnosticsEvent)]
    assert "recompile_limit (1)" in event.why["recompile_limit"] and "capped" in event.why["recompile_limit"]
    short = compact(event.why)["recompile_limit"]
    assert short.startswith("recompile_limit = 1 for capped (why_in_process.py:"), short
    assert "last guard failure: tensor 'x' size mismatch at index 0" in short and len(short) <= 200


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)

    def forward(self, x):
        return torch.tanh(self.a(x))


def check_refused_recompile_is_named_as_the_user_wrote_it() -> None:
    """The app's renamed forward (``forward_max_autotune``) shows as ``forward``; no "? (?)" frame."""
    model = own_forward(_Tiny(), "max-autotune")
    assert type(model).forward.__name__ == "forward_max_autotune"
    collector = WhyCollector()
    try:
        with torch._dynamo.config.patch(recompile_limit=1):
            fn = torch.compile(model, backend="eager", dynamic=False)
            collector.first_call_starts("max-autotune")
            fn(torch.randn(2, 8))
            collector.first_call_done("max-autotune", 1.0)
            fn(torch.randn(3, 8))  # refused: over the limit
            collector.recompiled("max-autotune", in_window=True)
        sink = ListSink()
        runner = SimpleNamespace(
            sink=sink, device=torch.device("cpu"), x=(torch.randn(3, 8),), stop=threading.Event(),
            timer=SimpleNamespace(sync=lambda: None), no_grad=torch.no_grad,
        )
        collector.report(runner, "max-autotune", lambda xs: fn(*xs), compiled=True)
    finally:
        collector.close()
    (event,) = [e for e in sink.events if isinstance(e, protocol.DiagnosticsEvent)]
    why = event.why
    text = repr(why["compile"]) + repr(why["recompiles"]) + why["recompile_limit"]
    assert "forward_max_autotune" not in text, text
    assert why["compile"]["frames"][0].startswith("forward (")
    (refused,) = why["recompiles"]
    assert refused["frame"].startswith("forward (") and refused["refused"] is True, refused
    assert "'forward'" in why["recompile_limit"]
    eager = Evidence("eager", "cpu", kernels=2, flops_per_call=256.0, elements_per_call=80.0)
    said = classify(eager, evidence_of(compact(why), "max-autotune"))
    assert said.startswith("compile did not run your model: the recompile limit was hit "
                           "(recompile_limit = 1 for forward (why_in_process.py:"), said
    assert "; the timed calls ran eager; eager is dispatch-bound" in said, said


def _in_process(layers: str, batch: int, iterations: int):
    """A run of eager and aot_eager in this process, on one thread (no neighbour's core stalls)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        config = BenchmarkConfig.from_dict(
            {**BASE, "layers": layers, "batch_size": batch, "iterations": iterations, "warmup": 1,
             "rounds": 1, "variants": ["eager", "aot_eager"]}
        )
        sink = ListSink()
        BenchmarkRunner(config, sink).run()
    finally:
        torch.set_num_threads(threads)
    recorder = RunRecorder(config)
    for event in sink.events:
        recorder.handle(event)
    why = {e.variant: e.why for e in sink.events if isinstance(e, protocol.DiagnosticsEvent)}
    return recorder.run, why


def check_seed_mlp_gemm_bound_tiny_dispatch_bound() -> None:
    seed, seed_why = _in_process("1024,1024,512,10", 256, 3)
    ops = seed_why["eager"]["profile"]["ops"]
    assert ops[0]["name"] == "aten::addmm"  # the GEMMs hold the largest share
    assert ops[0]["calls_per_call"] == 3  # one per Linear per call
    tiny, _ = _in_process("64,64,10", 1, 40)
    big, small = sentence(seed, "aot_eager"), sentence(tiny, "aot_eager")
    # beside other work (the rest of the suite) a profile may be too noisy to classify:
    # that is allowed, another class is not
    noisy = "the profile is too noisy to classify"
    assert big.startswith(("eager is compute-bound: GEMMs hold", noisy)), big
    if big.startswith(noisy):
        assert "GEMMs hold" in big, big
    assert small.startswith("eager is dispatch-bound: 3 operators per call, "), small


# -- the class under load: the same model profiled on a quiet core and beside a busy loop ------

SPIN = "import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"


def _models() -> dict[str, tuple[nn.Module, torch.Tensor]]:
    """Three models clear of the lines: dispatch-bound, GEMM-bound, bound by elementwise operators."""
    torch.manual_seed(0)
    chain = nn.Sequential(*[m for _ in range(4) for m in (nn.LayerNorm(512), nn.GELU())], nn.Linear(512, 8))
    return {
        "tiny MLP": (nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)), torch.randn(1, 64)),
        "GEMM-heavy MLP": (
            nn.Sequential(nn.Linear(384, 384), nn.ReLU(), nn.Linear(384, 384), nn.ReLU(), nn.Linear(384, 384)),
            torch.randn(64, 384),
        ),
        "LayerNorm/GELU chain": (chain, torch.randn(256, 512)),
    }


def _cpu_seconds(pid: int) -> float:
    """CPU seconds a process has run (user + system), from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _runqueue_wait_s() -> float:
    """Seconds this thread has waited for a CPU while runnable (``/proc/thread-self/schedstat``)."""
    with open("/proc/thread-self/schedstat") as fh:
        return int(fh.read().split()[1]) / 1e9


def _capture(model: nn.Module, x: torch.Tensor, flops: float | None) -> tuple[Evidence, float]:
    """One diagnostics profile of eager ``model``: its evidence and the wall seconds it took."""
    sink = ListSink()
    runner = SimpleNamespace(
        sink=sink, device=torch.device("cpu"), x=(x,), stop=threading.Event(),
        timer=SimpleNamespace(sync=lambda: None), no_grad=torch.no_grad,
    )
    collector = WhyCollector()
    t0 = time.perf_counter()
    try:
        collector.report(runner, "eager", lambda xs: model(*xs), compiled=False)
    finally:
        collector.close()
    took = time.perf_counter() - t0
    (event,) = [e for e in sink.events if isinstance(e, protocol.DiagnosticsEvent)]
    return evidence_of(compact(event.why), "eager", flops_per_call=flops), took


def check_class_holds_under_load() -> None:
    """Quiet and loaded captures of each model: one class (or "too noisy"), never two."""
    cpu = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    torch.set_num_threads(1)
    models = _models()
    flops = {k: count_flops(Workload(m, (x,)), False) for k, (m, x) in models.items()}
    for m, x in models.values():  # warm: first calls allocate
        with torch.no_grad():
            for _ in range(3):
                m(x)
    rounds = 3
    quiet: dict[str, list[Evidence]] = {k: [] for k in models}
    loaded: dict[str, list[Evidence]] = {k: [] for k in models}
    quiet_s = loaded_s = 0.0
    for _ in range(rounds):
        for k, (m, x) in models.items():
            e, took = _capture(m, x, flops[k])
            quiet[k].append(e)
            quiet_s += took
    spinner = subprocess.Popen([sys.executable, "-c", SPIN, str(cpu)])
    try:
        time.sleep(0.3)
        assert spinner.poll() is None, "the busy loop did not start"
        spun = _cpu_seconds(spinner.pid)
        waited = _runqueue_wait_s()
        for _ in range(rounds):
            for k, (m, x) in models.items():
                e, took = _capture(m, x, flops[k])
                loaded[k].append(e)
                loaded_s += took
        spun = _cpu_seconds(spinner.pid) - spun
        waited = _runqueue_wait_s() - waited
    finally:
        spinner.kill()
        spinner.wait()
    report: list[str] = [
        f"loaded/quiet wall time {loaded_s / quiet_s:.2f}x; the busy loop ran {spun:.2f} s of {loaded_s:.2f} s;"
        f" the captures waited {waited:.2f} s for their core"
    ]
    for k in models:
        q = [e.bound() for e in quiet[k]]
        lo = [e.bound() for e in loaded[k]]
        report.append(f"{k}: quiet {q} loaded {lo}")
        classes = {b for b in q + lo if b != "noisy"}
        assert len(classes) <= 1, (k, q, lo, [classify(e) for e in quiet[k] + loaded[k]])
        assert "unknown" not in classes, (k, q, lo)
    print("\n".join(report))
    # the loaded captures really shared their core (with the busy loop, or on a busy machine with
    # other work too), so the check is not vacuous: they waited for it a fifth of their time or more
    assert waited > 0.2 * loaded_s, report
    assert {e.bound() for e in quiet["tiny MLP"] + loaded["tiny MLP"]} == {"launch"}, report
    # quiet captures of models clear of the lines classify, as what they are
    assert "gemm" in [e.bound() for e in quiet["GEMM-heavy MLP"]], report
    assert "other" in [e.bound() for e in quiet["LayerNorm/GELU chain"]], report


def check_diagnostics_off() -> None:
    config = BenchmarkConfig.from_dict(
        {**BASE, "iterations": 3, "warmup": 0, "rounds": 1, "variants": ["eager"], "diagnostics": False}
    )
    sink = ListSink()
    BenchmarkRunner(config, sink).run()
    assert not [e for e in sink.events if isinstance(e, protocol.DiagnosticsEvent)]
    assert [e for e in sink.events if isinstance(e, protocol.VariantDoneEvent)]


# -- how test_why.py runs a check ------------------------------------------

def run_check(name: str, log: str) -> None:
    """In the check's own process: run ``name`` with its output in ``log``; exit 0 if it passed."""
    code = 1
    try:
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        if not name.startswith("check_"):
            raise ValueError(f"not a check: {name!r}")
        globals()[name]()
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
