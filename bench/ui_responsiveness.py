"""Does the window disturb what it measures, and does it stay responsive?

For each configuration — the seed MLP (1024,1024,512,10, batch 256) and a tiny
MLP (64,64,10, batch 1), eager + Inductor ``default`` — window runs and CLI
runs of the same configuration alternate, CLI first (C G C G C G …). Per
variant it prints every run's median and p99 of the timed calls, the ratios
GUI ÷ CLI of each pair (a GUI run against the CLI run just before it), their
median, and the CLI's own run-to-run spread:

* median ratio within 1 ± 0.05 and p99 ratio ≤ 1.3 for every variant;
* event-loop lag (a 10 ms QTimer in the window records how late each tick
  is, compile included): p99 < 33 ms and max < 100 ms.

Run it under a real X server to include the real repaint cost:

    xvfb-run -a -s "-screen 0 1600x1000x24" python bench/ui_responsiveness.py [--rounds 3] [--only tiny|seed]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TICK_MS = 10
CONFIGS = {
    "seed": {"layers": "1024,1024,512,10", "batch_size": 256, "iterations": 1500},
    "tiny": {"layers": "64,64,10", "batch_size": 1, "iterations": 3000},
}


def stats_of(run) -> dict[str, tuple[float, float]]:
    """(median, p99) of each variant's timed calls, ms."""
    out = {}
    for name, v in run.variants.items():
        wall = v.samples.measured_wall_ms()
        if len(wall):
            out[name] = (float(np.median(wall)), float(np.percentile(wall, 99)))
    return out


def cli_run(config: dict, store: Path):
    from compile_studio.results import load_run

    store.mkdir(parents=True, exist_ok=True)
    before = set(store.iterdir())
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(config, fh)
    p = subprocess.run(
        [sys.executable, "-m", "compile_studio.cli", "run", "--quiet", "--out", str(store), "--config", fh.name],
        capture_output=True, text=True,
    )
    os.unlink(fh.name)
    if p.returncode != 0:
        raise SystemExit(f"CLI run failed ({p.returncode}): {p.stderr[-2000:]}")
    (folder,) = set(store.iterdir()) - before
    return load_run(folder, samples=True)


class WindowRunner:
    """One window, reused for every GUI run, with an event-loop lag probe."""

    def __init__(self) -> None:
        from PySide6.QtCore import QElapsedTimer, QTimer
        from PySide6.QtWidgets import QApplication

        from compile_studio.gui.main_window import MainWindow

        self.app = QApplication.instance() or QApplication(sys.argv[:1])
        self.window = MainWindow()
        self.window.resize(1500, 950)
        self.window.show()
        self.clock = QElapsedTimer()
        self.timer = QTimer()
        self.timer.setTimerType(self.timer.timerType().PreciseTimer)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self.lags: list[float] = []
        self._last = 0
        self._done = None
        self.window.run_finished.connect(self._finished)
        self._QTimer = QTimer

    def _tick(self) -> None:
        now = self.clock.nsecsElapsed()
        self.lags.append(max(0.0, (now - self._last) / 1e6 - TICK_MS))
        self._last = now

    def _finished(self, run) -> None:
        self._done = run
        self.timer.stop()
        self.app.quit()

    def run(self, config):
        deadline = time.monotonic() + 120

        def start() -> None:
            if self.window.environment is None and time.monotonic() < deadline:
                self._QTimer.singleShot(100, start)  # wait for the start-up probe, as a user would
                return
            self.window.start_run(config)
            self.clock.start()
            self._last = 0
            self.timer.start()

        self._done = None
        self._QTimer.singleShot(0, start)
        self.app.exec()
        if self._done is None:
            raise SystemExit(f"the GUI run did not finish: {self.window.error_text()}")
        return self._done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="GUI runs per configuration (CLI runs: as many)")
    parser.add_argument("--only", choices=sorted(CONFIGS))
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the iterations (0.1 for a smoke run)")
    parser.add_argument("--variants", default="eager,default")
    args = parser.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="compile-studio-ui-bench-"))
    os.environ.setdefault("COMPILE_STUDIO_DATA_DIR", str(scratch / "data"))
    os.environ.setdefault("COMPILE_STUDIO_SETTINGS_DIR", str(scratch / "settings"))
    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.results.machine_load import machine_load

    print(f"machine: {machine_load().summary()}; display: {os.environ.get('DISPLAY') or os.environ.get('QT_QPA_PLATFORM')}")
    gui = WindowRunner()
    ok = True
    for name, model in CONFIGS.items():
        if args.only and name != args.only:
            continue
        config = BenchmarkConfig(
            **{**model, "iterations": max(10, int(model["iterations"] * args.scale))},
            variants=[v.strip() for v in args.variants.split(",") if v.strip()],
            device="cpu",
            label=f"ui bench {name}",
        )
        print(f"\n== {name}: {config.model_text()} · {config.iterations} calls · {config.variants}")
        cli_stats, gui_stats = [], []
        gui.lags.clear()
        for r in range(args.rounds):
            t0 = time.monotonic()
            c = cli_run(config.to_dict(), scratch / name / "cli")
            t1 = time.monotonic()
            g = gui.run(config)
            t2 = time.monotonic()
            cli_stats.append(stats_of(c))
            gui_stats.append(stats_of(g))
            split = g.measurement.get("core_split") or "not pinned"
            print(f"  round {r + 1}: CLI {t1 - t0:.1f} s, GUI {t2 - t1:.1f} s ({split})", flush=True)
        lags = np.asarray(gui.lags) if gui.lags else np.zeros(1)
        p99_lag, max_lag = float(np.percentile(lags, 99)), float(lags.max())
        lag_ok = p99_lag < 33 and max_lag < 100
        ok &= lag_ok
        print(
            f"  event-loop lag ({len(gui.lags)} ticks): p50 {np.percentile(lags, 50):.1f} ms, p99 {p99_lag:.1f} ms, "
            f"max {max_lag:.1f} ms  {'ok' if lag_ok else 'MISS'} (p99 < 33, max < 100)"
        )
        for variant in config.variants:
            med_ratios = [g[variant][0] / c[variant][0] for g, c in zip(gui_stats, cli_stats)]
            p99_ratios = [g[variant][1] / c[variant][1] for g, c in zip(gui_stats, cli_stats)]
            cli_meds = [c[variant][0] for c in cli_stats]
            cli_p99 = [c[variant][1] for c in cli_stats]
            med, p99 = float(np.median(med_ratios)), float(np.median(p99_ratios))
            this_ok = abs(med - 1) <= 0.05 and p99 <= 1.3
            ok &= this_ok
            print(
                f"  {variant:>8}: median GUI/CLI {' '.join(f'{x:.3f}' for x in med_ratios)} → {med:.3f}; "
                f"p99 GUI/CLI {' '.join(f'{x:.2f}' for x in p99_ratios)} → {p99:.2f}  {'ok' if this_ok else 'MISS'}"
            )
            print(
                f"  {'':>8}  CLI medians {' '.join(f'{x:.4f}' for x in cli_meds)} ms (spread "
                f"{(max(cli_meds) / min(cli_meds) - 1) * 100:.1f} %), CLI p99 {' '.join(f'{x:.3f}' for x in cli_p99)} ms "
                f"(spread {(max(cli_p99) / min(cli_p99) - 1) * 100:.1f} %)"
            )
    gui.window.close()
    from compile_studio.gui.gc_guard import delete_before_exit

    delete_before_exit(gui.window)
    print(f"\nmachine after: {machine_load().summary()}")
    print("every bar met" if ok else "a bar was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
