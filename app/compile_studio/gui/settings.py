"""Persistent user settings: last configuration, window geometry, splitters, export folder.

The settings file is input like any other: Qt never opens it in place. It is
checked first (a regular file, not a link, of a sane size, INI text), read
through a private copy, and written by replacing it (a temp file beside it,
then a rename), so nothing is ever written through a link. A file that fails
the checks is set aside as ``<name>.bad``; a folder that cannot be created or
written keeps the settings in memory for this session, said once.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

from ..core.app_info import APPLICATION, ORGANIZATION
from ..core.config import BenchmarkConfig, ConfigError, ConfigProblem
from .paths import settings_file

_CONFIG_KEY = "run/last_config"
_GEOMETRY_KEY = "window/geometry"
_SPLITTER_PREFIX = "window/splitter/"
_EXPORT_KEY = "export/folder"
_LOADED_CODE_KEY = "trust/loaded_code"
#: A settings file larger than this is not read (ours are a few KiB).
MAX_SETTINGS_BYTES = 1 << 20
#: The longest saved configuration or path taken from the settings file.
MAX_TEXT_CHARS = 64 * 1024
#: How many ``.bad`` names are tried before a bad file is left where it is.
_MAX_ASIDE_NAMES = 20
_PROBE_ORGANIZATION = "compile-studio-path-probe"


def default_settings_file() -> Path:
    """Where Qt keeps this app's INI settings for the user (the file is not opened)."""
    probe = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, _PROBE_ORGANIZATION, "probe")
    return Path(probe.fileName()).parent.parent / ORGANIZATION / f"{APPLICATION}.ini"


class AppSettings:
    """The user's settings, kept in memory and saved to an INI file by :meth:`sync`.

    A settings file that cannot be read is moved aside (``*.bad``) and the
    defaults are used; a settings folder that cannot be made or written means
    the settings of this session are not saved (:attr:`saving` False). Either
    is one message for the user, handed out once by :meth:`take_problem`.
    """

    def __init__(self, path: Path | None = None):
        self._problems: list[str] = []
        self._path = path if path is not None else (settings_file() or default_settings_file())
        self._qs = _Values()
        #: whether :meth:`sync` writes the settings to disk
        self.saving = True
        unsaved = _folder_problem(self._path.parent)
        data, bad = _checked_file(self._path)
        if bad is not None:
            if unsaved is None:
                if not self._move_aside(self._path, bad):
                    unsaved = "the unusable settings file could not be set aside"
            else:
                self._problems.append(f"Settings reset to defaults: {bad}.")
        if unsaved is not None:
            self.saving = False
            self._problems.append(f"Settings will not be saved this session: {unsaved}.")
        if data is not None:
            self._read(data)

    @property
    def path(self) -> Path:
        return self._path

    def _read(self, data: bytes) -> None:
        """Take the values of a checked settings file, read by Qt from a private copy."""
        with tempfile.TemporaryDirectory(prefix="compile-studio-settings-") as tmp:
            copy = Path(tmp) / "read.ini"
            copy.write_bytes(data)
            qs = QSettings(str(copy), QSettings.Format.IniFormat)
            status = qs.status()
            values = {key: qs.value(key) for key in qs.allKeys()} if status == QSettings.Status.NoError else {}
            del qs
        if status == QSettings.Status.NoError:
            self._qs = _Values(values)
            return
        reason = "the settings file could not be read (damaged)"
        if self.saving:
            self._move_aside(self._path, reason)
        else:
            self._problems.append(f"Settings reset to defaults: {reason}.")

    def _move_aside(self, path: Path, reason: str) -> bool:
        """Rename ``path`` (a file, a link or a folder) to a free ``<name>.bad``, say so,
        and return whether it went (a link is renamed itself, never followed)."""
        kept = None
        for k in range(_MAX_ASIDE_NAMES):
            backup = path.with_name(path.name + ".bad" + (f".{k}" if k else ""))
            if os.path.lexists(backup):
                continue
            try:
                os.rename(path, backup)
            except FileNotFoundError:
                kept = ""
            except OSError as exc:
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR, errno.ENOTDIR):
                    continue
            else:
                kept = f"; kept as {backup.name}"
            break
        if kept is None:
            self._problems.append(f"Settings reset to defaults: {reason}; it could not be set aside.")
            return False
        self._problems.append(f"Settings reset to defaults: {reason}{kept}.")
        return True

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

    def loaded_code(self) -> tuple[dict[str, Any], str] | None:
        """The code fields of a configuration loaded from a file and not agreed to when the
        window closed, and where it came from; None when the saved configuration is the user's."""
        text = self._text(_LOADED_CODE_KEY)
        try:
            doc = json.loads(text) if text else None
        except (ValueError, RecursionError):
            doc = None
        if not isinstance(doc, dict) or not isinstance(doc.get("fields"), dict):
            return None
        fields, source = doc["fields"], doc.get("source")
        factory, modules = fields.get("factory"), fields.get("backend_modules")
        if not isinstance(factory, str) or not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
            return None
        return {"factory": factory, "backend_modules": modules}, source if isinstance(source, str) else "a file"

    def set_loaded_code(self, fields: dict[str, Any] | None, source: str = "") -> None:
        """Keep (or, with None, forget) the code fields of a configuration loaded from a file."""
        if fields is None:
            self._qs.remove(_LOADED_CODE_KEY)
        else:
            self._qs.setValue(_LOADED_CODE_KEY, json.dumps({"fields": fields, "source": source}))

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
        """Write the settings to disk (when they changed and can be saved).

        The file is replaced, never written in place: a link there is replaced
        by the file, not followed; something else in its place is set aside first.
        """
        if not self.saving or not self._qs.dirty:
            return
        path = self._path
        _, bad = _checked_file(path)
        if bad is not None and not self._move_aside(path, bad):
            return
        tmp: str | None = None
        try:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            os.close(fd)
            qs = QSettings(tmp, QSettings.Format.IniFormat)
            for key, value in self._qs.items():
                qs.setValue(key, value)
            qs.sync()
            status = qs.status()
            del qs
            if status != QSettings.Status.NoError:
                raise OSError(errno.EIO, "Qt could not write the settings")
            os.replace(tmp, path)
            tmp = None
            self._qs.dirty = False
        except OSError as exc:
            self._problems.append(f"The settings could not be saved to {path}: {exc.strerror or exc}.")
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


class _Values:
    """The settings of this session by key: what the accessors read and write."""

    def __init__(self, values: dict[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = dict(values or {})
        #: whether a value changed since the settings were read or saved
        self.dirty = False

    def value(self, key: str) -> Any:
        return self._values.get(key)

    def setValue(self, key: str, value: Any) -> None:  # noqa: N802 - QSettings' name
        self._values[key] = value
        self.dirty = True

    def remove(self, key: str) -> None:
        if self._values.pop(key, None) is not None:
            self.dirty = True

    def items(self) -> list[tuple[str, Any]]:
        return list(self._values.items())


def _folder_problem(folder: Path) -> str | None:
    """Why settings cannot be saved in ``folder`` (created if need be), or None."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"the settings folder {folder} cannot be created ({exc.strerror or exc})"
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".compile-studio-", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"the settings folder {folder} cannot be written ({exc.strerror or exc})"
    return None


def _checked_file(path: Path) -> tuple[bytes | None, str | None]:
    """The bytes of the settings file when it is one to read; else None and why not
    (None, None: there is no file yet). Nothing that is not a regular file is opened."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as exc:
        return None, f"the settings file cannot be examined ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return None, "the settings file is a link, which settings are never written through"
    if not stat.S_ISREG(st.st_mode):
        return None, "the settings path is not a regular file"
    if st.st_size > MAX_SETTINGS_BYTES:
        return None, f"the settings file is {st.st_size / 2**20:.0f} MiB, far larger than settings can be"
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None, "the settings path is not a regular file"
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(MAX_SETTINGS_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        return None, f"the settings file cannot be read ({exc.strerror or exc})"
    if len(data) > MAX_SETTINGS_BYTES:
        return None, "the settings file is far larger than settings can be"
    problem = _ini_problem(data)
    return (None, problem) if problem else (data, None)


def _ini_problem(data: bytes) -> str | None:
    """Why ``data`` is not an INI settings file as Qt writes one, or None."""
    if b"\x00" in data:
        return "the settings file is not a settings (INI) file: it holds binary data"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "the settings file is not a settings (INI) file: it is not UTF-8 text"
    continued = False
    for line in text.lstrip("\ufeff").splitlines():
        s = line.strip()
        fits = (
            continued or not s or s[0] in ";#"
            or (s.startswith("[") and s.endswith("]"))
            or ("=" in s and not s.startswith("="))
        )
        if not fits:
            return "the settings file is not a settings (INI) file"
        continued = s.endswith("\\")
    return None
