"""Exercise the CUDA paths on a GPU machine and print what was seen.

Runs the seed MLP through a real worker on ``cuda`` with eager, Inductor
``default``, ``reduce-overhead`` (CUDA graphs) and ``max-autotune``, in bf16,
inference and a training step, and checks: CUDA-event device times present
and below host times, allocator peak memory reported, NVML GPU state sampled
(when nvidia-ml-py is installed), outputs correct. Prints one table per run
and a line per check; exits 1 if a check fails. Needs a CUDA GPU.

    python bench/gpu_check.py [--out DIR] [--iterations 300]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from compile_studio import protocol
from compile_studio.cli import print_run
from compile_studio.config import BenchmarkConfig
from compile_studio.results import RunStore
from compile_studio.results.recorder import RunRecorder
from compile_studio.supervisor import WorkerProcess


def run(config: BenchmarkConfig, store: RunStore) -> tuple[RunRecorder, list[dict]]:
    recorder = RunRecorder.in_store(store, config.to_dict(), config.slug())
    events = []
    with WorkerProcess(on_log=lambda line: None) as worker:
        worker.send_config(config.to_dict())
        for event in worker.events():
            events.append(event)
            recorder.handle(event)
        worker.wait(60)
    return recorder, events


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="gpu-check-")))
    ap.add_argument("--iterations", type=int, default=300)
    args = ap.parse_args()
    store = RunStore(args.out)
    failures = []

    def check(ok: bool, what: str) -> None:
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    configs = [
        BenchmarkConfig(device="cuda", dtype="bf16", iterations=args.iterations, warmup=20,
                        variants=["eager", "default", "reduce-overhead", "max-autotune"]),
        BenchmarkConfig(device="cuda", dtype="fp32", workload="training", iterations=args.iterations,
                        warmup=20, variants=["eager", "default", "reduce-overhead"]),
        BenchmarkConfig(device="cuda", dtype="tf32", iterations=args.iterations, warmup=20,
                        variants=["eager", "default"], interleave=True, cold_l2=True),
    ]
    for config in configs:
        print(f"\n== {config.dtype} {config.workload} {'+'.join(config.variants)}")
        recorder, events = run(config, store)
        r = recorder.run
        print_run(r, sys.stdout)
        errors = [e for e in events if e["type"] == protocol.ERROR]
        for e in errors:
            print(f"   error {e.get('variant')}: {e['kind']}: {e['message']}")
        check(r.status == "complete" and not errors, f"{config.slug()}: complete, no errors")
        for v in r.variants.values():
            dev = v.samples.measured_device_ms()
            wall = v.samples.measured_wall_ms()
            check(dev is not None and len(dev) == len(wall), f"{v.name}: CUDA-event time per call")
            if dev is not None and len(dev) == len(wall):
                check(bool((dev <= wall * 1.05 + 0.05).mean() > 0.95),
                      f"{v.name}: device time <= host time (median {float(sorted(dev)[len(dev)//2]):.4f} ms)")
            check(v.memory_kind == "cuda_allocator_peak" and (v.peak_memory_bytes or 0) > 0,
                  f"{v.name}: allocator peak {v.peak_memory_bytes}")
            check(v.allclose is True, f"{v.name}: output allclose (max rel {v.max_rel_error})")
        gpu = [e for e in events if e["type"] == protocol.GPU_STATE]
        if gpu:
            clocks = [c for e in gpu for c in e["sm_clock_mhz"] if c]
            temps = [t for e in gpu for t in e["temperature_c"] if t]
            print(f"   NVML: {len(clocks)} samples, SM clock {min(clocks)}–{max(clocks)} MHz, "
                  f"temperature {min(temps)}–{max(temps)} °C")
        else:
            print("   NVML: no gpu_state events (nvidia-ml-py not installed?)")
    print(f"\nruns saved in {args.out}")
    print("all checks passed" if not failures else f"{len(failures)} checks FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
