"""Command-line flags for every configuration field, made from the fields' metadata.

``--batch-size N`` for an int, ``--interleave/--no-interleave`` for a bool,
``--variants A,B`` for a list, ``--dtype {fp32,...}`` for a field with choices.
Flags left out stay ``None`` so :func:`config_from_args` can tell them from
values given.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .config import BenchmarkConfig, ConfigError, ConfigProblem, FieldSpec, config_fields


def add_config_flags(
    parser: argparse.ArgumentParser, config_cls: type[BenchmarkConfig] = BenchmarkConfig
) -> None:
    """Add one flag per field of ``config_cls`` to ``parser``."""
    for spec in config_fields(config_cls):
        help_text = _help(spec)
        if spec.kind == "bool":
            parser.add_argument(
                spec.flag,
                dest=spec.name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=help_text,
            )
        elif spec.kind == "int":
            parser.add_argument(
                spec.flag,
                dest=spec.name,
                type=int,
                default=None,
                metavar=spec.metavar or "N",
                help=help_text,
            )
        elif spec.kind == "list":
            parser.add_argument(
                spec.flag, dest=spec.name, default=None, metavar=spec.metavar or "A,B", help=help_text
            )
        elif spec.bare:
            # a choice whose flag may stand alone (``--dynamic`` = ``--dynamic true``)
            parser.add_argument(
                spec.flag,
                dest=spec.name,
                nargs="?",
                const=spec.bare,
                default=None,
                choices=spec.choices or None,
                help=f"{help_text} ({spec.flag} alone: {spec.bare})",
            )
            parser.add_argument(
                "--no-" + spec.flag[2:],
                dest=spec.name,
                action="store_const",
                const=spec.default,
                help=f"the same as {spec.flag} {spec.default}",
            )
        else:
            parser.add_argument(
                spec.flag,
                dest=spec.name,
                default=None,
                choices=spec.choices or None,
                metavar=spec.metavar or None,
                help=help_text,
            )


def config_from_args(
    args: argparse.Namespace, config_cls: type[BenchmarkConfig] = BenchmarkConfig
) -> BenchmarkConfig:
    """The config: ``--config`` file (if any) overridden by each flag given.

    The file is a config JSON object, or a run's ``run.json`` whose ``config``
    object is reused. ``--factory`` without ``--model`` means ``--model custom``.
    """
    data: dict[str, Any] = {}
    path = getattr(args, "config", None)
    if path is not None:
        data.update(_read_config_file(path))
    for spec in config_fields(config_cls):
        value = getattr(args, spec.name, None)
        if value is None:
            continue
        if spec.kind == "list":
            value = [v.strip() for v in value.split(",") if v.strip()]
        data[spec.name] = value
    if getattr(args, "factory", None) and getattr(args, "model", None) is None:
        # --factory alone names a custom model
        data["model"] = "custom"
    return config_cls.from_dict(data)


#: Largest --config file read (a run.json with its config qualifies).
MAX_CONFIG_FILE_CHARS = 32 * 1024 * 1024


def _read_config_file(path: Any) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(MAX_CONFIG_FILE_CHARS + 1)
    except OSError as exc:
        raise ConfigError(
            [ConfigProblem("--config", f"cannot read {path}: {exc.strerror}")]
        ) from None
    except UnicodeDecodeError:
        raise ConfigError([ConfigProblem("--config", f"{path} is not UTF-8 text")]) from None
    if len(text) > MAX_CONFIG_FILE_CHARS:
        raise ConfigError([ConfigProblem("--config", f"{path} is too large for a configuration")])
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            [ConfigProblem("--config", f"{path} is not valid JSON (line {exc.lineno}: {exc.msg})")]
        ) from None
    except RecursionError:
        raise ConfigError([ConfigProblem("--config", f"{path} is nested too deeply")]) from None
    except ValueError as exc:  # e.g. a number with thousands of digits
        raise ConfigError(
            [ConfigProblem("--config", f"{path} cannot be read: {str(exc)[:80]}")]
        ) from None
    if isinstance(loaded, dict) and isinstance(loaded.get("config"), dict):
        loaded = loaded["config"]
    if not isinstance(loaded, dict):
        raise ConfigError([ConfigProblem("--config", f"{path} must hold a JSON object")])
    return loaded


def _help(spec: FieldSpec) -> str:
    """The field's help with its unit, bounds and default, escaped for argparse."""
    notes = []
    if spec.unit:
        notes.append(spec.unit)
    if spec.minimum is not None and spec.maximum is not None:
        notes.append(f"{spec.minimum:,}–{spec.maximum:,}")
    elif spec.minimum is not None:
        notes.append(f"at least {spec.minimum:,}")
    elif spec.maximum is not None:
        notes.append(f"at most {spec.maximum:,}")
    default = ",".join(spec.default) if spec.kind == "list" else spec.default
    if spec.kind != "bool" and default not in ("", None):
        notes.append(f"default {default}")
    text = spec.help + (f" ({'; '.join(notes)})" if notes else "")
    return text.replace("%", "%%")
