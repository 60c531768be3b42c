"""Does the window disturb what it measures, and does it stay responsive — from its very first run?

For each configuration — the seed MLP (1024,1024,512,10, batch 256) and a tiny
MLP (64,64,10, batch 1), eager + Inductor ``default`` — window runs and CLI
runs of the same configuration alternate, CLI first (C G C G C G …). Each
window run is the **first run of a freshly started window** (a new process:
what every new user sees); ``--reuse`` runs them all in one window instead.
Per variant it prints every run's median and p99 of the timed calls, the
ratios GUI ÷ CLI of each pair (a GUI run against the CLI run just before it),
their median over the window starts, and the CLI's own run-to-run spread:

* median ratio within 1 ± 0.05 and p99 ratio ≤ 1.3 for every variant (the
  median over starts);
* event-loop lag (a 10 ms QTimer in the window records how late each tick
  is, compile included): p99 < 33 ms and max < 100 ms in every window run.

It also prints the window's CPU share while it runs (the GUI process's CPU
seconds per second of the run, from /proc/self/stat: what the window takes
from the machine it measures) and the machine's load before and after each
pair. ``--busy`` runs everything beside one competing busy loop (reported,
not barred: users' machines are busy).

Run it under a real X server to include the real repaint cost:

    xvfb-run -a -s "-screen 0 1600x1000x24" python bench/ui_responsiveness.py [--rounds 3] [--only tiny|seed] [--busy]
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


def stat_cpu(stat: Path) -> tuple[str, float] | None:
    """(name, user + system CPU seconds) from a /proc …/stat file; None when it cannot be read."""
    try:
        head, tail = stat.read_text().rsplit(")", 1)
        fields = tail.split()
        return head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def cpu_seconds() -> float:
    """This process's CPU time (user + system), from /proc/self/stat (os.times elsewhere)."""
    read = stat_cpu(Path("/proc/self/stat"))
    if read is not None:
        return read[1]
    t = os.times()
    return t.user + t.system


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each of this process's threads so far, by "name/tid"."""
    out = {}
    for task in Path("/proc/self/task").iterdir():
        read = stat_cpu(task / "stat")
        if read is not None:
            out[f"{read[0]}/{task.name}"] = read[1]
    return out


def x_server_cpu() -> float:
    """CPU seconds the X server (Xvfb/Xorg) has used so far (0 when there is none to read)."""
    reads = (stat_cpu(proc / "stat") for proc in Path("/proc").iterdir() if proc.name.isdigit())
    return sum(r[1] for r in reads if r is not None and r[0] in ("Xvfb", "Xorg", "Xwayland"))


class StallWatch:
    """Where the GUI thread is when its event loop stalls: a thread samples its stack every 5 ms
    while no tick has come for ``after_ms``; each stall keeps the frames seen most often."""

    #: how often the watching thread looks (s)
    POLL_S = 0.005

    def __init__(self, after_ms: float = 40.0):
        import threading

        self.after_s = after_ms / 1000.0
        self.main = threading.main_thread().ident
        self._schedstat = Path(f"/proc/self/task/{threading.main_thread().native_id}/schedstat")
        self.last_tick: float | None = None  # watched from the first tick (the run's start) on
        #: per stall: (ms, "where · GUI thread on CPU x ms, waiting for a CPU y ms")
        self.stalls: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def tick(self) -> None:
        self.last_tick = time.monotonic()

    def stop(self) -> None:
        self._stop.set()

    def _sched(self) -> tuple[float, float]:
        """The GUI thread's (CPU ms, ms waiting on a run queue) so far, from its schedstat."""
        try:
            on_cpu, waiting = self._schedstat.read_text().split()[:2]
            return int(on_cpu) / 1e6, int(waiting) / 1e6
        except (OSError, ValueError):
            return 0.0, 0.0

    def _watch(self) -> None:
        import collections
        import traceback

        seen: collections.Counter[str] = collections.Counter()
        stalled_since = None
        sched0 = self._sched()
        while not self._stop.wait(self.POLL_S):
            if self.last_tick is None:
                continue
            late = time.monotonic() - self.last_tick
            if late <= self.POLL_S + 0.001 and stalled_since is None:
                sched0 = self._sched()  # the GUI thread's CPU and run-queue wait within a poll of a tick
            if late > self.after_s:
                stalled_since = stalled_since or self.last_tick
                frame = sys._current_frames().get(self.main)
                if frame is not None:
                    stack = traceback.extract_stack(frame)[-6:]
                    seen[" < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(stack))] += 1
            elif stalled_since is not None:
                if seen:
                    cpu, wait = (b - a for a, b in zip(sched0, self._sched()))
                    where = f"{seen.most_common(1)[0][0]} · GUI thread on a CPU {cpu:.0f} ms, waiting for one {wait:.0f} ms"
                    self.stalls.append(((self.last_tick - stalled_since) * 1000.0, where))
                seen.clear()
                stalled_since = None


class WindowRunner:
    """A window (one per process), with an event-loop lag probe and the window's CPU share per run."""

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
        #: per run: (the window's CPU seconds, the run's wall seconds) from Run to its end
        self.cpu_per_run: list[tuple[float, float]] = []
        self._cpu0 = self._wall0 = 0.0
        #: where the GUI thread was in each stall (``--stalls``)
        self.watch: StallWatch | None = None
        self.window.run_finished.connect(self._finished)
        self._QTimer = QTimer

    def _tick(self) -> None:
        if self.watch is not None:
            self.watch.tick()
        now = self.clock.nsecsElapsed()
        self.lags.append(max(0.0, (now - self._last) / 1e6 - TICK_MS))
        self._last = now

    def _finished(self, run) -> None:
        if self.watch is not None:
            self.watch.stop()
        self.cpu_per_run.append((cpu_seconds() - self._cpu0, time.monotonic() - self._wall0))
        now = thread_cpu()
        #: the threads that took the window's CPU during the last run: (name, CPU seconds), largest first
        self.threads_last_run = sorted(((k, v - self._threads0.get(k, 0.0)) for k, v in now.items()),
                                       key=lambda kv: -kv[1])[:4]
        self._done = run
        self.timer.stop()
        self.app.quit()

    def run(self, config):
        deadline = time.monotonic() + 120

        def start() -> None:
            if self.window.environment is None and time.monotonic() < deadline:
                self._QTimer.singleShot(100, start)  # wait for the start-up probe, as a user would
                return
            self._cpu0, self._wall0 = cpu_seconds(), time.monotonic()
            self._threads0 = thread_cpu()
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


def window_child(config_path: str, out_path: str) -> int:
    """``--window-child``: a fresh window runs one configuration; its figures go to ``out_path`` (JSON)."""
    from compile_studio.core.config import BenchmarkConfig

    config = BenchmarkConfig.from_dict(json.loads(Path(config_path).read_text()))
    t0 = time.monotonic()
    gui = WindowRunner()
    if os.environ.get("UI_BENCH_STALLS"):
        gui.watch = StallWatch()
    run = gui.run(config)
    cpu, wall = gui.cpu_per_run[-1]
    lags = np.asarray(gui.lags) if gui.lags else np.zeros(1)
    Path(out_path).write_text(json.dumps({
        "stats": stats_of(run), "lag_p50": float(np.percentile(lags, 50)), "lag_p99": float(np.percentile(lags, 99)),
        "lag_max": float(lags.max()), "ticks": len(gui.lags), "cpu_s": cpu, "wall_s": wall,
        "window_s": time.monotonic() - t0 - wall, "split": run.measurement.get("core_split") or "not pinned",
        "stalls": sorted(gui.watch.stalls, reverse=True)[:8] if gui.watch is not None else [],
        "threads": gui.threads_last_run,
    }))
    gui.window.close()
    from compile_studio.gui.gc_guard import delete_before_exit

    delete_before_exit(gui.window)
    return 0


def fresh_window_run(config: dict, scratch: Path) -> dict:
    """One run in a freshly started window process (``--window-child``): its figures."""
    config_path, out_path = scratch / "window-config.json", scratch / "window-out.json"
    config_path.write_text(json.dumps(config))
    out_path.unlink(missing_ok=True)
    p = subprocess.run([sys.executable, __file__, "--window-child", str(config_path), str(out_path)],
                       capture_output=True, text=True)
    if p.returncode != 0 or not out_path.exists():
        raise SystemExit(f"the window run failed ({p.returncode}): {p.stderr[-2000:]}")
    return json.loads(out_path.read_text())


def start_busy_loop() -> subprocess.Popen:
    """One competing busy loop (a user's other work), at normal priority."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="GUI runs per configuration (CLI runs: as many)")
    parser.add_argument("--only", choices=sorted(CONFIGS))
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the iterations (0.1 for a smoke run)")
    parser.add_argument("--variants", default="eager,default")
    parser.add_argument("--reuse", action="store_true", help="every window run in one window (not a fresh one each)")
    parser.add_argument("--busy", action="store_true", help="beside one competing busy loop (reported, not barred)")
    parser.add_argument("--stalls", action="store_true",
                        help="print where the window's GUI thread was in its longest stalls")
    parser.add_argument("--window-child", nargs=2, metavar=("CONFIG", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.window_child:
        return window_child(*args.window_child)

    scratch = Path(tempfile.mkdtemp(prefix="compile-studio-ui-bench-"))
    os.environ.setdefault("COMPILE_STUDIO_DATA_DIR", str(scratch / "data"))
    os.environ.setdefault("COMPILE_STUDIO_SETTINGS_DIR", str(scratch / "settings"))
    from compile_studio.core.config import BenchmarkConfig
    from compile_studio.results.machine_load import machine_load

    if args.stalls:
        os.environ["UI_BENCH_STALLS"] = "1"
    busy = start_busy_loop() if args.busy else None
    print(f"machine: {machine_load().summary()}; display: {os.environ.get('DISPLAY') or os.environ.get('QT_QPA_PLATFORM')}; "
          f"window runs: {'one window' if args.reuse else 'the first run of a fresh window each'}"
          f"{'; beside one busy loop' if busy else ''}")
    gui = WindowRunner() if args.reuse else None
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
        cli_stats, gui_stats, lag_rows, shares = [], [], [], []
        if gui is not None:
            gui.lags.clear()
        for r in range(args.rounds):
            load0 = os.getloadavg()[0]
            t0 = time.monotonic()
            c = cli_run(config.to_dict(), scratch / name / "cli")
            t1 = time.monotonic()
            x0 = x_server_cpu()
            if gui is not None:
                before = len(gui.lags)
                g = gui.run(config)
                lags = np.asarray(gui.lags[before:]) if len(gui.lags) > before else np.zeros(1)
                cpu, wall = gui.cpu_per_run[-1]
                figures = {"stats": stats_of(g), "lag_p50": float(np.percentile(lags, 50)),
                           "lag_p99": float(np.percentile(lags, 99)), "lag_max": float(lags.max()),
                           "ticks": len(lags), "cpu_s": cpu, "wall_s": wall, "window_s": 0.0,
                           "split": g.measurement.get("core_split") or "not pinned"}
            else:
                figures = fresh_window_run(config.to_dict(), scratch)
            t2 = time.monotonic()
            x_cpu = x_server_cpu() - x0
            if figures.get("threads"):
                print("    window threads' CPU: " + ", ".join(f"{n} {c:.2f} s" for n, c in figures["threads"]))
            for ms, where in figures.get("stalls", []):
                print(f"    stall {ms:.0f} ms at {where}")
            cli_stats.append(stats_of(c))
            gui_stats.append({k: tuple(v) for k, v in figures["stats"].items()})
            lag_ok = figures["lag_p99"] < 33 and figures["lag_max"] < 100
            ok &= lag_ok
            lag_rows.append(figures["lag_max"])
            shares.append(figures["cpu_s"] / max(figures["wall_s"], 1e-9))
            print(
                f"  round {r + 1}: CLI {t1 - t0:.1f} s, window {t2 - t1:.1f} s ({figures['split']}); "
                f"load {load0:.2f} → {os.getloadavg()[0]:.2f}; window CPU {figures['cpu_s']:.2f} s in "
                f"{figures['wall_s']:.1f} s = {shares[-1]:.2f} CPU-s/s (X server {x_cpu:.2f} s in the window's "
                f"{t2 - t1:.0f} s); event-loop lag p50 {figures['lag_p50']:.1f} "
                f"ms, p99 {figures['lag_p99']:.1f} ms, max {figures['lag_max']:.1f} ms "
                f"{'ok' if lag_ok else 'MISS'} (p99 < 33, max < 100)", flush=True,
            )
        print(f"  window CPU share: {' '.join(f'{x:.2f}' for x in shares)} CPU-s/s; "
              f"worst event-loop stall {max(lag_rows):.0f} ms")
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
    if gui is not None:
        gui.window.close()
        from compile_studio.gui.gc_guard import delete_before_exit

        delete_before_exit(gui.window)
    if busy is not None:
        busy.kill()
        busy.wait()
    print(f"\nmachine after: {machine_load().summary()}")
    print("every bar met" if ok else "a bar was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
