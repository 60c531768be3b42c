"""A custom model whose factory file is broken: the window says why in one line, nothing else."""

from __future__ import annotations

import textwrap

import pytest

from compile_studio.core.config import BenchmarkConfig
from support.gui_helpers import RUN_TIMEOUT_MS, open_window

BROKEN = {
    "syntax": ("def make_model(:\n    return None\n", "syntax error in"),
    "raises": (
        textwrap.dedent(
            """
            def make_model():
                raise RuntimeError("the weights file is missing")
            """
        ),
        "the weights file is missing",
    ),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_factory_file_gives_a_one_line_banner_and_no_traceback(qtbot, tiny_config, tmp_path, kind):
    source, words = BROKEN[kind]
    path = tmp_path / "my_model.py"
    path.write_text(source)
    config = BenchmarkConfig(**{**tiny_config, "model": "custom", "factory": f"{path}:make_model"})
    window = open_window(qtbot)
    window.start_run(config)
    qtbot.waitUntil(lambda: not window.is_running(), timeout=RUN_TIMEOUT_MS)
    qtbot.waitUntil(lambda: bool(window.error_text), timeout=10_000)
    text = window.error_text
    assert words in text, text
    assert "factory" in text and "my_model.py" in text, text
    assert "\n" not in text.strip(), text
    assert "Traceback" not in text and 'File "' not in text, text
    assert len(text) < 400, text
    # nothing else on screen carries the traceback: no dialog, no message in the status bar
    from PySide6.QtWidgets import QApplication, QMessageBox

    assert not [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
    assert "Traceback" not in window.statusBar().currentMessage()
    # the window is ready for the next run
    assert not window.is_running() and window.run_button.isEnabled()
