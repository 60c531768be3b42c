"""``compile-studio --self-test``: the real window, offscreen, runs a tiny benchmark.

Proves an install or a bundle works end to end on this machine: Qt starts,
the main window builds, a worker process starts (the same executable re-run
as a worker in a bundle), torch runs eager and compiled variants, samples
stream back, the run is written to a (temporary) run store, and the GUI
process never imports torch. Prints a short report; exit status 0 or 1.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

#: How long the tiny benchmark may take (a cold Inductor compile is the slow part).
TIMEOUT_S = 180.0


def has_cxx_compiler() -> bool:
    """Inductor on CPU needs a C++ compiler; without one only eager/aot_eager can run."""
    return any(shutil.which(name) for name in ("g++", "c++"))


def self_test_variants() -> list[str]:
    """eager and aot_eager always; Inductor (``default``) where a C++ compiler exists."""
    return ["eager", "aot_eager"] + (["default"] if has_cxx_compiler() else [])


def _child_pids() -> set[int]:
    """Direct children of this process (Linux /proc; empty elsewhere)."""
    pids: set[int] = set()
    try:
        for task in Path("/proc/self/task").iterdir():
            text = (task / "children").read_text()
            pids.update(int(p) for p in text.split())
    except OSError:
        pass
    return pids


def check_run(run: Any, variants: list[str]) -> list[str]:
    """Every reason the finished run is not a pass (empty when it passed)."""
    from compile_studio.results import summarize

    problems: list[str] = []
    if run is None:
        return ["no run result"]
    if run.status != "complete":
        problems.append(f"run status is {run.status!r}, not 'complete': {run.message}")
    rows = {row.name: row for row in summarize(run)}
    for name in variants:
        variant = run.variants.get(name)
        if variant is None:
            problems.append(f"variant {name}: missing from the result")
            continue
        measured = [
            ms for ms, phase in zip(variant.samples.wall_ms, variant.samples.phase)
            if phase == "measure"
        ]
        if not measured:
            problems.append(f"variant {name}: no measured samples")
        row = rows.get(name)
        if row is None or row.median_ms is None or not row.median_ms > 0:
            problems.append(f"variant {name}: no positive median latency")
        if variant.error:
            problems.append(f"variant {name}: {variant.error}")
    return problems


#: Environment variables pointed at a temporary folder for the self-test.
_ISOLATED_DIRS = {"COMPILE_STUDIO_SETTINGS_DIR": "settings", "COMPILE_STUDIO_DATA_DIR": "data"}


def main(argv: list[str] | None = None) -> int:
    """Run the self-test; prints a report and returns 0 (pass) or 1 (fail)."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    t_start = time.monotonic()

    from PySide6.QtWidgets import QApplication

    from compile_studio import __version__

    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "compile-studio"])
    _say(f"Compile Studio {__version__} self-test (executable {sys.executable})")
    variants = self_test_variants()
    if "default" not in variants:
        _say("no C++ compiler found (g++/c++): Inductor skipped, eager and aot_eager only")

    with tempfile.TemporaryDirectory(prefix="compile-studio-self-test-") as tmp:
        # a check leaves the user's settings and run history alone
        saved_env = {key: os.environ.get(key) for key in _ISOLATED_DIRS}
        for key, sub in _ISOLATED_DIRS.items():
            os.environ[key] = str(Path(tmp) / sub)
        try:
            problems = _run_once(app, Path(tmp) / "runs", variants, t_start)
        except Exception as exc:  # noqa: BLE001 - reported as a failed check
            traceback.print_exc()
            problems = [f"the self-test could not run: {type(exc).__name__}: {exc}"]
        finally:
            for key, value in saved_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    total = time.monotonic() - t_start
    if problems:
        _say("SELF-TEST FAILED:")
        for problem in problems:
            _say(f"  - {problem}")
        _say(f"({total:.1f} s)")
        return 1
    _say(f"SELF-TEST PASSED in {total:.1f} s")
    return 0


def _say(text: str) -> None:
    print(text, flush=True)


def _run_once(app: Any, store_root: Path, variants: list[str], t_start: float) -> list[str]:
    """Build the window, run the tiny benchmark, print what happened; the problems found."""
    from PySide6.QtCore import QEventLoop, QTimer

    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.gui.main_window import MainWindow
    from compile_studio.results import summarize

    config = BenchmarkConfig(
        layers="32,32,8",
        batch_size=4,
        device="cpu",
        iterations=20,
        warmup=3,
        variants=variants,
        label="self-test",
    )
    window = MainWindow(store_root=store_root)
    window.show()
    t_window = time.monotonic()
    _say(f"window built in {t_window - t_start:.1f} s")

    finished: list[Any] = []
    worker_pids: set[int] = set()
    loop = QEventLoop()

    def on_finished(run: Any) -> None:
        finished.append(run)
        loop.quit()

    window.run_finished.connect(on_finished)
    watcher = QTimer()
    watcher.timeout.connect(lambda: worker_pids.update(_child_pids()))
    watcher.start(50)
    deadline = QTimer()
    deadline.setSingleShot(True)
    deadline.timeout.connect(loop.quit)
    deadline.start(int(TIMEOUT_S * 1000))
    QTimer.singleShot(0, lambda: window.start_run(config))
    loop.exec()
    watcher.stop()
    deadline.stop()
    t_run = time.monotonic()

    problems: list[str] = []
    run = finished[0] if finished else None
    if run is None:
        problems.append(f"no run finished within {TIMEOUT_S:.0f} s")
        run = getattr(window, "current_run", None)
    problems += [p for p in check_run(run, variants) if p != "no run result"]
    last_error = getattr(window, "last_error", "") or ""
    if last_error and problems:
        problems.append(f"the window reported: {last_error}")
    if not list(store_root.rglob("run.json")):
        problems.append(f"no run.json written to the run store {store_root}")
    if "torch" in sys.modules:
        problems.append("the GUI process imported torch (only the worker may)")
    if not worker_pids:
        problems.append("no worker process was seen")

    pids = ", ".join(str(p) for p in sorted(worker_pids)) or "none seen"
    _say(
        f"benchmark ran in {t_run - t_window:.1f} s; "
        f"worker process(es) seen: {pids}; GUI pid {os.getpid()}"
    )
    if run is not None:
        env = run.environment or {}
        device = env.get("device") or (run.config.device if run.config is not None else "?")
        _say(f"torch {env.get('torch', '?')} on {device}; run status {run.status}")
        for row in summarize(run):
            median = f"{row.median_ms:.4f} ms" if row.median_ms else "-"
            extra = f", compile {row.compile_s:.2f} s" if row.compile_s else ""
            speed = f", speedup {row.speedup:.2f}x" if row.speedup else ""
            _say(f"  {row.name:<10} {row.status:<10} n={row.n:<4} median {median}{extra}{speed}")
    window.close()
    app.processEvents()
    return problems


if __name__ == "__main__":
    sys.exit(main())
