"""Command-line flags for every configuration field, made from the fields' metadata.

``--batch-size N`` for an int, ``--interleave/--no-interleave`` for a bool,
``--variants A,B`` for a list, ``--dtype {fp32,...}`` for a field with choices.
Flags left out stay ``None`` so :func:`config_from_args` can tell them from
values given.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..core.config import BenchmarkConfig, ConfigError, ConfigProblem, FieldSpec, config_fields


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
            # the old spelling of ``--dynamic auto`` (``dynamic`` was a flag once): kept, with
            # help and a warning that say what it does, since it reads like ``--dynamic false``
            old = "--no-" + spec.flag[2:]
            parser.add_argument(
                old,
                dest=spec.name,
                action=_OldSpelling,
                nargs=0,
                const=spec.default,
                contrary=f"{spec.flag} false" if "false" in spec.choices else "",
                help=f"old spelling of {spec.flag} {spec.default}, kept for scripts: it does not "
                f"turn {spec.name} off"
                + (f" (that is {spec.flag} false)" if "false" in spec.choices else ""),
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


class _OldSpelling(argparse.Action):
    """A flag kept for old scripts (``--no-dynamic``): stores ``const`` and says, on stderr, what
    it means; ``contrary`` is what it may be mistaken for (``--dynamic false``)."""

    def __init__(self, *args: Any, contrary: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.contrary = contrary

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
        values: Any, option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, self.const)
        flag = "--" + self.dest.replace("_", "-")
        text = f"note: {option_string} means {flag} {self.const}"
        if self.contrary:
            text += f", not {self.contrary} (write {self.contrary} for that)"
        sys.stderr.write(text + "\n")


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
    config = config_cls.from_dict(data)
    given = {s.name for s in config_fields(config_cls) if getattr(args, s.name, None) is not None}
    problems = flags_that_do_not_apply(config, given)
    if problems:
        raise ConfigError(problems)
    return config


#: Fields that shape one kind of built-in model, and the kinds they apply to.
_MODEL_FIELDS = {
    "layers": ("mlp", "mlp_ln_residual"),
    "activation": ("mlp", "mlp_ln_residual"),
    "transformer": ("transformer",),
    "cnn": ("cnn",),
}


def flags_that_do_not_apply(config: BenchmarkConfig, given: set[str]) -> list[ConfigProblem]:
    """A problem for each field in ``given`` (flags the user typed) that this config would ignore.

    No flag is silently ignored: ``--transformer`` without ``--model transformer``,
    ``--factory`` with another model, ``--model-path`` without a ``package.module``
    factory, or a size (``--batch-size``, ``--layers``, …) a custom factory does not take.
    """
    from ..core.model_specs import factory_file, factory_signature

    problems: list[ConfigProblem] = []
    custom = config.model == "custom"
    signature = factory_signature(config.factory, config.model_path) if custom and config.factory else None
    readable = signature is not None and not isinstance(signature, str)

    def factory_takes(name: str) -> bool:
        return readable and signature.takes(name)  # type: ignore[union-attr]

    if "factory" in given and not custom:
        problems.append(ConfigProblem("--factory", f"applies only with --model custom (not {config.model})"))
    if "model_path" in given and (not custom or factory_file(config.factory) is not None):
        problems.append(ConfigProblem(
            "--model-path", "applies only to --model custom with a package.module:FUNC factory"
        ))
    for name, kinds in _MODEL_FIELDS.items():
        if name not in given or config.model in kinds:
            continue
        flag = "--" + name.replace("_", "-")
        if custom:
            if readable and not factory_takes(name):
                problems.append(ConfigProblem(flag, f"the factory {config.factory} takes no {name} parameter"))
        else:
            need = " or ".join(f"--model {k}" for k in kinds)
            problems.append(ConfigProblem(flag, f"applies only with {need} (not {config.model})"))
    if "batch_size" in given and custom and readable and not factory_takes("batch_size"):
        problems.append(ConfigProblem(
            "--batch-size", f"the factory {config.factory} takes no batch_size parameter: its inputs set the batch"
        ))
    return problems


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
