"""The GUI process never imports torch (only the worker process does)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    import compile_studio.gui
    import compile_studio.gui.app
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from compile_studio.gui.main_window import MainWindow
    window = MainWindow()
    window.show()
    # let the start-up probe answer: the environment comes from the worker, not from torch
    from PySide6.QtCore import QCoreApplication
    import time
    deadline = time.monotonic() + 60
    while window.environment is None and time.monotonic() < deadline:
        QCoreApplication.processEvents()
        time.sleep(0.02)
    assert window.environment is not None, window.last_error
    window.close()
    print("TORCH_LOADED" if "torch" in sys.modules else "NO_TORCH")
    print("env", window.environment.devices)
    """
)


def test_gui_process_does_not_import_torch():
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "NO_TORCH" in proc.stdout, proc.stdout
    assert "'cpu'" in proc.stdout


def test_a_plain_import_of_torch_would_be_seen():
    # the check above can fail: the same probe sees torch when it is imported
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, compile_studio.engine.runner; print('torch' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.strip() == "True"
