"""What a sweep sweeps: the parameters, their values and ranges, and each point's configuration.

A :class:`SweepSpec` names one configuration parameter (a field, or a part of
one: a hidden width, one layer, the sequence length) and its values; it makes
each point's configuration from the sweep's base. No Qt, no torch here.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.config import BenchmarkConfig, ConfigError, ConfigProblem, FieldSpec, config_fields
from ..core.model_specs import (
    LayerSpecError,
    factory_signature,
    parse_layer_spec,
    parse_transformer_spec,
)
from ..results.records.sweep_record import MAX_POINTS, PointValue, SweepRecord
from ..results.report.formatting import plural

#: Parameters made from a part of a field: each hidden width of the MLP, one layer's
#: width (``layer:K``, K counted from 0 = the input width), the transformer's sequence length.
HIDDEN_WIDTH = "hidden_width"
SEQ_LEN = "seq_len"
_LAYER = re.compile(r"^layer:(\d{1,3})$")
#: ``arg:NAME``: a keyword parameter of a custom model's factory (its value in factory_args)
_FACTORY_ARG = re.compile(r"^arg:([A-Za-z_][A-Za-z0-9_]{0,63})$")
DERIVED_PARAMS = {
    HIDDEN_WIDTH: "every hidden width of the MLP (model mlp / mlp_ln_residual)",
    "layer:K": "the K-th number of --layers (0 = input width)",
    SEQ_LEN: "the transformer's sequence length",
    "arg:NAME": "a keyword parameter NAME of a custom model's factory (make_model(NAME=…))",
}
#: Fields a sweep does not vary (names, lists, where files come from).
_NOT_SWEPT = {"label", "variants", "backend_modules", "factory", "model_path"}
#: Fields that size a built-in model: a custom model's factory sees them only as keyword
#: parameters it declares.
FACTORY_MODEL_FIELDS = ("batch_size", "layers", "activation", "transformer", "cnn")
#: Most characters of a --values or --range text.
MAX_VALUES_TEXT = 10_000


def swept_fields() -> dict[str, FieldSpec]:
    """The configuration fields a sweep can vary, by name."""
    return {s.name: s for s in config_fields() if s.name not in _NOT_SWEPT and s.kind != "list"}


def sweepable_params() -> list[str]:
    """Every parameter name a sweep accepts (``layer:K`` stands for ``layer:0``, ``layer:1``, …)."""
    return [*DERIVED_PARAMS, *swept_fields()]


def _param_kind(param: str) -> str:
    """int, bool, choice or text: how the values of ``param`` are read."""
    if param in (HIDDEN_WIDTH, SEQ_LEN) or _LAYER.match(param):
        return "int"
    if _FACTORY_ARG.match(param):
        return "arg"
    spec = swept_fields().get(param)
    if spec is None:
        raise ConfigError(
            [
                ConfigProblem(
                    "--param",
                    f"{param[:60]!r} cannot be swept; choose one of "
                    + ", ".join(sweepable_params()),
                )
            ]
        )
    return spec.kind


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def _read_value(param: str, kind: str, text: str) -> PointValue:
    text = text.strip()
    if kind == "arg":
        # a factory argument: a whole number where it is one (a numeric axis), else its text
        return int(text) if re.fullmatch(r"[+-]?\d{1,18}", text) else _read_value(param, "text", text)
    if kind == "int":
        if not re.fullmatch(r"[+]?\d{1,18}", text):
            raise ValueError(f"{text[:30]!r} is not a whole number")
        return int(text)
    if kind == "bool":
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(f"{text[:30]!r} is not true or false")
    if kind == "choice":
        choices = swept_fields()[param].choices
        if text not in choices:
            raise ValueError(f"{text[:30]!r} is not one of {', '.join(choices)}")
    if not text:
        raise ValueError("an empty value")
    return text


def parse_values(param: str, text: str) -> list[PointValue]:
    """The values of ``--values``: comma-separated; ``;``-separated for a field that holds commas
    (``layers``, ``transformer``, ``cnn``)."""
    kind = _param_kind(param)
    if len(text) > MAX_VALUES_TEXT:
        raise ConfigError([ConfigProblem("--values", f"is longer than {MAX_VALUES_TEXT:,} characters")])
    separator = ";" if kind == "text" and (";" in text or param in ("layers", "transformer", "cnn")) else ","
    items = [t for t in text.split(separator) if t.strip()]
    if not items:
        raise ConfigError([ConfigProblem("--values", "give at least one value")])
    values, problems = [], []
    for item in items:
        try:
            values.append(_read_value(param, kind, item))
        except ValueError as exc:
            problems.append(ConfigProblem("--values", str(exc)))
    if problems:
        raise ConfigError(problems)
    return values


_RANGE = re.compile(r"^\s*(\d{1,18})\s*:\s*(\d{1,18})\s*(?::\s*([x*+]?)\s*(\d{1,18}(?:\.\d{1,6})?)\s*)?$")


def parse_range(param: str, text: str) -> list[PointValue]:
    """The values of ``--range START:STOP[:STEP]``: ``1:1024:x2`` doubles from 1 up to 1024,
    ``64:512:+64`` (or ``64:512:64``) adds 64 each time; both ends included when reached."""
    if _param_kind(param) not in ("int", "arg"):
        raise ConfigError([ConfigProblem("--range", f"{param} takes --values, not a range of numbers")])
    m = _RANGE.match(text[:200])
    if not m:
        raise ConfigError(
            [ConfigProblem("--range", f"{text[:40]!r} is not START:STOP[:xFACTOR or :+STEP], e.g. 1:1024:x2")]
        )
    start, stop = int(m.group(1)), int(m.group(2))
    op, step_text = m.group(3) or "+", m.group(4) or "1"
    step = float(step_text)
    if stop < start:
        raise ConfigError([ConfigProblem("--range", f"STOP ({stop}) is below START ({start})")])
    values: list[int] = []
    if op in ("x", "*"):
        if step <= 1 or start < 1:
            raise ConfigError([ConfigProblem("--range", "a factor range needs START ≥ 1 and a factor above 1")])
        v = float(start)
        while round(v) <= stop and len(values) <= MAX_POINTS:
            if not values or round(v) != values[-1]:
                values.append(round(v))
            v *= step
    else:
        if step < 1 or step != int(step):
            raise ConfigError([ConfigProblem("--range", "a step range needs a whole step of at least 1")])
        steps = range(start, stop + 1, int(step))  # counted, never materialised past the cap
        if len(steps) > MAX_POINTS:
            raise ConfigError(
                [ConfigProblem("--range", f"gives {len(steps):,} points; at most {MAX_POINTS:,}")]
            )
        values = list(steps)
    if len(values) > MAX_POINTS:
        raise ConfigError([ConfigProblem("--range", f"gives more than {MAX_POINTS:,} points")])
    return list(values)


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep varies: one parameter and its values, in the order they run."""

    param: str
    values: tuple[PointValue, ...]
    #: how the values were written (for titles): ``1:1024:x2`` or ``1,4,16``
    values_text: str = ""

    @classmethod
    def parse(cls, param: str, values: str | None = None, range_text: str | None = None) -> SweepSpec:
        """From the CLI's or the dialog's text; raises :class:`ConfigError` saying what is wrong."""
        param = (param or "").strip()
        if not param:
            raise ConfigError([ConfigProblem("--param", "name the parameter to sweep")])
        if (values is None) == (range_text is None):
            raise ConfigError([ConfigProblem("--values", "give the values (--values A,B,…) or a --range, one of them")])
        if range_text is not None:
            parsed = parse_range(param, range_text)
            text = range_text.strip()
        else:
            assert values is not None
            parsed = parse_values(param, values)
            text = values.strip()
        return cls(param, tuple(parsed), text[:200])

    def problems(self, base: BenchmarkConfig) -> list[ConfigProblem]:
        """Everything wrong with this sweep from ``base``: every point's configuration checked."""
        out: list[ConfigProblem] = []
        try:
            _param_kind(self.param)
        except ConfigError as exc:
            return list(exc.problems)
        if not self.values:
            return [ConfigProblem("--values", "give at least one value")]
        if len(self.values) > MAX_POINTS:
            out.append(ConfigProblem("--values", f"at most {MAX_POINTS:,} points"))
        seen: set[PointValue] = set()
        for value in self.values:
            key = (type(value).__name__, value)
            if key in seen:  # type: ignore[comparison-overlap]
                out.append(ConfigProblem("--values", f"{value!s:.30} is listed twice"))
                continue
            seen.add(key)  # type: ignore[arg-type]
        swept = self.field()
        refused = self.factory_problem(base)
        if refused is not None:
            out.append(refused)
        base_problems = [p for p in base.problems() if p.field != swept]
        out.extend(base_problems)
        known = {str(p) for p in base_problems}
        for value in self.values:
            try:
                config = self.point_config(base, value)
            except ConfigError as exc:
                out.extend(ConfigProblem(p.field, f"{self.param}={value!s:.30}: {p.message}") for p in exc.problems)
                continue
            for problem in config.problems():
                if str(problem) not in known:
                    out.append(ConfigProblem(problem.field, f"{self.param}={value!s:.30}: {problem.message}"))
        return out

    def factory_problem(self, base: BenchmarkConfig) -> ConfigProblem | None:
        """Why a custom model cannot be swept over this parameter; None when it can.

        A factory makes its own model and inputs: the built-in models' sizes
        (batch, layers, activation, transformer, CNN) reach it only through a
        keyword parameter of the same name (``def make_model(batch_size=8)``),
        read from the file's source without running it.
        """
        arg = _FACTORY_ARG.match(self.param)
        if arg is not None:
            return self._factory_arg_problem(base, arg.group(1))
        if base.model != "custom" or self.field() not in FACTORY_MODEL_FIELDS:
            return None
        sig = factory_signature(base.factory, base.model_path)
        if self.param != self.field():
            what = DERIVED_PARAMS.get(self.param, "a part of --layers")
            if not isinstance(sig, str) and sig.takes(self.param):
                return ConfigProblem(
                    "--param",
                    f"{self.param} is {what}, a size of a built-in model; to sweep your factory's own "
                    f"{self.param} parameter: --param arg:{self.param}",
                )
            own = ""
            return ConfigProblem(
                "--param",
                f"{self.param} is {what}, a size of a built-in model; a custom model's factory makes "
                f"its own model and gets only the configuration fields it names as parameters "
                f"(batch_size, seed, dtype, …){own}: sweep one of those the factory takes "
                f"(--param batch_size with def {sig.function if not isinstance(sig, str) else 'make_model'}"
                f"(batch_size=…)), or write one factory function per {self.param}",
            )
        if isinstance(sig, str):
            return ConfigProblem(
                "--param", f"cannot tell whether the factory takes {self.param}: {sig}"
            )
        if not sig.takes(self.param):
            return ConfigProblem(
                "--param",
                f"the factory {sig.function}() does not take {self.param}, so every point would "
                f"run the same model; give it a keyword parameter named {self.param} "
                f"(def {sig.function}({self.param}=…)) to sweep it",
            )
        return None

    def _factory_arg_problem(self, base: BenchmarkConfig, name: str) -> ConfigProblem | None:
        if base.model != "custom":
            return ConfigProblem("--param", f"{self.param}: a factory argument needs a custom model (--factory)")
        sig = factory_signature(base.factory, base.model_path)
        if isinstance(sig, str):
            return ConfigProblem("--param", f"cannot tell whether the factory takes {name}: {sig}")
        if not sig.takes(name) and not sig.var_keyword:
            return ConfigProblem(
                "--param",
                f"the factory {sig.function}() does not take {name}, so every point would run the "
                f"same model; give it a keyword parameter named {name} (def {sig.function}({name}=…))",
            )
        return None

    def field(self) -> str:
        """The configuration field the parameter changes (``layers`` for ``hidden_width``)."""
        if _FACTORY_ARG.match(self.param):
            return "factory_args"
        if self.param == HIDDEN_WIDTH or _LAYER.match(self.param):
            return "layers"
        if self.param == SEQ_LEN:
            return "transformer"
        return self.param

    def point_config(self, base: BenchmarkConfig, value: PointValue) -> BenchmarkConfig:
        """``base`` with the parameter set to ``value``, labelled ``param=value``."""
        label = f"{base.label.strip()} · " if base.label.strip() else ""
        label += f"{self.param}={value}"
        changes: dict[str, object] = {"label": label[:200]}
        if self.param in (HIDDEN_WIDTH,) or _LAYER.match(self.param):
            changes["layers"] = _replace_layers(base, self.param, value)
        elif self.param == SEQ_LEN:
            changes["transformer"] = _replace_seq_len(base, value)
        elif (arg := _FACTORY_ARG.match(self.param)) is not None:
            name = arg.group(1)
            kept = [a for a in base.factory_args if a.partition("=")[0].strip() != name]
            changes["factory_args"] = [*kept, f"{name}={value}"]
        else:
            changes[self.param] = value
        return dataclasses.replace(base, **changes)  # type: ignore[arg-type]

    def validate(self, base: BenchmarkConfig) -> SweepSpec:
        problems = self.problems(base)
        if problems:
            raise ConfigError(problems)
        return self

    def numeric(self) -> bool:
        return all(isinstance(v, int) and not isinstance(v, bool) for v in self.values)


def _replace_layers(base: BenchmarkConfig, param: str, value: PointValue) -> str:
    try:
        sizes = parse_layer_spec(base.layers)
    except LayerSpecError as exc:
        raise ConfigError([ConfigProblem("layers", str(exc))]) from None
    m = _LAYER.match(param)
    if m:
        k = int(m.group(1))
        if k >= len(sizes):
            raise ConfigError(
                [ConfigProblem("--param", f"{param}: --layers {base.layers} has {len(sizes)} numbers (0–{len(sizes) - 1})")]
            )
        sizes[k] = int(value)
    else:
        hidden = range(1, len(sizes)) if base.model == "mlp_ln_residual" else range(1, len(sizes) - 1)
        if not hidden:
            raise ConfigError(
                [ConfigProblem("--param", f"{HIDDEN_WIDTH}: --layers {base.layers} has no hidden layer")]
            )
        for k in hidden:
            sizes[k] = int(value)
    return ",".join(str(s) for s in sizes)


def _replace_seq_len(base: BenchmarkConfig, value: PointValue) -> str:
    try:
        sizes = list(parse_transformer_spec(base.transformer))
    except LayerSpecError as exc:
        raise ConfigError([ConfigProblem("transformer", str(exc))]) from None
    sizes[3] = int(value)
    return ",".join(str(s) for s in sizes)


def x_positions(values: Sequence[PointValue]) -> tuple[list[float], bool]:
    """Where each value sits on a plot's x axis, and whether the axis is logarithmic.

    Whole numbers spanning a factor of 8 or more: log10 of the value (log x);
    other whole numbers: the value; anything else (dtypes, true/false): 0, 1, 2, …
    """
    numbers = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    if values and len(numbers) == len(values):
        if min(numbers) >= 1 and max(numbers) >= 8 * min(numbers):
            return [math.log10(v) for v in numbers], True
        return [float(v) for v in numbers], False
    return [float(k) for k in range(len(values))], False


def value_text(value: PointValue) -> str:
    """A point's value as the tables show it (``true``/``false`` for a flag)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def describe_points(record: SweepRecord) -> str:
    """``5 points: 3 complete, 1 failed, 1 pending``."""
    counts = record.counts()
    parts = [f"{n} {status}" for status, n in counts.items() if n]
    return f"{plural(len(record.points), 'point')}: " + ", ".join(parts)


