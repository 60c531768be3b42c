"""What a run file may hold: typed, bounded checks for everything read back from disk.

A run folder can come from another machine, damaged or crafted. Every value
read from ``run.json`` and the CSVs passes through this module, which knows
the type, range and size each field may have. A value that does not fit is
replaced by its default and the field is named in a list of problems; a file
that cannot be read at all raises :class:`RunDamaged` with the reason. Nothing
else escapes: no ``UnicodeDecodeError``, ``RecursionError`` or ``KeyError``.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import MISSING, dataclass, fields
from enum import Enum
from pathlib import Path
from typing import Any

#: Largest run.json read (a real one is a few hundred KiB).
MAX_RUN_JSON_BYTES = 32 * 1024 * 1024
#: Largest samples.csv / gpu_state.csv read (a million iterations of a dozen variants fit).
MAX_CSV_BYTES = 2 * 1024 * 1024 * 1024
#: Longest CSV line read; longer ones are skipped as damaged rows.
MAX_CSV_LINE = 4096
#: Longest text kept from a field (labels, messages, tracebacks).
MAX_TEXT = 20_000
#: Longest name (variant, run id, dictionary key).
MAX_NAME = 200
#: Most items kept from one list or dictionary of a free-form field.
MAX_ITEMS = 10_000
#: Deepest nesting kept in a free-form field (environment, checks, clock).
MAX_DEPTH = 16
#: Most variants read from one run.
MAX_VARIANTS = 256
#: Most digits in a whole number read from a file.
MAX_DIGITS = 20
#: Largest magnitude of a whole number read from a file.
MAX_INT = 2**63 - 1
#: Longest timing kept (ms; about 11.6 days): a longer one, a negative one or one that is not
#: finite is no measurement, whether it comes from a file or from a worker.
MAX_TIMING_MS = 1e9


class RunDamaged(Exception):
    """A run folder or file that cannot be read; the message says what is wrong."""


# -- files -----------------------------------------------------------------

def check_regular_file(path: Path, limit: int) -> int:
    """The size of ``path``; RunDamaged unless it is a regular file (not a link) under ``limit``."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise RunDamaged(f"{path.name} does not exist") from None
    except OSError as exc:
        raise RunDamaged(f"cannot read {path.name}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise RunDamaged(f"{path.name} is not a regular file")
    if st.st_size > limit:
        raise RunDamaged(f"{path.name} is larger than {limit // (1024 * 1024)} MiB")
    return st.st_size


def read_bytes_capped(path: Path, limit: int) -> bytes:
    """The bytes of a regular file under ``limit`` (RunDamaged otherwise)."""
    check_regular_file(path, limit)
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise RunDamaged(f"cannot read {path.name}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise RunDamaged(f"{path.name} is larger than {limit // (1024 * 1024)} MiB")
    return data


class CsvLines:
    """The decoded lines of a CSV file, skipping (and counting) undecodable or overlong ones.

    Iterate it to get text lines for :func:`csv.reader`; ``skipped`` counts the
    lines left out. Opened in binary so one bad byte costs one row, not the file.
    ``start`` is the byte offset to read from (the start of a line).
    """

    def __init__(
        self, path: Path, limit: int = MAX_CSV_BYTES, max_line: int = MAX_CSV_LINE, start: int = 0
    ):
        check_regular_file(path, limit)
        self.path = path
        self.max_line = max_line
        self.skipped = 0
        try:
            self._fh = open(path, "rb")
            if start:
                self._fh.seek(start)
        except OSError as exc:
            raise RunDamaged(f"cannot read {path.name}: {exc.strerror or exc}") from None

    def __iter__(self) -> Iterator[str]:
        with self._fh as fh:
            while True:
                try:
                    raw = fh.readline(self.max_line + 1)
                except OSError as exc:
                    raise RunDamaged(f"cannot read {self.path.name}: {exc.strerror or exc}") from None
                if not raw:
                    return
                if len(raw) > self.max_line and not raw.endswith(b"\n"):
                    # the rest of an overlong line is read and dropped in pieces
                    while raw and not raw.endswith(b"\n"):
                        raw = fh.readline(64 * 1024)
                    self.skipped += 1
                    continue
                if b"\0" in raw:
                    self.skipped += 1
                    continue
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError:
                    self.skipped += 1


# -- JSON ------------------------------------------------------------------

def _bounded_int(text: str) -> int | None:
    digits = text.lstrip("+-")
    return int(text) if len(digits) <= MAX_DIGITS else None


def parse_json_document(data: bytes, name: str) -> Any:
    """Decode a JSON document read from a file: UTF-8, no NaN/Infinity, bounded numbers.

    ``NaN``/``Infinity`` and numbers with more than MAX_DIGITS digits become
    null (their field falls back to its default). Raises RunDamaged.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunDamaged(f"{name} is not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=lambda _c: None, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise RunDamaged(f"{name} is damaged (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise RunDamaged(f"{name} is nested too deeply") from None
    except ValueError as exc:
        raise RunDamaged(f"{name} is damaged ({str(exc)[:80]})") from None


def bounded_json(value: Any, depth: int = 0) -> Any:
    """A copy of free-form JSON data within the bounds, or raise ValueError."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if abs(value) > MAX_INT:
            raise ValueError("number too large")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not a finite number")
        return value
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise ValueError("text too long")
        return value
    if isinstance(value, list):
        if len(value) > MAX_ITEMS:
            raise ValueError("too many items")
        return [bounded_json(v, depth + 1) for v in value]
    if isinstance(value, dict):
        if len(value) > MAX_ITEMS:
            raise ValueError("too many items")
        out = {}
        for k, v in value.items():
            if not isinstance(k, str) or len(k) > MAX_NAME:
                raise ValueError("a key is not a short text")
            out[k] = bounded_json(v, depth + 1)
        return out
    raise ValueError(f"{type(value).__name__} is not JSON data")


# -- typed values ----------------------------------------------------------

class Unfit(ValueError):
    """A value that does not fit its field's type or bounds."""


def _describe(value: Any) -> str:
    return type(value).__name__ if not isinstance(value, (str, int, float)) else repr(value)[:40]


def _is_optional_float(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and set(typing.get_args(hint)) == {
        float, type(None)
    }


def _plain_numbers(value: list[Any], item: Any) -> list[Any] | None:
    """``value`` checked at once when it is what a well-behaved sender writes (a samples
    event's thousands of numbers): floats, all finite, for ``float``; whole numbers in range
    for ``int``; floats and nulls for ``float | None``. None: check item by item (which also
    says what is wrong)."""
    if item is not float and item is not int and not _is_optional_float(item):
        return None
    kinds = set(map(type, value))
    if item is float:
        if kinds <= {float} and all(map(math.isfinite, value)):
            return list(value)
        return None
    if item is int:
        if kinds <= {int} and (not value or (max(value) <= MAX_INT and min(value) >= -MAX_INT)):
            return list(value)
        return None
    if _is_optional_float(item) and kinds <= {float, type(None)}:
        if all(map(math.isfinite, [v for v in value if v is not None])):
            return list(value)
    return None


def _conform_list(value: Any, hint: Any, max_text: int) -> list[Any]:
    """``value`` checked against ``list[X]``: at once when it holds plain numbers, else item by item."""
    (item,) = typing.get_args(hint) or (Any,)
    if not isinstance(value, list):
        raise Unfit(f"must be a list, got {_describe(value)}")
    if len(value) > MAX_ITEMS:
        raise Unfit("has too many items")
    numbers = _plain_numbers(value, item)
    if numbers is not None:
        return numbers
    return [conform(v, item, max_text) for v in value]


def conform(value: Any, hint: Any, max_text: int = MAX_TEXT) -> Any:
    """``value`` checked against the type ``hint`` (as written in a dataclass).

    Understands None, bool, int, float (an int is accepted), str, str enums,
    ``X | None``, ``list[X]``, ``dict[str, X]``, ``Any`` (bounded JSON) and
    ``dict`` (an object whose entries another schema reads).
    Raises :class:`Unfit` saying why.
    """
    if hint is Any:
        try:
            return bounded_json(value)
        except (ValueError, RecursionError) as exc:
            raise Unfit(str(exc)) from None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        problems = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return conform(value, arg, max_text)
            except Unfit as exc:
                problems.append(str(exc))
        raise Unfit(problems[0] if problems else f"got {_describe(value)}")
    if origin is list:
        return _conform_list(value, hint, max_text)
    if origin is dict:
        key_hint, item = typing.get_args(hint) or (str, Any)
        if not isinstance(value, dict):
            raise Unfit(f"must be an object, got {_describe(value)}")
        if len(value) > MAX_ITEMS:
            raise Unfit("has too many items")
        return {conform(k, key_hint, MAX_NAME): conform(v, item, max_text) for k, v in value.items()}
    if hint is dict:
        if not isinstance(value, dict):
            raise Unfit(f"must be an object, got {_describe(value)}")
        return value
    if hint is type(None):
        if value is not None:
            raise Unfit(f"must be null, got {_describe(value)}")
        return None
    if isinstance(hint, type) and issubclass(hint, Enum):
        if not isinstance(value, str):
            raise Unfit(f"must be text, got {_describe(value)}")
        try:
            return hint.parse(value)  # type: ignore[attr-defined]
        except (AttributeError, ValueError):
            raise Unfit(f"{value[:40]!r} is not one of {', '.join(str(m.value) for m in hint)}") from None
    if hint is bool:
        if not isinstance(value, bool):
            raise Unfit(f"must be true or false, got {_describe(value)}")
        return value
    if hint is int:
        if not isinstance(value, int) or isinstance(value, bool) or abs(value) > MAX_INT:
            raise Unfit(f"must be a whole number, got {_describe(value)}")
        return value
    if hint is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise Unfit(f"must be a number, got {_describe(value)}")
        if isinstance(value, int) and abs(value) > MAX_INT:
            raise Unfit("is too large")
        if not math.isfinite(value):
            raise Unfit("must be a finite number")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise Unfit(f"must be text, got {_describe(value)}")
        if len(value) > max_text:
            raise Unfit(f"is longer than {max_text:,} characters")
        return value
    raise Unfit(f"cannot be read as {hint!r}")  # pragma: no cover - a schema mistake


@dataclass(frozen=True)
class FieldRule:
    """One field of a saved record: its type and what to use when the value does not fit."""

    name: str
    hint: Any
    default: Callable[[], Any]
    max_text: int = MAX_TEXT


@dataclass
class Schema:
    """The typed fields of one kind of record (a dict in a JSON file)."""

    what: str
    rules: dict[str, FieldRule]
    #: keys not in ``rules`` are kept as bounded JSON (True) or dropped (False)
    keep_unknown: bool = False
    #: a value that does not fit is left out (True) or replaced by its default (False)
    drop_unfit: bool = False

    @classmethod
    def of_dataclass(
        cls, what: str, dc: type, skip: tuple[str, ...] = (), max_text: dict[str, int] | None = None
    ) -> Schema:
        """The schema read from a dataclass's annotations and defaults."""
        hints = typing.get_type_hints(dc)
        rules = {}
        for f in fields(dc):
            if f.name in skip or f.name.startswith("_"):
                continue
            if f.default_factory is not MISSING:
                default: Callable[[], Any] = f.default_factory
            else:
                default = _constant(None if f.default is MISSING else f.default)
            rules[f.name] = FieldRule(
                f.name, hints[f.name], default, (max_text or {}).get(f.name, MAX_TEXT)
            )
        return cls(what, rules)

    def read(self, data: Any, problems: list[str]) -> dict[str, Any]:
        """The fields of ``data`` that fit (defaults for the others); appends what did not fit."""
        if not isinstance(data, dict):
            problems.append(f"{self.what} is not an object")
            return {}
        out: dict[str, Any] = {}
        for key, value in data.items():
            rule = self.rules.get(key) if isinstance(key, str) else None
            if rule is None:
                if self.keep_unknown and isinstance(key, str) and len(key) <= MAX_NAME:
                    try:
                        out[key] = bounded_json(value)
                    except (ValueError, RecursionError) as exc:
                        problems.append(f"{self.what}.{key[:40]} {exc}")
                continue
            try:
                out[key] = conform(value, rule.hint, rule.max_text)
            except (Unfit, RecursionError) as exc:
                why = str(exc) if isinstance(exc, Unfit) else "is nested too deeply"
                problems.append(f"{self.what}.{key} {why}")
                if not self.drop_unfit:
                    out[key] = rule.default()
        return out


def _constant(value: Any) -> Callable[[], Any]:
    def make() -> Any:
        return value

    return make


def _rules(what: str, spec: dict[str, Any], keep_unknown: bool = False) -> Schema:
    return Schema(
        what,
        {k: FieldRule(k, h, _constant(None)) for k, h in spec.items()},
        keep_unknown=keep_unknown,
        drop_unfit=True,
    )


#: run.json's top level (config, variants and the stored summary are read on their own)
RUN_DOCUMENT = _rules(
    "run.json",
    {
        "schema_version": int,
        "app_version": str,
        "run_id": str,
        "created": str,
        "status": str,
        "message": str,
        "config": dict,
        "environment": dict,
        "measurement": dict,
        "variants": dict,
    },
)

#: The environment the worker reported: typed where the app reads it, bounded JSON elsewhere.
ENVIRONMENT = _rules(
    "environment",
    {
        **{k: str | None for k in ("torch", "cuda", "rocm", "driver", "device", "cpu", "python", "os",
                                             "triton", "triton_required")},
        "devices": list[str],
        "device_names": dict[str, str],
        "compile_modes": list[str],
        "compile_backends": list[str],
        "device_dtypes": dict[str, list[str]],
        "device_memory": dict[str, int],
    },
    keep_unknown=True,
)

#: How the run measured: free-form, each entry bounded on its own.
MEASUREMENT = _rules("measurement", {}, keep_unknown=True)

#: A variant's correctness checks: ``problems`` is read as a list of texts.
VARIANT_CHECKS = _rules("checks", {"problems": list[str]}, keep_unknown=True)


# -- CSV cells -------------------------------------------------------------

_INT_RE = re.compile(r"[+-]?\d{1," + str(MAX_DIGITS) + "}", re.ASCII)
_FLOAT_RE = re.compile(r"[+-]?(\d{1,40}(\.\d{0,40})?|\.\d{1,40})([eE][+-]?\d{1,3})?", re.ASCII)


def cell_int(text: str, optional: bool = False) -> int | None:
    """A whole number from a CSV cell ('' is None when ``optional``); ValueError otherwise."""
    if text == "" and optional:
        return None
    if not _INT_RE.fullmatch(text):
        raise ValueError(f"{text[:20]!r} is not a whole number")
    value = int(text)
    if abs(value) > MAX_INT:
        raise ValueError("number too large")
    return value


def cell_float(text: str, optional: bool = False) -> float | None:
    """A finite number from a CSV cell ('' is None when ``optional``); ValueError otherwise."""
    if text == "" and optional:
        return None
    if not _FLOAT_RE.fullmatch(text):
        raise ValueError(f"{text[:20]!r} is not a number")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


def timing_ms_ok(value: object) -> bool:
    """Whether ``value`` is a timing a run keeps: a finite number from 0 to MAX_TIMING_MS."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return 0.0 <= value <= MAX_TIMING_MS  # NaN compares false


def cell_name(text: str) -> str:
    """A short name from a CSV cell (a variant); ValueError when empty or too long."""
    if not text or len(text) > MAX_NAME:
        raise ValueError("not a usable name")
    return text
