"""Advisor: real runs of four models, what ``advise`` suggests for each, and every suggestion tried.

For each model — a ``.item()`` graph break, a forward that changes a Python
attribute on every call, a tiny MLP at batch 1, a compute-bound fp32 MLP —
one run (eager + Inductor's ``default``, diagnostics on) is made as
``compile-studio-cli run`` makes it; the ranked suggestions are printed as
``advise`` prints them; then every configuration-change suggestion is tried
as ``advise RUN --try all`` tries it (A = the run's configuration against
each B, ``--rounds`` rounds, see jobs/trial.py), and every round's figures,
ratio, interval, A/A spread and verdict are printed. /proc/loadavg is printed
before and after each model: a busy machine widens the intervals, and the
verdicts then say "cannot tell" (as they should).

    python bench/advisor.py [--device auto] [--rounds 3] [--iterations 100] [--only item,tiny]

Everything is kept in a temporary run store (its path is printed). Exit code
0 when every run and every trial ran (whatever the verdicts), 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

MODELS = {
    "item": (
        "a .item() graph break: the forward scales by a Python float",
        '''
        import torch
        from torch import nn


        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(256, 256)
                self.b = nn.Linear(256, 10)

            def forward(self, x):
                h = torch.relu(self.a(x))
                scale = h.abs().max().item()
                return self.b(h / (scale + 1.0))


        def make_model(batch_size: int = 32):
            return Scaled(), torch.randn(batch_size, 256)
        ''',
        {"batch_size": 32},
    ),
    "attribute": (
        "a forward that changes a Python attribute on every call (a call counter)",
        '''
        import torch
        from torch import nn


        class Counting(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(128, 128)
                self.calls = 0

            def forward(self, x):
                self.calls += 1
                return torch.tanh(self.lin(x)) * (1 + self.calls % 2)


        def make_model(batch_size: int = 16):
            return Counting(), torch.randn(batch_size, 128)
        ''',
        {"batch_size": 16},
    ),
    "tiny": (
        "a tiny MLP at batch 1 (its factory takes the batch size)",
        '''
        import torch
        from torch import nn


        def make_model(batch_size: int = 1):
            model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
            return model, torch.randn(batch_size, 32)
        ''',
        {"batch_size": 1},
    ),
    "gemm": (
        "a compute-bound fp32 MLP (1024-wide layers, batch 512)",
        None,
        {"model": "mlp", "layers": "1024,1024,1024,1024", "batch_size": 512, "dtype": "fp32"},
    ),
}


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "(no /proc/loadavg here)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--rounds", type=int, default=3, help="trial rounds (A then each B)")
    parser.add_argument("--iterations", type=int, default=100, help="timed calls per variant and run")
    parser.add_argument("--only", default="", help="comma list of: " + ", ".join(MODELS))
    args = parser.parse_args(argv)

    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.jobs.session import RunSession
    from compile_studio.jobs.trial import TrialRunner, new_trial, not_tried_reason
    from compile_studio.results import RunStore, load_run
    from compile_studio.results.report.formatting import verdict_lines
    from compile_studio.results.suggestions.advice import advice_text
    from compile_studio.results.suggestions.trial_judge import fmt_figure, fmt_ratio
    from compile_studio.results.suggestions.what_to_try import trial_table, what_to_try

    root = Path(tempfile.mkdtemp(prefix="compile-studio-advisor-"))
    store = RunStore(root / "runs")
    print(f"run store: {store.root}")
    print(f"loadavg at start: {loadavg()}")
    wanted = [m.strip() for m in args.only.split(",") if m.strip()] or list(MODELS)
    ok = True
    for name in wanted:
        what, source, fields = MODELS[name]
        print("\n" + "=" * 100)
        print(f"{name}: {what}")
        print(f"loadavg before: {loadavg()}")
        started = time.monotonic()
        config = {
            "device": args.device, "variants": ["eager", "default"], "iterations": args.iterations,
            "warmup": 10, "rounds": 5, **fields,
        }
        if source is not None:
            path = root / f"{name}.py"
            path.write_text(textwrap.dedent(source))
            config.update(model="custom", factory=f"{path}:make_model")
        session = RunSession(BenchmarkConfig.from_dict(config), store)
        outcome = session.run()
        if outcome.folder is None:
            print(f"the run failed: {outcome.run.message}")
            ok = False
            continue
        run = load_run(outcome.folder)
        print(f"run: {run.title()} [{run.status}] — {outcome.folder.name}")
        for line in verdict_lines(run):
            print(f"= {line}")
        w = what_to_try(run, outcome.folder)
        print("\nsuggested:")
        print(textwrap.indent(advice_text(w.suggestions), "  "), end="")
        chosen = [(k, s) for k, s in enumerate(w.suggestions, 1) if not_tried_reason(s) is None]
        for k, s in enumerate(w.suggestions, 1):
            reason = not_tried_reason(s)
            if reason is not None:
                print(f"  {k}. {s.rule}: {reason}")
        if not chosen:
            print("nothing to try: no configuration change was suggested")
            print(f"loadavg after: {loadavg()} ({time.monotonic() - started:.0f} s)")
            continue
        trial = new_trial(run, outcome.folder, chosen, rounds=args.rounds)

        def progress(record, r, role):
            entry = next((x for x in record.runs if x.round == r and x.role == role), None)
            if entry is None or entry.status == "running":
                return
            line = f"  round {r}/{record.rounds} {role}: {entry.status}"
            if entry.message and entry.status != "complete":
                line += f" ({entry.message})"
            s = record.suggestion(role)
            if s is not None:
                rf = next((x for x in s.rounds if x.round == r), None)
                if rf is not None:
                    line += f" · {s.figure_text()}: A {fmt_figure(rf.a)} ms, B {fmt_figure(rf.b)} ms → {fmt_ratio(rf.ratio)}"
            print(line, flush=True)

        print(f"\ntrying {len(chosen)} suggestion(s), {args.rounds} rounds of A then each B:")
        result = TrialRunner(trial, on_run=progress).run()
        print()
        print(trial_table(result.record), end="")
        print(f"trial folder: {result.folder}")
        if result.failed or result.write_error:
            print(f"the trial failed: {result.failed or result.write_error}")
            ok = False
        print(f"loadavg after: {loadavg()} ({time.monotonic() - started:.0f} s)")
    print(f"\nloadavg at the end: {loadavg()}")
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
