"""Does the engine's per-call timing agree with torch.utils.benchmark?

Measures the default seed MLP (1024,1024,512,10, batch 256, fp32, inference)
on CPU with the engine's timed loop and with
``torch.utils.benchmark.Timer.blocked_autorange`` in the same process, same
threads, same input, alternating the two a few rounds, and prints the ratio of
medians (engine / Timer) for eager and for Inductor ``default``. Agreement
within ±5 % means the engine's per-iteration timer adds no visible bias.

    python bench/fidelity.py [--rounds 3] [--iterations 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch
from torch.utils import benchmark

from compile_studio import protocol
from compile_studio.config import BenchmarkConfig
from compile_studio.engine.model import build_model
from compile_studio.engine.runner import BenchmarkRunner
from compile_studio.engine.sink import ListSink
from compile_studio.results.stats import latency_stats


def engine_medians(config: BenchmarkConfig) -> dict[str, float]:
    sink = ListSink()
    BenchmarkRunner(config, sink, device="cpu").run()
    out: dict[str, list[float]] = {}
    for e in sink.events:
        if isinstance(e, protocol.SamplesEvent) and e.phase == protocol.Phase.MEASURE:
            out.setdefault(e.variant, []).extend(e.wall_ms)
        if isinstance(e, protocol.ErrorEvent):
            sys.exit(f"engine error: {e.message}")
    return {k: latency_stats(v).median for k, v in out.items()}


def timer_medians(config: BenchmarkConfig, min_run_time: float) -> dict[str, float]:
    sizes = config.layer_sizes()
    gen = torch.Generator().manual_seed(config.seed + 1)
    x = torch.randn(config.batch_size, sizes[0], generator=gen)
    out = {}
    for name in config.variants:
        model = build_model(sizes, config.activation, config.seed, f"timer_{name}").eval()
        fn = model if name == "eager" else torch.compile(model, backend="inductor")

        def call(fn=fn):
            with torch.inference_mode():
                return fn(x)

        for _ in range(config.warmup + 1):
            call()
        # Timer runs single-threaded unless told otherwise: give it the engine's threads
        m = benchmark.Timer(
            stmt="call()", globals={"call": call}, num_threads=torch.get_num_threads()
        ).blocked_autorange(min_run_time=min_run_time)
        out[name] = m.median * 1000.0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--min-run-time", type=float, default=2.0)
    args = ap.parse_args()
    config = BenchmarkConfig(
        device="cpu", variants=["eager", "default"], iterations=args.iterations, warmup=30
    )
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"model {config.layers}, batch {config.batch_size}, {config.dtype}")
    ratios: dict[str, list[float]] = {v: [] for v in config.variants}
    for r in range(args.rounds):
        eng = engine_medians(config)
        tim = timer_medians(config, args.min_run_time)
        for v in config.variants:
            ratios[v].append(eng[v] / tim[v])
            print(f"round {r + 1}: {v:8s} engine {eng[v]:.4f} ms  Timer {tim[v]:.4f} ms  "
                  f"ratio {eng[v] / tim[v]:.3f}")
    print()
    worst = 0.0
    for v, rs in ratios.items():
        med = statistics.median(rs)
        worst = max(worst, abs(med - 1))
        print(f"{v:8s} median ratio engine/Timer = {med:.3f} ({(med - 1) * 100:+.1f} %)")
    print(f"agreement within ±5 %: {'yes' if worst <= 0.05 else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
