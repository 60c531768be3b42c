"""How responsive is the window during a run, and does the GUI change the numbers?

Opens the main window (offscreen unless a display is asked for), runs the seed
MLP (1024,1024,512,10, batch 256; eager + Inductor "default") from it and
reports:

1. event-loop lag during the run, compile included: a 10 ms QTimer records
   how late each tick is (targets: p99 < 50 ms, max < 200 ms);
2. the median latency the window shows per variant against the same config
   run headless through WorkerProcess + RunRecorder (target: within ±5 %);
   GUI and headless runs alternate (H G H G H G H) and the medians of each
   side are compared, so run-to-run drift is not blamed on the GUI.

    python bench/ui_responsiveness.py [--iterations 300] [--device cpu] [--compile-cache cold]
"""

from __future__ import annotations

import argparse
import os
import statistics
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
    parser.add_argument("--repeats", type=int, default=3, help="GUI runs (headless runs: one more)")
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

    config = BenchmarkConfig(
        layers=args.layers,
        batch_size=args.batch,
        iterations=args.iterations,
        warmup=args.warmup,
        variants=[v.strip() for v in args.variants.split(",") if v.strip()],
        device=args.device,
        compile_cache=args.compile_cache,
    )
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

    window.run_finished.connect(on_finished)
    deadline = time.monotonic() + 120

    def start() -> None:
        if window.environment is None and time.monotonic() < deadline:
            QTimer.singleShot(100, start)  # wait for the start-up probe, as a user would
            return
        window.start_run(config)
        if window.live.benchmark_thread is None:
            print("could not start:", window.last_error)
            app.quit()
            return
        window.live.benchmark_thread.phase.connect(on_phase)
        clock.start()
        state["last"] = 0
        timer.start()

    def gui_medians() -> dict[str, float] | None:
        state["done"] = None
        t0 = time.monotonic()
        QTimer.singleShot(0, start)
        app.exec()
        run = state["done"]
        if run is None:
            return None
        print(f"GUI run: {run.status} in {time.monotonic() - t0:.1f} s")
        return {r.row.name: r.row.median_ms for r in window.table_model.rows() if r.row.median_ms}

    # headless and GUI runs alternate (H G H G … H): drift between runs hits
    # both alike, and the spread of the headless runs shows how much two runs
    # of the same config differ with no GUI at all
    headless = [headless_medians(config.to_dict())]
    gui_runs = []
    for _ in range(args.repeats):
        g = gui_medians()
        if g is None:
            print("the GUI run did not finish")
            return 1
        gui_runs.append(g)
        headless.append(headless_medians(config.to_dict()))
    window.close()

    print(f"config: {config.to_json()}")
    print(
        f"event-loop lag over {args.repeats} GUI run(s) ({len(lags)} ticks of {TICK_MS} ms): "
        f"p50 {percentile(lags, 50):.1f} ms, p99 {percentile(lags, 99):.1f} ms, "
        f"max {max(lags, default=float('nan')):.1f} ms (targets: p99 < 50 ms, max < 200 ms)"
    )
    if compile_lags:
        print(
            f"  during compile ({len(compile_lags)} ticks): p50 {percentile(compile_lags, 50):.1f} ms, "
            f"p99 {percentile(compile_lags, 99):.1f} ms, max {max(compile_lags):.1f} ms"
        )
    ok_lag = percentile(lags, 99) < 50 and max(lags, default=0) < 200

    ok_ratio = True
    print(
        f"median latency per run, GUI ({len(gui_runs)} runs) vs headless WorkerProcess + "
        f"RunRecorder ({len(headless)} runs, alternating):"
    )
    for name in config.variants:
        g = [r[name] for r in gui_runs if name in r]
        h = [r[name] for r in headless if name in r]
        if not g or not h:
            print(f"  {name:>12}: missing")
            ok_ratio = False
            continue
        gm, hm = statistics.median(g), statistics.median(h)
        ratio = gm / hm
        ok_ratio &= abs(ratio - 1) <= 0.05
        print(
            f"  {name:>12}: GUI {' '.join(f'{v:.4f}' for v in g)} ms; headless "
            f"{' '.join(f'{v:.4f}' for v in h)} ms (headless spread {max(h) / min(h):.3f}); "
            f"median GUI / median headless {ratio:.3f} (target 0.95–1.05)"
        )
    print(f"lag target {'met' if ok_lag else 'MISSED'}; median target {'met' if ok_ratio else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
