"""Start-up cost on this machine: the seed MLP and GPT-2 built from its config, cold vs warm vs carried.

Runs the cold-start job (the same one as ``compile-studio-cli coldstart``)
for each model: per round, eager and each compiled variant started cold,
warm and carried, each in a fresh process. Prints every process as it ends
with the machine's load (/proc/loadavg) at that moment, then per model the
time to first result and to the first fast call per start kind (median,
range over rounds), the break-even against eager and the compile's phases.
Asserts nothing; the job folders are kept under --out.

GPT-2 is ``transformers.GPT2LMHeadModel`` from a small ``GPT2Config`` (no
download): ``examples/gpt2_config.py`` when the project has it, else a
factory written to --out. Skipped, with the reason, without transformers.

    python bench/coldstart.py [--rounds 2] [--device auto] [--only mlp|gpt2] [--out DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

GPT2_FACTORY = '''"""GPT-2 from its config (random weights, nothing downloaded), for the start-up bench."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel


def make_model():
    config = GPT2Config(n_layer=4, n_embd=256, n_head=4, n_positions=128, vocab_size=8192)
    model = GPT2LMHeadModel(config).eval()
    model.config.use_cache = False
    tokens = torch.randint(0, config.vocab_size, (2, 64))
    return model, tokens
'''


def load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ")[0]
    except OSError:
        return "?"


def gpt2_factory(out: Path) -> str | None:
    """The GPT-2 factory spec, or None (and why, printed) when transformers is not installed."""
    if importlib.util.find_spec("transformers") is None:
        print("gpt2: skipped: transformers is not installed (pip install transformers)")
        return None
    example = ROOT / "examples" / "gpt2_config.py"
    if example.is_file():
        return f"{example}:make_model"
    path = out / "gpt2_from_config.py"
    path.write_text(GPT2_FACTORY)
    return f"{path}:make_model"


def run_model(name: str, config_dict: dict, rounds: int, out: Path) -> None:
    from compile_studio.cli.coldstart import print_coldstart
    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.jobs.coldstart_run import ColdStartRun, coldstart_request, new_coldstart

    config = BenchmarkConfig.from_dict(config_dict)
    request = coldstart_request(config, rounds=rounds, calls=20)
    folder = new_coldstart(request, out)
    seen = [0]
    print(f"\n== {name}: {config.model_text()} · {config.dtype} · {config.device} · {rounds} rounds "
          f"(load {load()} at the start)", flush=True)

    def on_point(record) -> None:
        for p in record.points[seen[0]:]:
            if p.error:
                print(f"round {p.round + 1} {p.variant} {p.start}: failed: {p.error}  load {load()}", flush=True)
                continue
            print(f"round {p.round + 1} {p.variant:<10} {p.start:<8} first result {p.first_result_s:7.2f} s  "
                  f"first fast {p.first_fast_s:7.2f} s  compile {p.first_call_s or 0:7.2f} s  "
                  f"per call {p.call_ms:8.3f} ms  load {load()}", flush=True)
        seen[0] = len(record.points)

    outcome = ColdStartRun(folder, on_point=on_point).run()
    print_coldstart(outcome.record, sys.stdout)
    print(f"kept in {outcome.folder}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--only", choices=("mlp", "gpt2"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="coldstart-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    base = {"device": args.device, "variants": ["eager", "default"]}
    if args.only in (None, "mlp"):
        run_model("seed MLP", {**base, "model": "mlp"}, args.rounds, out)
    if args.only in (None, "gpt2"):
        spec = gpt2_factory(out)
        if spec is not None:
            run_model("GPT-2 from config", {**base, "model": "custom", "factory": spec}, args.rounds, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
