"""Finds the files shipped in ``compile_studio.resources`` (icons, presets, stylesheet).

The folder ``resources/`` at the top of the source tree is installed as the
package ``compile_studio.resources``. It is found with :mod:`importlib.resources`
in a wheel, an editable install and a PyInstaller bundle alike; a plain source
checkout (``app/`` on ``sys.path``) falls back to the folder itself.

No Qt, no torch: safe to import from any process.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from pathlib import Path
from typing import Any

RESOURCES_PACKAGE = "compile_studio.resources"
#: Sizes of the PNG icons rendered from ``icons/compile-studio.svg``.
ICON_SIZES = (16, 32, 48, 64, 128, 256)
ICON_NAME = "compile-studio"
#: Reverse-DNS application id (desktop entry, AppStream, icon theme name).
APP_ID = "io.github.compilestudio.CompileStudio"


class ResourceMissing(FileNotFoundError):
    """A file that ships with the application is not where it should be."""


def _is_resource_dir(path: Path) -> bool:
    return (path / "presets.json").is_file()


@functools.lru_cache(maxsize=1)
def resources_dir() -> Path:
    """The folder holding the shipped resources (a real directory on disk)."""
    candidates: list[Path] = []
    try:
        candidates.append(Path(str(importlib.resources.files(RESOURCES_PACKAGE))))
    except ModuleNotFoundError:
        pass
    package_dir = Path(str(importlib.resources.files("compile_studio")))
    candidates.append(package_dir / "resources")
    # a source checkout: <repo>/app/compile_studio -> <repo>/resources
    candidates.append(package_dir.parent.parent / "resources")
    for candidate in candidates:
        if _is_resource_dir(candidate):
            return candidate
    raise ResourceMissing(
        "the application's resources were not found; looked in "
        + ", ".join(str(c) for c in candidates)
    )


def resource_path(*parts: str) -> Path:
    """The path of one shipped file, e.g. ``resource_path("icons", "compile-studio.svg")``."""
    path = resources_dir().joinpath(*parts)
    if not path.exists():
        raise ResourceMissing(f"missing resource: {'/'.join(parts)} (looked at {path})")
    return path


def icon_path(size: int | None = None) -> Path:
    """The application icon: the SVG, or the PNG of the smallest shipped size ≥ ``size``."""
    if size is None:
        return resource_path("icons", f"{ICON_NAME}.svg")
    fitting = [s for s in ICON_SIZES if s >= size] or [ICON_SIZES[-1]]
    return resource_path("icons", f"{ICON_NAME}-{fitting[0]}.png")


def icon_paths() -> list[Path]:
    """Every shipped icon file (the PNG sizes, then the SVG), for building a QIcon."""
    return [icon_path(s) for s in ICON_SIZES] + [icon_path()]


def load_presets() -> list[dict[str, Any]]:
    """The shipped presets: ``[{"name", "description", "config": {...}}, ...]``.

    ``config`` is a partial :class:`compile_studio.core.config.BenchmarkConfig` dict
    (fields left out keep their defaults). The preset marked ``"default": true``
    comes first.
    """
    data = json.loads(resource_path("presets.json").read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError("presets.json must hold a list of presets")
    presets = []
    for entry in data:
        if not isinstance(entry, dict) or not isinstance(entry.get("config"), dict):
            raise ValueError(f"presets.json: not a preset: {entry!r:.80}")
        presets.append(
            {
                "name": str(entry["name"]),
                "description": str(entry.get("description", "")),
                "default": bool(entry.get("default", False)),
                "config": dict(entry["config"]),
            }
        )
    presets.sort(key=lambda p: not p["default"])
    return presets


def stylesheet() -> str:
    """The application's Qt stylesheet, or ``""`` when none is shipped."""
    try:
        return resource_path("style.qss").read_text(encoding="utf-8")
    except ResourceMissing:
        return ""
