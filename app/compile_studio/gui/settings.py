"""Persistent user settings: last configuration, window geometry, splitters, export folder."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from ..app_info import APPLICATION, ORGANIZATION
from ..config import BenchmarkConfig, ConfigError
from .paths import settings_file

_CONFIG_KEY = "run/last_config"
_GEOMETRY_KEY = "window/geometry"
_SPLITTER_PREFIX = "window/splitter/"
_EXPORT_KEY = "export/folder"


class AppSettings:
    """A QSettings (INI format) wrapper with typed accessors.

    A settings file that cannot be read is moved aside (``*.bad``) and the
    defaults are used; :attr:`problem` then holds one message for the user,
    handed out once by :meth:`take_problem`.
    """

    def __init__(self, path: Path | None = None):
        self._problems: list[str] = []
        path = path if path is not None else settings_file()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._qs = QSettings(str(path), QSettings.Format.IniFormat)
        else:
            self._qs = QSettings(
                QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANIZATION, APPLICATION
            )
        if self._qs.status() != QSettings.Status.NoError:
            self._reset(f"the settings file could not be read ({self._status_word()})")

    @property
    def path(self) -> Path:
        return Path(self._qs.fileName())

    def _status_word(self) -> str:
        return {
            QSettings.Status.AccessError: "access denied",
            QSettings.Status.FormatError: "damaged",
        }.get(self._qs.status(), "unknown error")

    def _reset(self, reason: str) -> None:
        """Move the unreadable file aside and start from defaults."""
        path = self.path
        moved = ""
        try:
            if path.exists():
                backup = path.with_name(path.name + ".bad")
                os.replace(path, backup)
                moved = f"; kept as {backup.name}"
        except OSError:
            pass
        self._qs = QSettings(str(path), QSettings.Format.IniFormat)
        self._qs.clear()
        self._problems.append(f"Settings reset to defaults: {reason}{moved}.")

    @property
    def problem(self) -> str | None:
        return " ".join(self._problems) if self._problems else None

    def take_problem(self) -> str | None:
        """The message about unreadable settings, once (None afterwards)."""
        text = self.problem
        self._problems.clear()
        return text

    # -- last configuration ------------------------------------------------
    def last_config(self) -> BenchmarkConfig | None:
        text = self._qs.value(_CONFIG_KEY)
        if text in (None, ""):
            return None
        try:
            return BenchmarkConfig.from_json(str(text))
        except ConfigError as exc:
            self._problems.append(f"The saved configuration was not usable ({exc}); using defaults.")
            self._qs.remove(_CONFIG_KEY)
            return None

    def set_last_config(self, config: BenchmarkConfig) -> None:
        self._qs.setValue(_CONFIG_KEY, config.to_json())

    # -- window --------------------------------------------------------------
    def _bytes(self, key: str) -> QByteArray | None:
        value = self._qs.value(key)
        if isinstance(value, QByteArray) and not value.isEmpty():
            return value
        return None

    def geometry(self) -> QByteArray | None:
        return self._bytes(_GEOMETRY_KEY)

    def set_geometry(self, data: QByteArray) -> None:
        self._qs.setValue(_GEOMETRY_KEY, data)

    def splitter_state(self, name: str) -> QByteArray | None:
        return self._bytes(_SPLITTER_PREFIX + name)

    def set_splitter_state(self, name: str, data: QByteArray) -> None:
        self._qs.setValue(_SPLITTER_PREFIX + name, data)

    # -- export ----------------------------------------------------------------
    def export_folder(self) -> Path | None:
        value = self._qs.value(_EXPORT_KEY)
        return Path(str(value)) if value else None

    def set_export_folder(self, folder: Path) -> None:
        self._qs.setValue(_EXPORT_KEY, str(folder))

    # -------------------------------------------------------------------------
    def sync(self) -> None:
        """Write pending changes to disk."""
        self._qs.sync()
