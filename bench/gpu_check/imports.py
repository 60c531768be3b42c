"""Stage 9, imports: no desktop-only module was loaded by anything the check ran."""

from __future__ import annotations

import sys
from typing import Any

from .report import Report

#: Modules the device image lacks (or the GUI alone needs): none may load here.
DESKTOP_MODULES = ("PySide6", "pyqtgraph")
#: compile_studio modules that import them or platformdirs at import time. (The
#: session's load reading imports psutil inside a guarded call: where psutil is
#: missing, a run simply has no load reading.)
DESKTOP_APP_MODULES = (
    "compile_studio.gui",
    "compile_studio.cli",
    "compile_studio.results.storage.locations",
)


def desktop_modules_loaded(modules: list[str] | None = None) -> list[str]:
    """The desktop-only modules among ``modules`` (default: every module loaded now)."""
    names = list(sys.modules) if modules is None else modules
    return sorted(
        m for m in names
        if m.split(".")[0] in DESKTOP_MODULES
        or any(m == a or m.startswith(a + ".") for a in DESKTOP_APP_MODULES)
    )


def stage_imports(report: Report, figures: dict[str, Any]) -> None:
    loaded = desktop_modules_loaded()
    figures["loaded"] = loaded
    report.check("imports.no_desktop_modules",
                 "no desktop-only module imported (PySide6, pyqtgraph, platformdirs, the GUI, "
                 "the CLI, psutil users)", not loaded, ", ".join(loaded) or "none")
