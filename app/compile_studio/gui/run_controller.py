"""The window's single run: started from the form's configuration and stopped, its code agreed first.

:class:`RunController` is the window's Run and Stop: it checks the configuration, asks
about code the user has not agreed to run (a configuration loaded from a file names it:
:class:`~compile_studio.gui.trust_dialog.CodeTrustDialog`), and has the
:class:`~compile_studio.gui.live_run.LiveRun` run it on the chosen target.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from ..core.config import BenchmarkConfig, EnvironmentInfo
from ..jobs.trust import Agreement
from ..jobs.workers import WorkerLauncher
from ..results import RunStore
from .config_panel import ConfigPanel
from .live_run import LiveRun
from .settings import AppSettings
from .trust_dialog import NOT_AGREED, CodeConsent, code_fields, code_from_loaded


class RunController(QObject):
    """Starts (:meth:`start`) and stops (:meth:`stop`) the benchmark of the form's configuration."""

    #: a problem to show in the banner
    problem = Signal(str)
    #: a passing word for the status bar: the text and how long it stays (ms)
    said = Signal(str, int)
    #: a line for the log
    note = Signal(str)

    def __init__(
        self,
        live: LiveRun,
        form: ConfigPanel,
        store: RunStore,
        settings: AppSettings,
        consent: CodeConsent,
        parent: QObject | None = None,
    ):
        super().__init__(parent)
        self.live, self.form, self.store, self.settings, self.consent = live, form, store, settings, consent
        #: the machine the worker reported (for the configuration's problems)
        self.environment: Callable[[], EnvironmentInfo | None] = lambda: None
        #: whether a sweep runs (no single run beside it)
        self.sweep_running: Callable[[], bool] = lambda: False
        #: the launcher of the chosen target and its name (KeyError, ValueError: not usable)
        self.launcher: Callable[[], WorkerLauncher | None] = lambda: None
        self.target_name: Callable[[], str] = lambda: ""
        #: the code fields of a configuration loaded into the form from a file, and where it
        #: came from (None: the form is the user's own; see CodeTrustDialog for the rule)
        self._loaded_code: dict[str, Any] | None = None
        self._loaded_from = ""
        #: the folders of the runs started in this session (their configurations are the user's)
        self._own_run_folders: set[str] = set()
        live.started.connect(self._started)
        # the worker started ahead has a compile process ahead per compiled variant of the form
        live.standby.next_config = form.config
        form.changed.connect(live.standby.config_changed)

    def restore(self) -> None:
        """The configuration the form showed last, with what was loaded from a file and not agreed."""
        config = self.settings.last_config()
        if config is not None:
            self.form.set_config(config)
            loaded = self.settings.loaded_code()
            if loaded is not None:
                self._loaded_code, self._loaded_from = loaded

    def keep(self) -> None:
        """Keep the form's configuration, and the code loaded into it not agreed yet."""
        config = self.form.config()
        self.settings.set_last_config(config)
        unagreed = self.consent.pending(code_from_loaded(config, self._loaded_code))
        self.settings.set_loaded_code(self._loaded_code if unagreed else None, self._loaded_from)

    def start(self, config: BenchmarkConfig | None = None) -> None:
        """Start a benchmark of ``config`` (None: the form's configuration)."""
        if self.live.running:
            return
        if self.sweep_running():
            self.problem.emit("A sweep is running: stop it (Sweep → Stop sweep) before a single run")
            return
        if config is not None:
            self.form.set_config(config)
            self._loaded_code = None  # the caller's own configuration
        else:
            config = self.form.config()
        problems = config.problems(self.environment())
        if problems:
            self.problem.emit("Cannot run: " + "; ".join(str(p) for p in problems))
            return
        agreement = self.code_agreed(config)
        if agreement is None:
            said = self.consent.problem or NOT_AGREED
            self.said.emit(said, 15000)
            self.note.emit(said)
            return
        self.settings.set_last_config(config)
        self.settings.sync()
        try:
            launcher = self.launcher()
        except (KeyError, ValueError) as exc:
            self.problem.emit(f"Cannot run on {self.target_name()}: {exc.args[0]}")
            return
        try:
            self.live.start(agreement.apply(config), self.store, launcher=launcher)
        except OSError as exc:
            self.problem.emit(f"Cannot create the run folder in {self.store.root}: {exc}")

    def stop(self) -> None:
        """Ask the running benchmark to stop; returns at once (the stop completes in the background)."""
        if not self.live.running or self.live.stop_requested:
            return
        self.live.stop()
        self.said.emit("Stopping… variants not started yet are kept as not run", 5000)

    def _started(self) -> None:
        job = self.live.run_job
        if job is not None and job.folder is not None:
            self._own_run_folders.add(os.path.abspath(job.folder))

    def load(self, config: BenchmarkConfig, source: Path | str | None = None) -> None:
        """Put ``config`` into the form; ``source``: the run folder or file it came from (its code
        is asked about before it runs unless the run was started in this session), None: the
        caller's own."""
        self.form.set_config(config)
        if source is None or os.path.abspath(source) in self._own_run_folders:
            self._loaded_code = None
        else:
            self._loaded_code = code_fields(config)
            self._loaded_from = f"The configuration loaded from {source}"

    def code_agreed(self, config: BenchmarkConfig, more: list[BenchmarkConfig] | None = None) -> Agreement | None:
        """The agreement to run the code ``config`` (the form's) and ``more`` (the other
        configurations of its job: a sweep's points) name, None when not agreed: code still as
        a loaded configuration had it is asked about (:class:`CodeTrustDialog`) unless agreed
        already; the job runs the agreed copies."""
        refs = code_from_loaded(config, self._loaded_code, more)
        return self.consent.agreed(refs, self._loaded_from)
