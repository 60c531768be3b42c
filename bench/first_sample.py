"""How long from Run to the first sample, with and without a worker started ahead?

Opens the window (offscreen), then for each try: with a worker started ahead
(``COMPILE_STUDIO_STANDBY=1``, Run pressed once it is ready) and without one
(``COMPILE_STUDIO_STANDBY=0``), alternated (W N W N …), a tiny MLP (eager).
Prints the seconds from Run to the first sample the window receives, each
try and the medians; asserts nothing.

    QT_QPA_PLATFORM=offscreen python bench/first_sample.py [--tries 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

CONFIG = {
    "layers": "32,32,8", "batch_size": 4, "device": "cpu", "iterations": 30, "warmup": 5,
    "variants": ["eager"], "compile_timing": "in_run", "warmup_min_ms": 0,
}


def one_try(app, store: Path, standby: bool) -> float:
    """Seconds from Run to the first sample in a fresh window."""
    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.gui.main_window import MainWindow

    os.environ["COMPILE_STUDIO_STANDBY"] = "1" if standby else "0"
    window = MainWindow(store_root=store, probe=False)
    window.show()
    try:
        if standby:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                app.processEvents()
                ahead = window.live.standby.standby
                if ahead is not None and ahead.state == "ready":
                    break
                time.sleep(0.01)
            else:
                raise SystemExit("the worker started ahead was not ready within 120 s")
            time.sleep(0.5)  # as a user would: the window has been open a while
        first: list[float] = []
        done: list[object] = []
        window.live.samples.connect(lambda *_: first or first.append(time.monotonic()))
        window.run_finished.connect(done.append)
        t0 = time.monotonic()
        window.start_run(BenchmarkConfig(**CONFIG))
        while not done:
            app.processEvents()
            time.sleep(0.002)
        run = done[0]
        if not first:
            raise SystemExit(f"the run gave no sample: {run.status} {run.message}")  # type: ignore[attr-defined]
        prestarted = run.measurement.get("worker_prestarted")  # type: ignore[attr-defined]
        if prestarted is not standby:
            print(f"  note: worker_prestarted={prestarted} in a try with standby={standby}")
        return first[0] - t0
    finally:
        window.close()
        window.deleteLater()
        app.processEvents()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="first-sample-"))
    os.environ["COMPILE_STUDIO_SETTINGS_DIR"] = str(base / "settings")
    os.environ["COMPILE_STUDIO_DATA_DIR"] = str(base / "data")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv[:1])
    times: dict[bool, list[float]] = {True: [], False: []}
    for i in range(args.tries):
        for standby in (True, False):
            s = one_try(app, base / "runs", standby)
            times[standby].append(s)
            print(f"try {i + 1} {'started ahead' if standby else 'new worker   '}: {s:6.2f} s to the first sample")
    for standby, label in ((True, "started ahead"), (False, "new worker")):
        values = times[standby]
        print(f"{label:>13}: median {statistics.median(values):.2f} s  (" + ", ".join(f"{v:.2f}" for v in values) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
