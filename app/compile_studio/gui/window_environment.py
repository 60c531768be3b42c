"""What the window knows of the machine: the probe or the worker started ahead asked, and their hello shown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.config import EnvironmentInfo
from ..core.protocol import HelloEvent
from .environment_probe import EnvironmentProbe
from .standby import standby_enabled

if TYPE_CHECKING:
    from .main_window import MainWindow


def start_probe(window: MainWindow) -> None:
    if window._probe is not None or window.hello is not None:
        return
    keeper = window.live.standby
    if standby_enabled() and not window._standby_hello_failed:
        # the worker started ahead answers for the probe: one torch import, not two
        keeper.start_now()
        if keeper.standby is not None and keeper.standby.usable:
            keeper.changed.connect(window._hello_from_standby)
            window._hello_from_standby()
            return
    window._standby_hello_failed = True
    probe = EnvironmentProbe(window)
    probe.probed.connect(window.set_hello)
    probe.failed.connect(window._probe_failed)
    window._probe = probe
    probe.start()


def hello_from_standby(window: MainWindow) -> None:
    """The environment from the worker started ahead; the probe if it ends without a hello."""
    if window.hello is not None or window._standby_hello_failed:
        return
    standby = window.live.standby.standby
    if standby is not None and standby.hello is not None:
        window.set_hello(standby.hello)
    elif window.is_running() or window.sweep_view.is_running():
        return  # the run's own worker says hello (or the next worker started ahead does)
    elif standby is None or not standby.usable:
        window._standby_hello_failed = True
        window._start_probe()


def probe_failed(window: MainWindow, message: str) -> None:
    window.env_label.setText("worker not available")
    window.show_error(message)
    #: the banner's text saying the worker could not be asked (cleared with a new target)
    window.probe_problem = window.error_text


def set_hello(window: MainWindow, hello: HelloEvent) -> None:
    """Use the environment a worker reported (device list, compile variants, versions)."""
    window.hello = hello
    env = hello.environment
    window.environment = EnvironmentInfo.from_hello(env)
    window.config_panel.set_environment(window.environment)
    window._fit_form_width()
    device = window.environment.resolve_device("auto")
    name = (env.get("device_names") or {}).get(device, "")
    text = f"torch {env.get('torch', '?')} · {device}"
    if name and name != device:
        text += f" ({name})"
    if env.get("target"):
        text += f" · on {env.get('host') or '?'} ({env['target']})"
    window.env_label.setText(text)
    window.env_label.setToolTip(
        "\n".join(f"{k}: {v}" for k, v in env.items() if isinstance(v, (str, int)) and v)
    )
    window.environment_changed.emit(window.environment)
