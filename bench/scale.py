"""Does the tool stay fast and small as the work grows? Prints the figures of issue 12's bars.

1. a CLI run of 4 variants × N tiny calls (MLP 64,64,10, batch 1, CPU):
   ``eager``, ``aot_eager`` (AOTAutograd, no code generation), ``lite`` and
   ``default`` (Inductor; tiny graphs, warm cache: compiles of a few seconds).
   Its wall time against the sum of its measured calls and compiles
   (bar: within 1.5×; the worker's start and torch's import are in the wall time);
2. ``compile-studio-cli show RUN`` of that run (bar: < 1 s, a fresh process);
3. opening that run in the window (offscreen): a click on it in the history,
   until its plots and table are drawn; the GUI thread's longest block in
   that time, from the event-loop lag a 10 ms timer measures (bar: < 0.5 s);
4. a single-variant live run of M calls in the window: the window process's
   RSS growth while it runs (bar: < 300 MB at 1,000,000 calls);
5. the history over H run folders (copies of one real small run, ids
   edited): building the list (bar: < 1 s for 500).

    python bench/scale.py                 # the bars' sizes
    python bench/scale.py --quick         # 10,000 / 100,000 / 100: a minute or two
    python bench/scale.py --calls 100000 --live-calls 1000000 --history 500 --skip-live
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

VARIANTS = "eager,aot_eager,lite,default"
MODEL = ["--layers", "64,64,10", "--batch-size", "1", "--device", "cpu"]
TICK_MS = 10


def cli() -> list[str]:
    return [sys.executable, "-m", "compile_studio.cli"]


def bench_cli_run(calls: int, out: Path) -> Path:
    cmd = [*cli(), "run", *MODEL, "--variants", VARIANTS, "--iterations", str(calls),
           "--warmup", "100", "--out", str(out), "--quiet"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"the CLI run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    folder = next(p for p in out.iterdir() if p.is_dir())
    from compile_studio.results import load_run

    run = load_run(folder)
    calls_s = sum(float(v.samples.wall_array().sum()) for v in run.variants.values()) / 1000.0
    compile_s = sum(v.compile_s or 0.0 for v in run.variants.values())
    measured = calls_s + compile_s
    print(f"[1] CLI run, {len(run.variants)} variants ({VARIANTS}) × {calls:,} calls: "
          f"wall {wall:.1f} s; measured calls {calls_s:.1f} s + compiles {compile_s:.1f} s = "
          f"{measured:.1f} s; ratio {wall / measured:.2f}× (bar ≤ 1.5×)")
    return folder


def bench_show(folder: Path) -> None:
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        done = subprocess.run([*cli(), "show", str(folder)], capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if done.returncode != 0:
            sys.exit(f"show failed: {done.stderr}")
    print(f"[2] show: {min(times):.2f} s best of 3, {max(times):.2f} s worst, "
          "a fresh process each (bar < 1 s)")


class LagMeter:
    """A 10 ms QTimer: how late each tick comes (event-loop lag)."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.lags: list[float] = []
        self._last = time.perf_counter()
        self.timer = QTimer()
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        self.lags.append(max(0.0, (now - self._last) * 1000.0 - TICK_MS))
        self._last = now

    def start(self) -> None:
        self._last = time.perf_counter()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()


def pump(app, seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.002)


def bench_window_open(folder: Path) -> None:
    from PySide6.QtWidgets import QApplication

    from compile_studio.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow(store_root=folder.parent, probe=False)
    window.resize(1500, 950)
    window.show()
    pump(app, 0.5)
    meter = LagMeter()
    meter.start()
    pump(app, 0.2)
    t0 = time.perf_counter()
    window.history.refresh()
    t_list = time.perf_counter() - t0
    entry = window.history.entries()[0]
    item = window.history.item_for(entry)
    meter.lags.clear()
    t1 = time.perf_counter()
    window.history.tree.itemClicked.emit(item, 1)  # what a click on the run does
    click = time.perf_counter() - t1
    while window.current_run is None and time.perf_counter() - t1 < 60:
        app.processEvents()
        time.sleep(0.001)
    shown_s = time.perf_counter() - t1
    pump(app, 0.5)
    meter.stop()
    blocked = max([click * 1000.0, *meter.lags]) / 1000.0
    shown = window.current_run is not None and len(window.plots.series_keys()) == 4
    print(f"[3] window open of the run: history listed in {t_list:.3f} s; click to plots and "
          f"table drawn in {shown_s:.2f} s (samples read off the GUI thread); GUI thread "
          f"blocked at most {blocked:.3f} s at a time (the click {click:.3f} s; event-loop lag "
          f"max {max(meter.lags):.0f} ms) (bar < 0.5 s); shown: {shown}")
    window.close()


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def bench_live(calls: int, store: Path) -> None:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow(store_root=store, probe=False)
    window.resize(1500, 950)
    window.show()
    pump(app, 0.5)
    config = BenchmarkConfig(layers="64,64,10", batch_size=1, device="cpu", iterations=calls,
                             warmup=100, variants=["eager"], rounds=5)
    finished: list[object] = []
    window.run_finished.connect(finished.append)
    base = rss_mb()
    peak = [base]
    sampler = QTimer()
    sampler.setInterval(200)
    sampler.timeout.connect(lambda: peak.append(rss_mb()))
    sampler.start()
    meter = LagMeter()
    meter.start()
    t0 = time.perf_counter()
    window.start_run(config)
    while not finished:
        app.processEvents()
        time.sleep(0.005)
    wall = time.perf_counter() - t0
    pump(app, 1.0)
    sampler.stop()
    meter.stop()
    lags = sorted(meter.lags)
    p99 = lags[int(0.99 * (len(lags) - 1))] if lags else float("nan")
    run = finished[0]
    n = len(run.variants["eager"].samples)  # type: ignore[attr-defined]
    print(f"[4] live run of {calls:,} calls (eager, 5 rounds) in the window: {wall:.1f} s, "
          f"{n:,} samples; RSS {base:.0f} MB before, peak {max(peak):.0f} MB: growth "
          f"{max(peak) - base:.0f} MB (bar < 300 MB); event-loop lag p99 {p99:.0f} ms, "
          f"max {max(lags) if lags else float('nan'):.0f} ms")
    window.close()


def bench_history(count: int, work: Path) -> None:
    import json

    from PySide6.QtWidgets import QApplication

    from compile_studio.gui.history_panel import HistoryPanel
    from compile_studio.results import RunStore

    small = work / "small"
    cmd = [*cli(), "run", *MODEL, "--variants", "eager,aot_eager", "--iterations", "300",
           "--warmup", "10", "--out", str(small), "--quiet"]
    subprocess.run(cmd, check=True, capture_output=True)
    src = next(p for p in small.iterdir() if p.is_dir())
    root = work / "history"
    root.mkdir()
    doc = json.loads((src / "run.json").read_text())
    for k in range(count):
        run_id = f"20260101-{k // 3600:02d}{k // 60 % 60:02d}{k % 60:02d}_copy-{k:03d}"
        folder = root / run_id
        folder.mkdir()
        doc["run_id"] = run_id
        (folder / "run.json").write_text(json.dumps(doc))
        for name in ("samples.csv", "summary.csv"):
            shutil.copyfile(src / name, folder / name)
    app = QApplication.instance() or QApplication([])
    panel = HistoryPanel(RunStore(root))
    panel.resize(420, 700)
    panel.show()
    app.processEvents()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        panel.refresh()
        app.processEvents()
        times.append(time.perf_counter() - t0)
    print(f"[5] history of {panel.tree.topLevelItemCount()} runs: listed in {times[0]:.2f} s "
          f"(first), {min(times[1:]):.2f} s (again) (bar < 1 s); {panel.count_label.text()}")
    panel.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100_000, help="calls per variant of the CLI run")
    parser.add_argument("--live-calls", type=int, default=1_000_000, help="calls of the live run")
    parser.add_argument("--history", type=int, default=500, help="run folders in the history")
    parser.add_argument("--quick", action="store_true", help="10,000 / 100,000 / 100")
    parser.add_argument("--skip-cli", action="store_true")
    parser.add_argument("--skip-live", action="store_true")
    parser.add_argument("--skip-history", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the run folders (printed)")
    parser.add_argument("--run", type=Path, help="time show and the window on this run folder "
                        "instead of making one (the CLI run is skipped)")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.live_calls, args.history = 10_000, 100_000, 100
    work = Path(tempfile.mkdtemp(prefix="compile-studio-scale-"))
    os.environ.setdefault("COMPILE_STUDIO_DATA_DIR", str(work / "data"))
    os.environ.setdefault("COMPILE_STUDIO_SETTINGS_DIR", str(work / "settings"))
    try:
        if args.run is not None:
            bench_show(args.run)
            bench_window_open(args.run)
        elif not args.skip_cli:
            folder = bench_cli_run(args.calls, work / "cli")
            bench_show(folder)
            bench_window_open(folder)
        if not args.skip_live:
            bench_live(args.live_calls, work / "live")
        if not args.skip_history:
            bench_history(args.history, work)
    finally:
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
