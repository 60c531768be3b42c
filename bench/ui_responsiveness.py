"""How responsive is the window during a run, and does the GUI change the numbers?

Opens the main window (offscreen unless a display is asked for), runs the seed
MLP (1024,1024,512,10, batch 256; eager + Inductor "default") from it and
reports:

1. event-loop lag during the run, compile included: a 10 ms QTimer records
   how late each tick is (targets: p99 < 50 ms, max < 200 ms);
2. the median latency the window shows per variant against the same config
   run headless through WorkerProcess + RunRecorder (target: within ±5 %).

    python bench/ui_responsiveness.py [--iterations 300] [--device cpu] [--compile-cache cold]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

TICK_MS = 10


def percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def headless_medians(config_dict: dict) -> dict[str, float]:
    from compile_studio.results import summarize
    from compile_studio.results.recorder import RunRecorder
    from compile_studio.supervisor import WorkerProcess

    recorder = RunRecorder(config_dict, None)
    with WorkerProcess() as worker:
        worker.send_config(config_dict)
        for event in worker.events():
            recorder.handle(event)
        worker.wait(60)
    recorder.finish()
    if recorder.run.status != "complete":
        raise SystemExit(f"headless run {recorder.run.status}: {recorder.run.message}")
    return {r.name: r.median_ms for r in summarize(recorder.run) if r.median_ms is not None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", default="1024,1024,512,10")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--variants", default="eager,default")
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--compile-cache", choices=("warm", "cold"), default="warm",
        help="cold: a fresh Inductor cache, so the run includes a full compile",
    )
    parser.add_argument("--display", action="store_true", help="use the real display")
    args = parser.parse_args(argv)

    if not args.display:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    scratch = tempfile.mkdtemp(prefix="compile-studio-bench-")
    os.environ.setdefault("COMPILE_STUDIO_DATA_DIR", os.path.join(scratch, "data"))
    os.environ.setdefault("COMPILE_STUDIO_SETTINGS_DIR", os.path.join(scratch, "settings"))

    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    from compile_studio.config import BenchmarkConfig
    from compile_studio.gui.main_window import MainWindow

    # a headless run before and one after the GUI run: drift between runs shows
    # as the difference between these two, and is not blamed on the GUI
    config = BenchmarkConfig(
        layers=args.layers,
        batch_size=args.batch,
        iterations=args.iterations,
        warmup=args.warmup,
        variants=[v.strip() for v in args.variants.split(",") if v.strip()],
        device=args.device,
        compile_cache=args.compile_cache,
    )
    head_before = headless_medians(config.to_dict())

    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = MainWindow()
    window.show()

    lags: list[float] = []
    compile_lags: list[float] = []
    state = {"compiling": False, "done": None, "last": 0}
    clock = QElapsedTimer()

    def tick() -> None:
        now = clock.nsecsElapsed()
        lag = (now - state["last"]) / 1e6 - TICK_MS
        state["last"] = now
        lags.append(max(0.0, lag))
        if state["compiling"]:
            compile_lags.append(max(0.0, lag))

    timer = QTimer()
    timer.setTimerType(timer.timerType().PreciseTimer)
    timer.setInterval(TICK_MS)
    timer.timeout.connect(tick)

    def on_phase(variant: str, phase: str, planned: int) -> None:
        state["compiling"] = phase == "compile"

    def on_finished(run) -> None:
        state["done"] = run
        timer.stop()
        app.quit()

    def start() -> None:
        if window.environment is None and time.monotonic() < deadline:
            QTimer.singleShot(100, start)  # wait for the start-up probe, as a user would
            return
        window.start_run(config)
        if window._thread is None:
            print("could not start:", window.last_error)
            app.quit()
            return
        window._thread.phase.connect(on_phase)
        clock.start()
        state["last"] = 0
        timer.start()

    window.run_finished.connect(on_finished)
    deadline = time.monotonic() + 120
    t0 = time.monotonic()
    QTimer.singleShot(0, start)
    app.exec()
    run = state["done"]
    window.close()
    if run is None:
        print("the run did not finish")
        return 1
    wall = time.monotonic() - t0
    print(f"config: {config.to_json()}")
    print(f"GUI run: {run.status} in {wall:.1f} s; folder {window.store.root / run.run_id}")
    print(
        f"event-loop lag ({len(lags)} ticks of {TICK_MS} ms): p50 {percentile(lags, 50):.1f} ms, "
        f"p99 {percentile(lags, 99):.1f} ms, max {max(lags, default=float('nan')):.1f} ms "
        "(targets: p99 < 50 ms, max < 200 ms)"
    )
    if compile_lags:
        print(
            f"  during compile ({len(compile_lags)} ticks): p50 {percentile(compile_lags, 50):.1f} ms, "
            f"p99 {percentile(compile_lags, 99):.1f} ms, max {max(compile_lags):.1f} ms"
        )
    ok_lag = percentile(lags, 99) < 50 and max(lags, default=0) < 200

    gui = {r.row.name: r.row.median_ms for r in window.table_model.rows() if r.row.median_ms}
    head_after = headless_medians(config.to_dict())
    ok_ratio = True
    print("median latency, GUI vs headless (WorkerProcess + RunRecorder, one run before "
          "and one after the GUI run):")
    for name in config.variants:
        g, h1, h2 = gui.get(name), head_before.get(name), head_after.get(name)
        if g is None or h1 is None or h2 is None:
            print(f"  {name:>12}: missing (GUI {g}, headless {h1}, {h2})")
            ok_ratio = False
            continue
        h = (h1 + h2) / 2
        ratio = g / h
        ok_ratio &= abs(ratio - 1) <= 0.05
        print(
            f"  {name:>12}: GUI {g:.4f} ms, headless {h1:.4f} / {h2:.4f} ms "
            f"(run-to-run {h2 / h1:.3f}), GUI / headless mean {ratio:.3f} (target 0.95–1.05)"
        )
    print(f"lag target {'met' if ok_lag else 'MISSED'}; median target {'met' if ok_ratio else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
