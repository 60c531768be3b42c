"""Code named by a received file runs only after the user says yes in the window: Run after
"Load its configuration", and Resume of a sweep the window did not start."""

from __future__ import annotations

import dataclasses
import hashlib
from contextlib import contextmanager
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.paths import runs_dir
from compile_studio.gui.trust_dialog import CodeTrustDialog
from compile_studio.jobs.sweep import new_sweep
from compile_studio.jobs.sweep_spec import SweepSpec
from support.gui_helpers import open_window
from support.untrusted_helpers import edit_json, saved_run

BACKEND = "import pathlib\npathlib.Path(__file__).with_suffix('.ran').write_text('ran')\n"


def backend_file(folder: Path) -> Path:
    path = folder / "their_backend.py"
    path.write_text(BACKEND)
    return path


@contextmanager
def answering(yes: bool):
    """Answer every CodeTrustDialog shown meanwhile (by its buttons); yields the texts shown."""
    shown: list[str] = []

    def poll() -> None:
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, CodeTrustDialog) and widget.isVisible() and widget.result() == 0:
                shown.append(widget.text())
                (widget.run_button if yes else widget.cancel_button).click()

    timer = QTimer()
    timer.timeout.connect(poll)
    timer.start(20)
    try:
        yield shown
    finally:
        timer.stop()


def recorded_starts(window, monkeypatch) -> list[BenchmarkConfig]:
    """Configs the window hands to its live run (no worker is started)."""
    started: list[BenchmarkConfig] = []
    monkeypatch.setattr(window.live, "start", lambda config, store, launcher=None: started.append(config))
    return started


def received_run(tmp_path: Path) -> tuple[Path, Path]:
    module = backend_file(tmp_path)
    folder = saved_run(runs_dir(), label="from-a-colleague")
    edit_json(folder, lambda d: d["config"].update(backend_modules=[str(module)], device="cpu"))
    return folder, module


def load_from_history(window, folder: Path) -> None:
    window.history.refresh()
    entry = next(e for e in window.history.entries() if e.path == folder)
    window.history.load_config_of(entry)


def test_run_after_loading_a_received_configuration_asks_and_no_runs_nothing(qtbot, tmp_path, monkeypatch):
    folder, module = received_run(tmp_path)
    window = open_window(qtbot)
    started = recorded_starts(window, monkeypatch)
    load_from_history(window, folder)
    assert window.config_panel.config().backend_modules == [str(module)]

    with answering(yes=False) as shown:
        window.start_run()
    assert len(shown) == 1
    assert str(module.resolve()) in shown[0]
    assert hashlib.sha256(module.read_bytes()).hexdigest() in shown[0]
    assert started == [] and not window.is_running() and window.live.benchmark_thread is None
    assert "Not run" in window.statusBar().currentMessage()
    assert not module.with_suffix(".ran").exists()

    with answering(yes=True) as shown:
        window.start_run()
    assert len(shown) == 1
    # the agreed bytes run: a private copy named by their hash
    digest = hashlib.sha256(module.read_bytes()).hexdigest()
    assert [[Path(m).parent.name, Path(m).name] for c in started for m in c.backend_modules] == [
        [f"sha256-{digest}", module.name]
    ]
    with answering(yes=False) as shown:  # agreed once: the same code is not asked again
        window.start_run()
    assert shown == [] and len(started) == 2


def test_the_users_own_form_is_not_asked_and_an_edited_code_field_is_theirs(qtbot, tmp_path, monkeypatch):
    folder, module = received_run(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    my_module = backend_file(mine)
    window = open_window(qtbot)
    started = recorded_starts(window, monkeypatch)
    window.config_panel.set_config(BenchmarkConfig(device="cpu", backend_modules=[str(my_module)]))
    with answering(yes=False) as shown:
        window.start_run()
    assert shown == [] and len(started) == 1

    load_from_history(window, folder)
    config = window.config_panel.config()
    window.config_panel.set_config(dataclasses.replace(config, batch_size=config.batch_size + 1))
    with answering(yes=False) as shown:  # another field edited: the code is still the file's
        window.start_run()
    assert len(shown) == 1 and len(started) == 1
    window.config_panel.set_config(dataclasses.replace(config, backend_modules=[str(my_module)]))
    with answering(yes=False) as shown:  # the code field edited by hand: the user's own
        window.start_run()
    assert shown == [] and len(started) == 2


def test_a_loaded_configuration_not_agreed_to_is_asked_about_after_a_restart(qtbot, tmp_path, monkeypatch):
    folder, module = received_run(tmp_path)
    first = open_window(qtbot)
    load_from_history(first, folder)
    first.close()
    again = open_window(qtbot)
    assert again.config_panel.config().backend_modules == [str(module)]
    started = recorded_starts(again, monkeypatch)
    with answering(yes=False) as shown:
        again.start_run()
    assert len(shown) == 1 and started == []


def test_resume_of_a_received_sweep_asks_and_no_starts_nothing(qtbot, tmp_path, monkeypatch):
    module = backend_file(tmp_path)
    base = BenchmarkConfig(device="cpu", variants=["eager"], layers="8,8", backend_modules=[str(module)])
    received = new_sweep(SweepSpec.parse("batch_size", "1,2"), base, tmp_path / "received")
    window = open_window(qtbot)
    view = window.sweep_view
    ran: list[Path] = []

    def fake_run(folder, concurrency, agreement=None):
        view.folder = folder
        ran.append(folder.path)
        return True

    monkeypatch.setattr(view.jobs, "_run", fake_run)
    messages: list[str] = []
    view.message.connect(messages.append)
    assert view.open_sweep(received.path)
    with answering(yes=False) as shown:
        assert not view.resume()
    assert len(shown) == 1 and str(module.resolve()) in shown[0]
    assert ran == [] and view.jobs.sweep_thread is None and "Not run" in messages[-1]
    with answering(yes=True) as shown:
        assert view.resume()
    assert len(shown) == 1 and ran == [received.path]

    # a sweep started in this session is the user's own: its Resume is not asked about
    mine = tmp_path / "mine"
    mine.mkdir()
    own_base = dataclasses.replace(base, backend_modules=[str(backend_file(mine))])
    assert view.start(SweepSpec.parse("batch_size", "1,2"), own_base)
    with answering(yes=False) as shown:
        assert view.resume()
    assert shown == [] and len(ran) == 3


def test_new_sweep_from_a_loaded_configuration_asks_about_the_code_its_points_run(qtbot, tmp_path, monkeypatch):
    """A received run whose model is not custom names a factory; a sweep over model=mlp,custom
    runs it at its second point: the window asks before the sweep starts, and runs the copy."""
    factory = tmp_path / "their_model.py"
    factory.write_text(BACKEND + "def make_model():\n    raise SystemExit\n")
    folder = saved_run(runs_dir(), label="from-a-colleague")
    edit_json(folder, lambda d: d["config"].update(factory=f"{factory}:make_model", device="cpu", model="mlp"))
    window = open_window(qtbot)
    load_from_history(window, folder)
    view = window.sweep_view
    ran: list = []
    monkeypatch.setattr(view.jobs, "_run", lambda folder, concurrency, agreement=None: ran.append(agreement) or True)
    spec = SweepSpec.parse("model", "mlp,custom")
    with answering(yes=False) as shown:
        assert not view.start(spec, window.config_panel.config())
    assert len(shown) == 1 and str(factory.resolve()) in shown[0]
    assert ran == [] and not factory.with_suffix(".ran").exists()
    with answering(yes=True) as shown:
        assert view.start(spec, window.config_panel.config())
    assert len(shown) == 1 and len(ran) == 1
    copy = Path(ran[0].copies[str(factory.resolve())])
    assert copy.parent.name == "sha256-" + hashlib.sha256(factory.read_bytes()).hexdigest()
