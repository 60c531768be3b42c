"""A new kind of job, written here and nowhere in the app, runs on the window's one job thread.

The kind is an A/A calibration: the same configuration run twice through the
session (real workers), to see how far two identical runs differ. It is only
a class of the :class:`~compile_studio.jobs.job.Job` shape using the shared
:class:`~compile_studio.jobs.job.StopSwitch`; :class:`~compile_studio.gui.job_thread.JobThread`
runs it, stops it and reports its end or its failure, as it does for runs and sweeps.
Registered (:func:`~compile_studio.jobs.kinds.register_job_kind`) with a window
part and a CLI part, it is in the window's Run menu and among the CLI's
subcommands: the job, its two parts and the registration are all a kind needs.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.job_thread import JobThread
from compile_studio.jobs.job import Job, StopSwitch
from compile_studio.jobs.kinds import (
    JobKind,
    job_kind,
    job_kinds,
    register_job_kind,
    unregister_job_kind,
)
from compile_studio.jobs.session import RunOutcome, RunSession
from compile_studio.results import RunStore


class CalibrationJob:
    """The same configuration ``times`` times, one run after the other; ends with their outcomes."""

    def __init__(self, config: BenchmarkConfig, store: RunStore, times: int = 2):
        self.config, self.store, self.times = config, store, times
        self._lock = threading.Lock()
        self._stop = StopSwitch(self._lock)
        self._session: RunSession | None = None
        self.outcomes: list[RunOutcome] = []

    @property
    def stop_requested(self) -> bool:
        return self._stop.requested

    def request_stop(self, message: str = "stopped by the user") -> None:
        if self._stop.trip(message):
            with self._lock:
                session = self._session
            if session is not None:
                session.request_stop(self._stop.message)

    def fraction(self) -> float:
        with self._lock:
            session = self._session
        running = session.progress.fraction() if session is not None else 0.0
        return min(1.0, (len(self.outcomes) + running) / self.times)

    def run(self) -> list[RunOutcome]:
        for _ in range(self.times):
            session = RunSession(self.config, self.store)
            with self._lock:
                if self._stop.requested:
                    break
                self._session = session
            self.outcomes.append(session.run())
            with self._lock:
                self._session = None
        return self.outcomes


class BrokenJob(CalibrationJob):
    def run(self) -> list[RunOutcome]:
        raise RuntimeError("the calibration table is missing")


@pytest.fixture
def job(tiny_config, tmp_path) -> CalibrationJob:
    return CalibrationJob(BenchmarkConfig.from_dict(tiny_config), RunStore(tmp_path / "runs"))


def test_the_kind_has_the_job_shape(job):
    assert isinstance(job, Job)
    assert not isinstance(object(), Job)


def test_the_job_thread_runs_the_new_kind_to_its_end(qtbot, job):
    thread = JobThread(job)
    failures: list[str] = []
    thread.failed.connect(failures.append)
    with qtbot.waitSignal(thread.finished_job, timeout=120_000) as ended:
        thread.start()
    thread.wait(10_000)
    outcomes = ended.args[0]
    assert outcomes is thread.outcome and len(outcomes) == 2
    assert [o.status for o in outcomes] == ["complete", "complete"]
    assert len({o.folder for o in outcomes}) == 2 and all(o.folder.is_dir() for o in outcomes)
    assert thread.fraction() == 1.0 and not thread.stop_requested and failures == []


def test_a_stop_through_the_thread_reaches_the_running_session_and_keeps_what_ran(qtbot, job):
    job.config = BenchmarkConfig.from_dict({**job.config.to_dict(), "iterations": 100_000})
    thread = JobThread(job)
    thread.start()
    qtbot.waitUntil(lambda: thread.fraction() > 0.01, timeout=120_000)
    with qtbot.waitSignal(thread.finished_job, timeout=60_000) as ended:
        thread.request_stop("enough for now")
        thread.request_stop("a second stop changes nothing")
    thread.wait(10_000)
    (outcome,) = ended.args[0]  # the second run never started
    assert outcome.stop_requested and outcome.status == "stopped"
    assert sum(len(v.samples) for v in outcome.run.variants.values()) > 0
    assert thread.stop_requested


def test_a_job_that_raises_is_a_failure_in_words(qtbot, tiny_config, tmp_path):
    thread = JobThread(BrokenJob(BenchmarkConfig.from_dict(tiny_config), RunStore(tmp_path)))
    thread.what = "the calibration"
    with qtbot.waitSignal(thread.failed, timeout=30_000) as failed:
        thread.start()
    thread.wait(10_000)
    assert failed.args == ["the calibration stopped: RuntimeError: the calibration table is missing"]
    assert thread.outcome is None


class CalibrationEnd:
    """The calibration's end as the CLI reads any job's: a record, a folder, how it stopped."""

    def __init__(self, outcomes: list[RunOutcome], folder, stopped: bool):
        self.record, self.folder, self.stop_requested = outcomes, folder, stopped
        self.write_error = None
        self.failed = "" if all(o.status == "complete" for o in outcomes) or stopped else "a run did not complete"


class CalibrationCliJob(CalibrationJob):
    def run(self) -> CalibrationEnd:  # type: ignore[override]
        outcomes = super().run()
        return CalibrationEnd(outcomes, self.store.root, self.stop_requested)


def _median_words(outcome) -> str:
    """The eager median, or what there is instead (a run stopped in its warm-up timed nothing)."""
    stats = outcome.run.variants["eager"].stats()
    return f"{stats.median:.4f} ms" if stats is not None else "no timed call"


def print_calibration(outcomes, out) -> None:
    out.write("calibration: " + ", ".join(_median_words(o) for o in outcomes) + "\n")


def cmd_calibrate(args) -> int:
    from compile_studio.cli.job_end import report_end, run_to_end

    config = BenchmarkConfig.from_dict(json.loads(args.config.read_text()))
    job = CalibrationCliJob(config, RunStore(args.out))
    return report_end(run_to_end(job, "the runs done"), "calibration", print_calibration)


def add_calibrate_command(sub) -> None:
    """The calibration's CLI part: ``compile-studio-cli calibrate --config FILE --out DIR``."""
    p = sub.add_parser("calibrate", help="run one configuration twice: how far two identical runs differ")
    p.add_argument("--config", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(handler=cmd_calibrate)


class CalibrationMenu:
    """The calibration's window part: Run ▸ Calibrate… runs the form's configuration twice on the
    window's one job thread class and says the medians in the status bar."""

    def __init__(self, window) -> None:
        from PySide6.QtGui import QAction

        self.window = window
        self.threads: list[JobThread] = []
        self.action = QAction("Calibrate…", window)
        self.action.triggered.connect(lambda *_: self.start())
        next(a.menu() for a in window.menuBar().actions() if a.text() == "&Run").addAction(self.action)

    def start(self) -> None:
        window = self.window
        thread = JobThread(CalibrationJob(window.config_panel.config(), window.store), parent=window,
                           what="the calibration")
        thread.failed.connect(window.show_error)
        thread.finished_job.connect(lambda outcomes: window.statusBar().showMessage(
            "calibration: " + ", ".join(_median_words(o) for o in outcomes)))
        self.threads.append(thread)
        thread.start()

    def close_job(self, wait_ms: int) -> None:
        for thread in self.threads:
            thread.request_stop("the window was closed during the calibration")
            thread.wait(wait_ms)


@pytest.fixture
def calibration_kind():
    kind = JobKind("calibration", window=CalibrationMenu, cli=add_calibrate_command, order=40)
    register_job_kind(kind)
    yield kind
    unregister_job_kind("calibration")


def test_the_app_own_kinds_are_in_the_registry(calibration_kind):
    """The window's job menus and the CLI's job subcommands come from the registry: a kind taken
    out of it is gone from both."""
    from compile_studio.cli import commands as cli

    assert [k.name for k in job_kinds()] == ["trial", "sweep", "coldstart", "calibration"]
    coldstart = job_kind("coldstart")
    unregister_job_kind("coldstart")
    try:
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args(["coldstart"])
    finally:
        register_job_kind(coldstart)
    assert cli.build_parser().parse_args(["coldstart"]).command == "coldstart"


def test_a_registered_kind_is_in_the_window_run_menu_and_runs_from_it(qtbot, tiny_config, calibration_kind):
    from support.gui_helpers import open_window

    window = open_window(qtbot)
    part = window.job_parts["calibration"]
    run_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Run")
    assert part.action in run_menu.actions() and part.action.text() == "Calibrate…"
    # the kinds the app comes with are still installed in their places
    assert window.job_parts["sweep"] is window.sweep_view and window.job_parts["coldstart"] is window.coldstart_view
    window.config_panel.set_config(BenchmarkConfig.from_dict(tiny_config))
    part.action.trigger()
    (thread,) = part.threads
    with qtbot.waitSignal(thread.finished_job, timeout=120_000) as ended:
        pass
    thread.wait(10_000)
    assert [o.status for o in ended.args[0]] == ["complete", "complete"]
    qtbot.waitUntil(lambda: window.statusBar().currentMessage().startswith("calibration: "), timeout=5000)
    assert window.statusBar().currentMessage().count(" ms") == 2


def test_closing_the_window_stops_a_registered_kind_s_job_and_keeps_what_ran(qtbot, tiny_config, calibration_kind):
    from support.gui_helpers import open_window

    window = open_window(qtbot)
    part = window.job_parts["calibration"]
    window.config_panel.set_config(BenchmarkConfig.from_dict({**tiny_config, "iterations": 100_000}))
    part.action.trigger()
    (thread,) = part.threads
    qtbot.waitUntil(lambda: thread.fraction() > 0.01, timeout=120_000)
    window.close()
    assert thread.stop_requested
    # the window waits a while for the job to end; on a busy machine its worker may take longer
    qtbot.waitUntil(thread.isFinished, timeout=60_000)
    (outcome,) = thread.outcome  # the second run never started
    assert outcome.status == "stopped" and outcome.stop_requested
    assert sum(len(v.samples) for v in outcome.run.variants.values()) > 0


def test_the_cli_runs_the_new_kind_to_its_end_and_ctrl_c_stops_it(tiny_config, tmp_path, capsys, calibration_kind):
    """The registered kind is a subcommand; the CLI's one path for any job (cli/job_end.py): the
    table, where it is saved, the exit code; Ctrl+C stops the running session once and keeps what
    ran (exit 130)."""
    import os
    import signal
    import time

    from compile_studio.cli import commands as cli
    from compile_studio.cli.job_end import report_end, run_to_end

    handler = signal.getsignal(signal.SIGINT)
    (tmp_path / "c.json").write_text(BenchmarkConfig.from_dict(tiny_config).to_json())
    assert cli.main(["calibrate", "--config", str(tmp_path / "c.json"), "--out", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("calibration: ") and out.count(" ms") == 2
    assert f"saved: {tmp_path / 'runs'}" in out

    long = {**tiny_config, "iterations": 100_000}
    job = CalibrationCliJob(BenchmarkConfig.from_dict(long), RunStore(tmp_path / "long"))

    def press_ctrl_c() -> None:
        deadline = time.monotonic() + 120
        while job.fraction() < 0.01 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c, daemon=True)
    presser.start()
    code = report_end(run_to_end(job, "the runs done"), "calibration", print_calibration)
    presser.join(5)
    captured = capsys.readouterr()
    assert code == 130
    assert "interrupted: stopping, keeping the runs done…" in captured.err
    assert len(job.outcomes) == 1 and job.outcomes[0].status == "stopped"
    assert signal.getsignal(signal.SIGINT) is handler  # the handler before the job is back


def test_the_new_kind_gets_its_dialog_from_the_one_dialog_shape(qtbot, tiny_config):
    """A dialog for the calibration: its fields, what is wrong as typed, Run only when nothing is."""
    from PySide6.QtWidgets import QDialogButtonBox, QSpinBox

    from compile_studio.core.config import ConfigError, ConfigProblem
    from compile_studio.gui.sweep_dialogs import JobDialog

    class CalibrationDialog(JobDialog):
        def __init__(self, base: BenchmarkConfig):
            super().__init__("New calibration")
            self.base = base
            self.times = QSpinBox()
            self.times.setRange(0, 50)
            self.times.setValue(2)
            self.lay_out(f"Base: {base.model_text()}", [("Runs", self.times)], "Run calibration")
            self.times.valueChanged.connect(self.check)
            self.check()

        def job_spec(self) -> int:
            if self.times.value() < 2:
                raise ConfigError([ConfigProblem("runs", "at least 2: one run has nothing to compare with")])
            return self.times.value()

        def summary(self, spec: int) -> str:
            return f"{spec} runs of the same configuration"

    dialog = CalibrationDialog(BenchmarkConfig.from_dict(tiny_config))
    qtbot.addWidget(dialog)
    run = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert dialog.windowTitle() == "New calibration" and run.text() == "Run calibration"
    assert run.isEnabled() and dialog.problem_label.text() == "2 runs of the same configuration"
    dialog.times.setValue(1)
    assert not run.isEnabled()
    assert dialog.problem_label.text() == "runs: at least 2: one run has nothing to compare with"
    dialog.times.setValue(5)
    assert run.isEnabled() and dialog.job_spec() == 5
