"""What the window knows of the machine: the probe or the worker started ahead asked, and their hello shown."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QLabel

from ..core.config import EnvironmentInfo
from ..core.protocol import HelloEvent
from ..jobs.workers import WorkerLauncher
from .environment_probe import EnvironmentProbe
from .standby import StandbyKeeper, standby_enabled


class EnvironmentWatch(QObject):
    """Asks a worker about the machine (the worker started ahead, else a probe) and keeps its answer.

    :attr:`label` (for the status bar) says what is known; :attr:`environment_changed`
    carries the :class:`EnvironmentInfo` of each hello used, :attr:`failed` why no
    worker could be asked.
    """

    environment_changed = Signal(object)
    #: why the worker could not be asked (a message for the banner)
    failed = Signal(str)

    def __init__(self, standby: StandbyKeeper, busy: Callable[[], bool], parent: QObject | None = None):
        super().__init__(parent)
        self._standby = standby
        #: whether a run or a sweep is on (its own worker says hello)
        self._busy = busy
        #: the worker's hello in use (None: not asked yet, or a new target is asked)
        self.hello: HelloEvent | None = None
        self.environment: EnvironmentInfo | None = None
        #: the message of the last failed probe ("" when none failed)
        self.problem = ""
        #: the probe asking now (None: none, or the worker started ahead answers)
        self.probe: EnvironmentProbe | None = None
        #: the worker started ahead ended before its hello: the probe asks instead
        self._standby_failed = False
        self.label = QLabel("asking the worker about this machine…")

    def start(self) -> None:
        """Ask about the machine unless asked already: the worker started ahead, else a probe."""
        if self.probe is not None or self.hello is not None:
            return
        keeper = self._standby
        if standby_enabled() and not self._standby_failed:
            # the worker started ahead answers for the probe: one torch import, not two
            keeper.start_now()
            if keeper.standby is not None and keeper.standby.usable:
                keeper.changed.connect(self._hello_from_standby)
                self._hello_from_standby()
                return
        self._standby_failed = True
        self._start_probe(EnvironmentProbe(self))

    def ask(self, launcher: WorkerLauncher, what: str) -> None:
        """Forget the answer and ask the worker of ``launcher`` (a new target, described by ``what``)."""
        self.cancel(5000)
        self.hello = None
        self.label.setText(f"asking {what}…")
        self._start_probe(EnvironmentProbe(self, launcher=launcher))

    def _start_probe(self, probe: EnvironmentProbe) -> None:
        probe.probed.connect(self.use)

        def failed(message: str, probe: EnvironmentProbe = probe) -> None:
            if self.probe is probe:  # not a probe of a target left since
                self._failed(message)

        probe.failed.connect(failed)
        self.probe = probe
        probe.start()

    def cancel(self, wait_ms: int) -> None:
        """End the probe asking now, waiting up to ``wait_ms`` for its process."""
        if self.probe is not None:
            self.probe.cancel()
            self.probe.wait(wait_ms)

    def offer(self, hello: HelloEvent) -> None:
        """A worker's hello (a run's): used when nothing is known of the machine yet."""
        if self.hello is None:
            self.use(hello)

    def _hello_from_standby(self) -> None:
        """The environment from the worker started ahead; the probe if it ends without a hello."""
        if self.hello is not None or self._standby_failed:
            return
        standby = self._standby.standby
        if standby is not None and standby.hello is not None:
            self.use(standby.hello)
        elif self._busy():
            return  # the run's own worker says hello (or the next worker started ahead does)
        elif standby is None or not standby.usable:
            self._standby_failed = True
            self.start()

    def _failed(self, message: str) -> None:
        self.label.setText("worker not available")
        self.problem = message
        self.failed.emit(message)

    def use(self, hello: HelloEvent) -> None:
        """Use the environment a worker reported (device list, compile variants, versions)."""
        self.hello = hello
        env = hello.environment
        self.environment = EnvironmentInfo.from_hello(env)
        device = self.environment.resolve_device("auto")
        name = (env.get("device_names") or {}).get(device, "")
        text = f"torch {env.get('torch', '?')} · {device}"
        if name and name != device:
            text += f" ({name})"
        if env.get("target"):
            text += f" · on {env.get('host') or '?'} ({env['target']})"
        self.label.setText(text)
        self.label.setToolTip(
            "\n".join(f"{k}: {v}" for k, v in env.items() if isinstance(v, (str, int)) and v)
        )
        self.environment_changed.emit(self.environment)
