"""Does the GPU monitor's flush of the sample batch move the timed calls' p99?

The NVML monitor (``engine/gpu_monitor.py``) reads the GPU every 0.1 s and
sends a ``gpu_state`` event every 0.5 s through the worker's sink; sending an
event first flushes the timing thread's pending sample batch, from the
monitor's thread, under the sink's lock and the GIL. This bench times the
same calls (a tiny torch MLP on CPU, or a pure-Python spin of the same
length) through the worker's real ``StreamSink`` into a pipe that a reader
thread drains, with the monitor running (NVML replaced by a stand-in that
answers at once, so only the flush and the event's encoding are measured)
and without it, alternated M N M N … for ``--rounds`` rounds. Prints every
round's median and p99, their ratios (monitor ÷ none), the spread and the
load; asserts nothing.

    PYTHONPATH=app python bench/monitor_flush.py [--rounds 4] [--calls 20000]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import threading
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "app"))


def fake_nvml() -> types.SimpleNamespace:
    """Answers like pynvml for one GPU, at once."""
    return types.SimpleNamespace(
        NVML_CLOCK_SM=1, NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetClockInfo=lambda h, k: 1980,
        nvmlDeviceGetTemperature=lambda h, k: 41,
        nvmlDeviceGetPowerUsage=lambda h: 300_000,
        nvmlShutdown=lambda: None,
    )


def one_side(call, calls: int, monitor: bool) -> list[float]:
    """Per-call ms of ``calls`` timed calls through a StreamSink, with or without the monitor."""
    from compile_studio.engine.gpu_monitor import GpuMonitor
    from compile_studio.worker import StreamSink

    r, w = os.pipe()
    reader = threading.Thread(target=lambda: [None for _ in iter(lambda: os.read(r, 1 << 16), b"")],
                              daemon=True)
    reader.start()
    out = os.fdopen(w, "w", encoding="utf-8", buffering=1)
    sink = StreamSink(out)
    mon = None
    if monitor:
        mon = GpuMonitor(None, fake_nvml(), sink, 0)
        mon._thread.start()
    times: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for i in range(calls):
            t0 = time.perf_counter_ns()
            call()
            t1 = time.perf_counter_ns()
            ms = (t1 - t0) / 1e6
            times.append(ms)
            sink.sample("v", "measure", i, ms, None, 0)
    finally:
        gc.enable()
        if mon is not None:
            mon.stop()
        sink.flush()
        out.close()
        reader.join(timeout=5)
        os.close(r)
    return times


def p99(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(0.99 * len(s)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--model", choices=("mlp", "spin"), default="mlp")
    args = ap.parse_args(argv)

    if args.model == "mlp":
        import torch

        torch.set_num_threads(1)
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
        x = torch.randn(4, 64)

        def call() -> None:
            with torch.inference_mode():
                model(x)
    else:
        def call() -> None:
            t_end = time.perf_counter_ns() + 30_000
            while time.perf_counter_ns() < t_end:
                pass

    one_side(call, 2000, False)  # warm-up, not reported
    print(f"model {args.model}, {args.calls} calls per side, load before {open('/proc/loadavg').read().split()[:3]}")
    med_ratio, p99_ratio = [], []
    for r in range(args.rounds):
        order = (True, False) if r % 2 == 0 else (False, True)
        res = {m: one_side(call, args.calls, m) for m in order}
        mm, mn = statistics.median(res[True]), statistics.median(res[False])
        pm, pn = p99(res[True]), p99(res[False])
        med_ratio.append(mm / mn)
        p99_ratio.append(pm / pn)
        load = open("/proc/loadavg").read().split()[0]
        print(f"round {r + 1}: monitor median {mm * 1e3:.1f} µs p99 {pm * 1e3:.1f} µs | "
              f"none median {mn * 1e3:.1f} µs p99 {pn * 1e3:.1f} µs | "
              f"ratio median {mm / mn:.3f} p99 {pm / pn:.3f} | load {load}")
    gm = statistics.geometric_mean
    print(f"median ratio {gm(med_ratio):.3f} (rounds {min(med_ratio):.3f}–{max(med_ratio):.3f}); "
          f"p99 ratio {gm(p99_ratio):.3f} (rounds {min(p99_ratio):.3f}–{max(p99_ratio):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
