"""Entry point of the desktop app: ``compile-studio`` and ``python -m compile_studio``."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from ..core.app_info import APPLICATION, ORGANIZATION


def application_icon() -> QIcon | None:
    """The shipped icon (all sizes), or None when the resources are not installed."""
    try:
        from ..core.resources_path import icon_paths

        paths = icon_paths()
    except Exception:  # noqa: BLE001 - an icon is optional
        try:
            import importlib.resources

            svg = importlib.resources.files("compile_studio") / "resources" / "icons" / "compile-studio.svg"
            paths = [Path(str(svg))] if svg.is_file() else []
        except Exception:  # noqa: BLE001
            paths = []
    if not paths:
        return None
    icon = QIcon()
    for path in paths:
        icon.addFile(str(path))
    return icon


def main(argv: list[str] | None = None) -> int:
    """Create the application, show the main window, run the event loop; the exit code."""
    argv = list(sys.argv if argv is None else [sys.argv[0], *argv])
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(argv)
    app.setApplicationName(APPLICATION)
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationDisplayName(APPLICATION)
    icon = application_icon()
    if icon is not None:
        app.setWindowIcon(icon)
    try:
        from ..core.resources_path import stylesheet

        style = stylesheet()
        if style:
            app.setStyleSheet(style)
    except Exception:  # noqa: BLE001 - the default look is fine
        pass

    from .gc_guard import delete_before_exit
    from .main_window import MainWindow

    window = MainWindow()
    window.show()
    code = int(app.exec())
    delete_before_exit(window)
    return code


if __name__ == "__main__":
    sys.exit(main())
