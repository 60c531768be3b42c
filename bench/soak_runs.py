"""Soak: many benchmark runs back to back from one window; the GUI process must not grow.

Runs ``--runs`` tiny benchmarks (eager + aot_eager) from one offscreen
MainWindow, one after the other, and after each (and a ``gc.collect()``)
measures the GUI process's resident memory. Reports the growth from run 2
(after the first run has loaded everything it needs) to the last run and
checks it against ``--bound-mib``; checks that no worker process and no
benchmark thread is left. Exit code 0 when every check holds, 1 otherwise.

    python bench/soak_runs.py [--runs 20] [--bound-mib 30]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--bound-mib", type=float, default=30.0, help="allowed RSS growth, run 2 → last")
    parser.add_argument("--iterations", type=int, default=200)
    args = parser.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="compile-studio-soak-"))
    os.environ.setdefault("COMPILE_STUDIO_SETTINGS_DIR", str(tmp / "settings"))
    os.environ.setdefault("COMPILE_STUDIO_DATA_DIR", str(tmp / "data"))

    import psutil
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.gui.job_thread import JobThread, has_finished
    from compile_studio.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = MainWindow(store_root=tmp / "runs", probe=False)
    window.show()
    config = BenchmarkConfig(
        layers="32,32,8", batch_size=4, device="cpu", iterations=args.iterations, warmup=5,
        variants=["eager", "aot_eager"],
    )
    me = psutil.Process()

    def settle(ms: int) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    rss_mib: list[float] = []
    seconds: list[float] = []
    statuses: list[str] = []
    for k in range(args.runs):
        loop = QEventLoop()
        done: list = []
        window.run_finished.connect(lambda run, d=done, lp=loop: (d.append(run), lp.quit()))
        t0 = time.monotonic()
        window.start_run(config)
        QTimer.singleShot(300_000, loop.quit)
        loop.exec()
        window.run_finished.disconnect()
        if not done:
            print(f"run {k + 1}: no result within 300 s", file=sys.stderr)
            return 1
        seconds.append(time.monotonic() - t0)
        statuses.append(done[0].status)
        settle(150)  # let the thread's finished() and deleteLater() go through
        app.processEvents()
        gc.collect()
        rss_mib.append(me.memory_info().rss / 2**20)
        print(f"run {k + 1:2d}: {done[0].status:8s} {seconds[-1]:5.2f} s  RSS {rss_mib[-1]:7.1f} MiB", flush=True)

    settle(500)
    workers = [
        p for p in me.children(recursive=True)
        if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    ]
    threads = [
        o for o in gc.get_objects() if isinstance(o, JobThread) and not has_finished(o)
    ]
    growth = rss_mib[-1] - rss_mib[1] if len(rss_mib) > 1 else 0.0
    per_run = growth / max(1, len(rss_mib) - 2)
    rows_in_history = len(window.history.entries())
    window.close()

    print()
    print(f"runs: {args.runs} (eager + aot_eager, {args.iterations} iterations each), "
          f"all complete: {all(s == 'complete' for s in statuses)}")
    print(f"time per run: median {sorted(seconds)[len(seconds) // 2]:.2f} s")
    print(f"GUI RSS: run 1 {rss_mib[0]:.1f} MiB, run 2 {rss_mib[1]:.1f} MiB, "
          f"run {args.runs} {rss_mib[-1]:.1f} MiB, max {max(rss_mib):.1f} MiB")
    print(f"growth run 2 → run {args.runs}: {growth:+.1f} MiB ({per_run:+.2f} MiB/run); "
          f"bound {args.bound_mib:.0f} MiB")
    print(f"history lists {rows_in_history} runs")
    print(f"worker processes left: {len(workers)}; benchmark threads left: {len(threads)}")

    ok = (
        all(s == "complete" for s in statuses)
        and growth <= args.bound_mib
        and not workers
        and not threads
        and rows_in_history == args.runs
    )
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
