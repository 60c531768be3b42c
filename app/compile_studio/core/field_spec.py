"""The configuration's field machinery: :func:`setting` declares a field once, :class:`FieldSpec` reads it back.

From one declaration the generic checks, the command-line flags and the
form's widgets are made; :class:`ConfigProblem` is one thing wrong, in words
a user understands. Pure Python (no torch, no Qt).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Field kinds, read from the default value: the generic checks and widgets per kind.
KINDS = ("bool", "int", "text", "choice", "list")


class ConfigError(ValueError):
    """A configuration with one or more problems, each naming its field."""

    def __init__(self, problems: list[ConfigProblem]):
        self.problems = list(problems)
        super().__init__("; ".join(str(p) for p in self.problems))


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with a configuration, in words a user understands."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(frozen=True)
class FieldSpec:
    """One configuration field as the checks, the CLI and the form see it.

    ``kind`` (one of :data:`KINDS`) follows from the default. ``minimum`` and
    ``maximum`` bound an int; a text value must be one of ``choices`` or match
    ``pattern`` (``invalid`` is the message otherwise). ``unit`` and
    ``placeholder`` show in the form, ``caption`` beside a check box; ``widget``
    names a special form widget (``""``: the generic one for the kind).
    ``check`` checks the value alone, returning a message or None.
    """

    name: str
    kind: str
    default: Any
    label: str
    help: str = ""
    unit: str = ""
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    invalid: str = ""
    placeholder: str = ""
    caption: str = ""
    widget: str = ""
    check: Callable[[Any], str | None] | None = None
    metavar: str = ""
    #: a choice field whose flag may stand alone: the value ``--flag`` means (``--no-flag``: the default)
    bare: str = ""
    #: (value, words) pairs: how the form shows a choice whose value is not words itself
    choice_labels: tuple[tuple[str, str], ...] = ()
    #: the model kinds (values of the ``model`` field) this field applies to; empty: every kind
    model_kinds: tuple[str, ...] = ()

    def choice_label(self, value: str) -> str:
        """How the form shows the choice ``value``: its label, or the value itself."""
        return dict(self.choice_labels).get(value, value)

    @property
    def flag(self) -> str:
        """The command-line flag: ``--batch-size`` for ``batch_size``."""
        return "--" + self.name.replace("_", "-")

    def type_problem(self, value: object) -> str | None:
        """Why ``value`` has the wrong type for this field, or None."""
        if self.kind == "bool":
            ok = isinstance(value, bool)
        elif self.kind == "int":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif self.kind == "list":
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        else:
            ok = isinstance(value, str)
        return None if ok else f"must be {_KIND_WORDS.get(self.kind, 'text')}, got {value!r:.40}"

    def problem(self, value: object) -> str | None:
        """What is wrong with ``value`` by this field's metadata, or None."""
        wrong_type = self.type_problem(value)
        if wrong_type:
            return wrong_type
        if isinstance(value, int):
            if self.minimum is not None and value < self.minimum:
                return "cannot be negative" if self.minimum == 0 else f"must be at least {self.minimum:,}"
            if self.maximum is not None and value > self.maximum:
                return f"must be at most {self.maximum:,}"
        if isinstance(value, str):
            if self.choices and value not in self.choices:
                return self.invalid or f"must be one of {', '.join(self.choices)}"
            if self.pattern is not None and not re.fullmatch(self.pattern, value):
                return self.invalid or f"does not match {self.pattern}"
        return self.check(value) if self.check is not None else None


_METADATA_KEYS = tuple(f.name for f in dataclasses.fields(FieldSpec))[3:]


def setting(default: Any, **metadata: Any) -> Any:
    """A dataclass field: ``default`` plus metadata named as :class:`FieldSpec`'s attributes.

    E.g. ``setting(256, label="Batch", unit="samples", minimum=1, maximum=4096)``.
    A list default is copied for every instance.
    """
    unknown = sorted(set(metadata) - set(_METADATA_KEYS))
    if unknown:
        raise TypeError(f"setting() knows no metadata {', '.join(unknown)}")
    for key in ("choices", "model_kinds"):
        if key in metadata:
            metadata[key] = tuple(metadata[key])
    if isinstance(metadata.get("choice_labels"), dict):
        metadata["choice_labels"] = tuple(metadata["choice_labels"].items())
    if isinstance(default, list):
        items = list(default)
        return field(default_factory=lambda: list(items), metadata=metadata)
    return field(default=default, metadata=metadata)


_SPECS: dict[type, tuple[FieldSpec, ...]] = {}


def _fields_of(cls: type) -> tuple[FieldSpec, ...]:
    if cls in _SPECS:
        return _SPECS[cls]
    specs = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            raise TypeError(f"{cls.__name__}.{f.name} needs a default")
        meta = {k: f.metadata[k] for k in _METADATA_KEYS if k in f.metadata}
        if meta.get("label") is None:
            meta["label"] = f.name.replace("_", " ").capitalize()
        specs.append(FieldSpec(name=f.name, kind=_kind_of(default, meta), default=default, **meta))
    _SPECS[cls] = tuple(specs)
    return _SPECS[cls]


def _kind_of(default: object, meta: dict[str, Any]) -> str:
    for kind, types in (("bool", bool), ("int", int), ("list", list), ("text", str)):
        if isinstance(default, types):
            return "choice" if kind == "text" and meta.get("choices") else kind
    raise TypeError(f"configuration fields are bool, int, str or list of str, not {default!r:.40}")


_KIND_WORDS = {"bool": "true or false", "int": "a whole number", "list": "a list of names"}
