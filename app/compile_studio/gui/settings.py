"""Persistent user settings: last configuration, window geometry, splitters, export folder."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from ..app_info import APPLICATION, ORGANIZATION
from ..config import BenchmarkConfig, ConfigError, ConfigProblem
from .paths import settings_file

_CONFIG_KEY = "run/last_config"
_GEOMETRY_KEY = "window/geometry"
_SPLITTER_PREFIX = "window/splitter/"
_EXPORT_KEY = "export/folder"
#: A settings file larger than this is not read (ours are a few KiB).
MAX_SETTINGS_BYTES = 1 << 20
#: The longest saved configuration or path taken from the settings file.
MAX_TEXT_CHARS = 64 * 1024


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
            oversized = _oversized(path)
            if oversized:
                self._move_aside(path, oversized)
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
        self._move_aside(path, reason)
        self._qs = QSettings(str(path), QSettings.Format.IniFormat)
        self._qs.clear()

    def _move_aside(self, path: Path, reason: str) -> None:
        moved = ""
        try:
            if path.exists():
                backup = path.with_name(path.name + ".bad")
                os.replace(path, backup)
                moved = f"; kept as {backup.name}"
        except OSError:
            pass
        self._problems.append(f"Settings reset to defaults: {reason}{moved}.")

    def _text(self, key: str) -> str | None:
        """The value at ``key`` when it is a string of a sane length, else None."""
        value = self._qs.value(key)
        if isinstance(value, str) and 0 < len(value) <= MAX_TEXT_CHARS:
            return value
        return None

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
        if self._qs.value(_CONFIG_KEY) in (None, ""):
            return None
        text = self._text(_CONFIG_KEY)
        try:
            if text is None:
                raise ConfigError([ConfigProblem("config", "not a configuration text of a sane size")])
            return self._checked(BenchmarkConfig.from_json(text))
        except ConfigError as exc:
            self._problems.append(f"The saved configuration was not usable ({exc}); using defaults.")
            self._qs.remove(_CONFIG_KEY)
            return None

    def _checked(self, config: BenchmarkConfig) -> BenchmarkConfig:
        """``config`` with each field that has a problem back at its default (said once)."""
        problems = config.problems()
        if not problems:
            return config
        fields = sorted({p.field for p in problems if p.field in config.to_dict()})
        defaults = BenchmarkConfig()
        config = dataclasses.replace(config, **{f: getattr(defaults, f) for f in fields})
        if config.problems():
            raise ConfigError(problems)
        named = ", ".join(fields)
        self._problems.append(
            f"The saved configuration had unusable values ({named}); those are back to their defaults."
        )
        return config

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
        value = self._text(_EXPORT_KEY)
        return Path(value) if value and "\x00" not in value else None

    def set_export_folder(self, folder: Path) -> None:
        self._qs.setValue(_EXPORT_KEY, str(folder))

    # -- summary table ---------------------------------------------------------
    def hidden_table_columns(self) -> list[str]:
        """The summary table columns the user hid (names; unknown ones are ignored by the table)."""
        value = self._qs.value("table/hidden_columns")
        if not value:
            return []
        names = value if isinstance(value, list) else str(value).split("\n")
        return [str(n) for n in names if str(n)][:64]

    def set_hidden_table_columns(self, names: list[str]) -> None:
        self._qs.setValue("table/hidden_columns", "\n".join(names))

    # -------------------------------------------------------------------------
    def sync(self) -> None:
        """Write pending changes to disk."""
        self._qs.sync()


def _oversized(path: Path) -> str | None:
    """Why ``path`` must not be read as settings (too large, not a regular file), or None."""
    try:
        st = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return "the settings path is not a regular file"
    if st.st_size > MAX_SETTINGS_BYTES:
        return f"the settings file is {st.st_size / 2**20:.0f} MiB, far larger than settings can be"
    return None
