"""Model size specs typed as text: the MLP's layers, the transformer's and the CNN's sizes.

Pure Python: the form checks them as the user types, the worker builds models
from them. Each parser raises :class:`LayerSpecError` (and nothing else) for
text it cannot read, with a message that says why.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: Widest layer accepted. 65 536 x 65 536 weights are already 16 GiB in fp32.
MAX_LAYER_WIDTH = 65_536
MAX_LAYERS = 64
#: Longest layer-size text read (65 widths of 6 digits with separators fit easily).
MAX_LAYER_SPEC_CHARS = 1_000


class LayerSpecError(ValueError):
    """The layer-size text could not be read; the message says why."""


def parse_layer_spec(text: object) -> list[int]:
    """Read ``"1024,1024,512,10"`` into ``[1024, 1024, 512, 10]``.

    The first number is the input width, each further number the output width
    of one Linear layer. Commas, spaces or ``x`` separate numbers. Raises
    :class:`LayerSpecError` (and nothing else) for any text that is not such a
    list.
    """
    if not isinstance(text, str):
        if isinstance(text, (list, tuple)) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in text
        ):
            text = ",".join(str(v) for v in text)
        else:
            raise LayerSpecError("layer sizes must be text such as 1024,1024,512,10")
    if len(text) > MAX_LAYER_SPEC_CHARS:
        raise LayerSpecError(
            f"layer sizes are {len(text):,} characters long; at most {MAX_LAYER_SPEC_CHARS:,}"
        )
    stripped = text.strip()
    if not stripped:
        raise LayerSpecError("layer sizes are empty; enter widths such as 1024,1024,512,10")
    parts = [p for p in re.split(r"[\s,x×]+", stripped) if p]
    if not parts:
        raise LayerSpecError("layer sizes are empty; enter widths such as 1024,1024,512,10")
    sizes: list[int] = []
    for part in parts:
        if not re.fullmatch(r"[+-]?\d+", part, flags=re.ASCII):
            raise LayerSpecError(f"'{part[:20]}' is not a whole number")
        if len(part.lstrip("+-").lstrip("0")) > 18:
            raise LayerSpecError(
                f"'{part[:12]}…' ({len(part)} digits) is beyond the width limit of {MAX_LAYER_WIDTH:,}"
            )
        value = int(part)
        if value <= 0:
            raise LayerSpecError(f"every width must be at least 1 (got {value})")
        if value > MAX_LAYER_WIDTH:
            raise LayerSpecError(
                f"width {value} is beyond the limit of {MAX_LAYER_WIDTH:,}"
            )
        sizes.append(value)
    if len(sizes) < 2:
        raise LayerSpecError(
            "give the input width and at least one layer width, e.g. 1024,10"
        )
    if len(sizes) - 1 > MAX_LAYERS:
        raise LayerSpecError(f"at most {MAX_LAYERS} layers (got {len(sizes) - 1})")
    return sizes


MODEL_KINDS = ("mlp", "mlp_ln_residual", "transformer", "cnn", "custom")
DEFAULT_TRANSFORMER = "256,4,1024,128,2"
DEFAULT_CNN = "32,3,16,32,64"
MAX_SEQUENCE = 65_536
MAX_IMAGE = 4_096


def _whole_numbers(text: object, what: str, count: int | None = None) -> list[int]:
    if not isinstance(text, str) or not text.strip():
        raise LayerSpecError(f"{what} must be text such as {count and 'five numbers' or 'numbers'}")
    parts = [p for p in re.split(r"[\s,x×]+", text.strip()) if p]
    values = []
    for part in parts:
        if len(part) > 9 or not re.fullmatch(r"\d+", part, flags=re.ASCII):
            raise LayerSpecError(f"'{part[:20]}' is not a whole number of at most 9 digits")
        values.append(int(part))
    if count is not None and len(values) != count:
        raise LayerSpecError(f"{what} needs {count} numbers (got {len(values)})")
    if any(v < 1 for v in values):
        raise LayerSpecError(f"every number in {what} must be at least 1")
    return values


def parse_transformer_spec(text: object) -> tuple[int, int, int, int, int]:
    """``"d_model,heads,ffn,seq,layers"`` → its five numbers, checked."""
    d, heads, ffn, seq, layers = _whole_numbers(text, "the transformer", 5)
    if d % heads:
        raise LayerSpecError(f"d_model {d} must be a multiple of the {heads} heads")
    if max(d, ffn) > MAX_LAYER_WIDTH or seq > MAX_SEQUENCE or layers > MAX_LAYERS:
        raise LayerSpecError(
            f"at most width {MAX_LAYER_WIDTH:,}, sequence {MAX_SEQUENCE:,}, {MAX_LAYERS} layers"
        )
    return d, heads, ffn, seq, layers


def parse_cnn_spec(text: object) -> tuple[int, int, list[int]]:
    """``"image,kernel,c1,c2,…"`` → (image size, kernel size, channels per stage), checked."""
    values = _whole_numbers(text, "the CNN")
    if len(values) < 3:
        raise LayerSpecError("give the image size, the kernel size and at least one stage's channels")
    image, kernel, channels = values[0], values[1], values[2:]
    if image > MAX_IMAGE or kernel > 31 or max(channels) > 8_192 or len(channels) > 16:
        raise LayerSpecError(f"at most image {MAX_IMAGE:,}, kernel 31, 8,192 channels, 16 stages")
    return image, kernel, channels


def _spec_problem(parse: Callable[[object], object]) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        try:
            parse(value)
        except LayerSpecError as exc:
            return str(exc)
        return None

    return check


def factory_file(spec: str) -> Path | None:
    """The Python file a factory spec names (``path/to/file.py:make``); None for a module."""
    target = spec.rsplit(":", 1)[0]
    return Path(target).expanduser() if target.endswith(".py") else None


def _factory_problem(value: str) -> str | None:
    if value and ":" not in value:
        return "name the file or module and the function: path/to/model.py:make_model"
    return None


@dataclass(frozen=True)
class FactorySignature:
    """The keyword parameters a factory function declares, read from its source.

    Read with :mod:`ast` (nothing of the file runs): the named parameters of the
    module-level ``def`` the spec names. The worker passes a configuration
    field's value to a parameter of the same name (``make_model(batch_size=…)``).
    """

    function: str
    #: explicitly named parameters (positional-or-keyword and keyword-only)
    names: tuple[str, ...]
    #: the function also takes ``**kwargs`` (which the worker never fills)
    var_keyword: bool

    def takes(self, name: str) -> bool:
        return name in self.names


#: Largest factory file read for its signature.
MAX_FACTORY_SOURCE = 4 * 1024 * 1024


def _module_file(target: str, model_path: str) -> Path | None:
    parts = target.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    roots = [Path(model_path).expanduser()] if model_path else []
    roots.append(Path.cwd())
    for root in roots:
        base = root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def factory_signature(spec: str, model_path: str = "") -> FactorySignature | str:
    """The factory's declared parameters, or why they cannot be read (a sentence).

    Never imports or runs the file: it is parsed, and the module-level function
    the spec names is looked up by name.
    """
    import ast

    target, _, name = spec.rpartition(":")
    if not target or not name:
        return f"'{spec[:80]}' is not FILE.py:FUNCTION or package.module:FUNCTION"
    path = factory_file(spec) or _module_file(target, model_path)
    if path is None:
        return f"the module {target[:80]} was not found as a file (with --model-path or here)"
    try:
        if not path.is_file():
            return f"{path} is not a file"
        if path.stat().st_size > MAX_FACTORY_SOURCE:
            return f"{path} is larger than {MAX_FACTORY_SOURCE // (1024 * 1024)} MiB"
        source = path.read_bytes()
        tree = ast.parse(source, filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        return f"{path} cannot be read: {type(exc).__name__}: {str(exc)[:120]}"
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node  # the last definition wins, as at import
    if found is None:
        return f"{path.name} defines no function {name[:60]} at module level"
    a = found.args
    names = tuple(p.arg for p in (*a.args, *a.kwonlyargs))
    return FactorySignature(name, names, a.kwarg is not None)
