"""Diagnostics tests that run torch (Dynamo, the profiler, the runner) in the test process.

``tests/test_why.py`` runs each of them in a Python process of its own: the pytest
processes also drive Qt widgets, and the window process never holds torch.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import torch

from compile_studio import protocol
from compile_studio.config import BenchmarkConfig
from compile_studio.engine.diagnostics import WhyCollector
from compile_studio.engine.runner import BenchmarkRunner
from compile_studio.engine.sink import ListSink
from compile_studio.results.recorder import RunRecorder
from compile_studio.results.why import sentence

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
            timer=SimpleNamespace(sync=lambda: None), _no_grad=torch.no_grad,
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
            timer=SimpleNamespace(sync=lambda: None), _no_grad=torch.no_grad,
        )
        collector.report(runner, "v", lambda xs: fn(*xs), compiled=True)
    finally:
        collector.close()
    (event,) = [e for e in sink.events if isinstance(e, protocol.DiagnosticsEvent)]
    assert "recompile_limit (1)" in event.why["recompile_limit"] and "capped" in event.why["recompile_limit"]


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
    assert big.startswith("eager is compute-bound: GEMMs hold"), big
    assert small.startswith("eager is dispatch-bound: 3 operators of"), small


def check_diagnostics_off() -> None:
    config = BenchmarkConfig.from_dict(
        {**BASE, "iterations": 3, "warmup": 0, "rounds": 1, "variants": ["eager"], "diagnostics": False}
    )
    sink = ListSink()
    BenchmarkRunner(config, sink).run()
    assert not [e for e in sink.events if isinstance(e, protocol.DiagnosticsEvent)]
    assert [e for e in sink.events if isinstance(e, protocol.VariantDoneEvent)]
