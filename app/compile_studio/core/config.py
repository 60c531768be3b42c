"""Benchmark configuration: the one object every layer passes around.

Pure Python (no torch, no Qt), so the GUI process can validate a
configuration as the user types. Checks that need to know the machine (which
devices exist, which compile modes the installed torch offers, how much memory
a device has) take an :class:`EnvironmentInfo` built from the worker's
``hello`` event.

Each field is declared once, with :func:`setting`: its default and the
metadata (label, help, unit, bounds, choices) from which the generic checks,
the command-line flags and the form's widgets are made. :func:`config_fields`
reads it back as :class:`FieldSpec` objects.

Every field's declaration and the checks that span fields stay side by side,
so a field is added in one place; the machinery that reads a declaration is
in :mod:`field_spec`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .field_spec import KINDS as KINDS
from .field_spec import ConfigError as ConfigError
from .field_spec import ConfigProblem as ConfigProblem
from .field_spec import FieldSpec as FieldSpec
from .field_spec import _fields_of, setting
from .model_specs import (
    DEFAULT_CNN,
    DEFAULT_TRANSFORMER,
    MODEL_KINDS,
    _factory_problem,
    _spec_problem,
    parse_cnn_spec,
    parse_transformer_spec,
)
from .model_specs import MAX_LAYER_SPEC_CHARS as MAX_LAYER_SPEC_CHARS
from .model_specs import MAX_LAYER_WIDTH as MAX_LAYER_WIDTH
from .model_specs import MAX_LAYERS as MAX_LAYERS
from .model_specs import LayerSpecError as LayerSpecError
from .model_specs import parse_layer_spec as parse_layer_spec
from .variants import CUDAGRAPH_MIN_WARMUP, EAGER_VARIANTS, compiled_variants, records_cudagraphs

DTYPES = ("fp32", "tf32", "bf16", "fp16")
#: The dtype choice that converts nothing: a custom model and its inputs run as the factory made them.
AS_GIVEN = "as_given"
#: Every value of the ``dtype`` field: a conversion (:data:`DTYPES`) or none.
DTYPE_CHOICES = (*DTYPES, AS_GIVEN)
WORKLOADS = ("inference", "training")
ACTIVATIONS = ("gelu", "relu", "silu", "tanh", "none")
TIMERS = ("auto", "host", "cuda_events")
CACHE_MODES = ("warm", "cold")
COMPILE_SCOPES = ("model", "step")
COMPILE_TIMINGS = ("isolated", "in_run")
#: torch.compile's ``dynamic``: auto passes nothing (torch's automatic mode: static first,
#: dynamic after a shape changes), false and true pass ``dynamic=False`` / ``dynamic=True``.
DYNAMIC_MODES = ("auto", "false", "true")

#: Longest configuration text read (a config file, the worker's stdin line).
MAX_CONFIG_CHARS = 1_000_000
MAX_BATCH = 1_048_576
MAX_ITERATIONS = 1_000_000
MAX_WARMUP = 100_000
MAX_ROUNDS = 1_000
MAX_WARMUP_MS = 600_000
MAX_SEED = 2**31 - 1

BYTES_PER_ELEMENT = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}

DEFAULT_LAYERS = "1024,1024,512,10"

_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda)(?::(\d+))?$")


@dataclass(frozen=True)
class EnvironmentInfo:
    """What the worker reported about the machine (from its ``hello`` event)."""

    devices: tuple[str, ...] = ("cpu",)
    compile_modes: tuple[str, ...] = ()
    compile_backends: tuple[str, ...] = ()
    #: device name -> dtypes it can run
    device_dtypes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: device name -> bytes of memory available for the benchmark
    device_memory: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_hello(cls, hello: dict[str, Any]) -> EnvironmentInfo:
        env = hello.get("environment", hello)
        return cls(
            devices=tuple(env.get("devices", ("cpu",))),
            compile_modes=tuple(env.get("compile_modes", ())),
            compile_backends=tuple(env.get("compile_backends", ())),
            device_dtypes={k: tuple(v) for k, v in env.get("device_dtypes", {}).items()},
            device_memory={k: int(v) for k, v in env.get("device_memory", {}).items()},
        )

    def resolve_device(self, device: str) -> str:
        if device == "auto":
            for d in self.devices:
                if d.startswith("cuda"):
                    return "cuda:0" if d == "cuda" else d
            return "mps" if "mps" in self.devices else "cpu"
        if device == "cuda":
            return "cuda:0"
        return device


def _layers_problem(value: str) -> str | None:
    try:
        parse_layer_spec(value)
    except LayerSpecError as exc:
        return str(exc)
    return None


def _variants_problem(value: list[str]) -> str | None:
    if not value:
        return "choose at least one variant"
    if len(set(value)) != len(value):
        return "lists a variant twice"
    if any(v != "eager" for v in value) and "eager" not in value:
        return "include eager: speedup is measured against it"
    return None


#: The ``torch._dynamo.config`` flags a run may set (``dynamo_config``), each a bool.
DYNAMO_FLAGS = (
    "allow_rnn",
    "allow_unspec_int_on_nn_module",
    "capture_scalar_outputs",
    "capture_dynamic_output_shape_ops",
)


def parse_dynamo_config(items: list[str]) -> dict[str, bool]:
    """``["allow_rnn=true"]`` → ``{"allow_rnn": True}``; ValueError naming what is wrong."""
    out: dict[str, bool] = {}
    for item in items:
        name, sep, value = (part.strip() for part in item.partition("="))
        if name not in DYNAMO_FLAGS:
            raise ValueError(
                f"{name or item!r} is not a Dynamo flag this app sets (one of {', '.join(DYNAMO_FLAGS)})"
            )
        if value.lower() not in ("true", "false") or not sep:
            raise ValueError(f"{name} needs =true or =false")
        if name in out:
            raise ValueError(f"{name} is given twice")
        out[name] = value.lower() == "true"
    return out


def parse_factory_args(items: list[str]) -> dict[str, int | float | bool | str]:
    """``["seq_len=64"]`` → ``{"seq_len": 64}`` (whole numbers, decimals, true/false, else text).

    ValueError naming what is wrong: not NAME=VALUE, a name given twice, or a configuration
    field's name (those are set by their own flag).
    """
    fields = {s.name for s in config_fields()}
    out: dict[str, int | float | bool | str] = {}
    for item in items:
        name, sep, text = (part.strip() for part in item.partition("="))
        if not sep or not name.isidentifier() or not text:
            raise ValueError(f"{item[:40]!r} is not NAME=VALUE")
        if name in fields:
            raise ValueError(f"{name} is a configuration field: set it with --{name.replace('_', '-')}")
        if name in out:
            raise ValueError(f"{name} is given twice")
        value: int | float | bool | str = text
        if re.fullmatch(r"[+-]?\d{1,18}", text):
            value = int(text)
        elif re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+)([eE][+-]?\d+)?", text):
            value = float(text)
        elif text.lower() in ("true", "false"):
            value = text.lower() == "true"
        out[name] = value
    return out


def _factory_args_problem(value: list[str]) -> str | None:
    try:
        parse_factory_args(value)
    except ValueError as exc:
        return str(exc)
    return None


def _dynamo_config_problem(value: list[str]) -> str | None:
    try:
        parse_dynamo_config(value)
    except ValueError as exc:
        return str(exc)
    return None


@dataclass
class BenchmarkConfig:
    """Everything that defines one benchmark run (an MLP, how to run and time it)."""

    layers: str = setting(
        DEFAULT_LAYERS, label="Layer sizes", check=_layers_problem, metavar="W,W,...",
        model_kinds=("mlp", "mlp_ln_residual"),
        help="the MLP: the input width, then the output width of each Linear layer",
        placeholder="input width, then each layer's width: 1024,1024,512,10",
    )
    activation: str = setting(
        "gelu", label="Activation", choices=ACTIVATIONS, help="activation after each hidden layer",
        model_kinds=("mlp", "mlp_ln_residual", "cnn"),
    )
    batch_size: int = setting(
        256, label="Batch", unit="samples", minimum=1, maximum=MAX_BATCH, help="rows per call"
    )
    dtype: str = setting(
        "fp32", label="Data type", choices=DTYPE_CHOICES, choice_labels={AS_GIVEN: "as given"},
        help="element type of weights and inputs; tf32 is fp32 with TensorFloat-32 matmuls; "
        "as_given (as given): a custom model and its inputs exactly as the factory made them, "
        "the default for a custom model",
    )
    device: str = setting(
        "auto", label="Device", widget="device", help="where to run: auto, cpu, cuda, cuda:N or mps",
        pattern=_DEVICE_RE.pattern, invalid="must be auto, cpu, mps, cuda or cuda:N",
    )
    workload: str = setting(
        "inference", label="Workload", choices=WORKLOADS,
        help="inference: forward only; training: forward, backward and an optimizer step",
    )
    variants: list[str] = setting(
        ["eager", "default"], label="Variants", widget="variants", check=_variants_problem,
        metavar="A,B", help="eager, the baseline, plus torch.compile modes or backends; "
        "`compile-studio-cli env` lists them",
    )
    fullgraph: bool = setting(
        False, label="Compile", caption="fullgraph (fail on graph breaks)",
        help="compile with fullgraph=True: a graph break is an error",
    )
    dynamic: str = setting(
        "auto", label="Dynamic shapes", choices=DYNAMIC_MODES, bare="true",
        help="torch.compile's dynamic: auto passes nothing (static code first, shape-generic after a "
        "shape changes); false: dynamic=False, a recompile per new shape; true: dynamic=True, "
        "shape-generic code from the start",
    )
    dynamo_config: list[str] = setting(
        [], label="Dynamo config", metavar="FLAG=true,...", check=_dynamo_config_problem,
        placeholder="allow_rnn=true",
        help="torch._dynamo.config flags set in the worker before anything compiles: "
        + ", ".join(DYNAMO_FLAGS) + " (each =true or =false)",
    )
    iterations: int = setting(
        200, label="Iterations", unit="calls", minimum=1, maximum=MAX_ITERATIONS,
        help="timed iterations per variant",
    )
    warmup: int = setting(
        20, label="Warm-up", unit="calls", minimum=0, maximum=MAX_WARMUP,
        help="warm-up iterations per variant, recorded but not in the stats",
    )
    timer: str = setting(
        "auto", label="Timer", choices=TIMERS,
        help="auto: CUDA events on a GPU, the host clock elsewhere; host: end-to-end time with a sync, "
        "to include launch overhead; cuda_events: device time alone, to compare kernels",
    )
    warmup_min_ms: int = setting(
        200, label="Warm-up time", unit="ms", minimum=0, maximum=MAX_WARMUP_MS,
        help="warm-up lasts at least this long as well (clocks ramp up after an idle compile)",
    )
    rounds: int = setting(
        5, label="Rounds", unit="rounds", minimum=1, maximum=MAX_ROUNDS,
        help="the timed calls split into rounds run in alternating order (A B A B …): drift "
        "and load changes hit every variant alike and show as spread; 1 = one variant after another",
    )
    seed: int = setting(0, label="Seed", minimum=0, maximum=MAX_SEED, help="seed for weights and inputs")
    compile_cache: str = setting(
        "warm", label="Compile cache", choices=CACHE_MODES, invalid="must be warm or cold",
        help="warm: the usual Inductor cache; cold: a fresh cache for this run, for an honest compile time",
    )
    cold_l2: bool = setting(
        False, label="Cache", caption="flush L2 between calls",
        help="write a buffer larger than the L2 cache before each call: use it for cold-cache latency "
        "(a call after other work); leave it off for back-to-back throughput",
    )
    compile_scope: str = setting(
        "model", label="Compile scope", choices=COMPILE_SCOPES,
        help="training: compile the model alone, or the whole step (forward, loss, backward, "
        "optimizer step)",
    )
    compile_timing: str = setting(
        "isolated", label="Compile time", choices=COMPILE_TIMINGS,
        help="isolated: each variant's first call timed in a fresh process (what a new program "
        "pays, whatever ran before); in_run: the first call within this run",
    )
    backend_modules: list[str] = setting(
        [], label="Backend modules", metavar="MODULE,FILE.py",
        placeholder="modules or .py files that register Dynamo backends",
        help="modules (package.module) or Python files the worker imports first; the Dynamo "
        "backends they register can be chosen as variants",
    )
    model: str = setting(
        "mlp", label="Model", choices=MODEL_KINDS,
        help="mlp: Linear layers; mlp_ln_residual: LayerNorm + residual blocks; transformer: "
        "encoder layers; cnn: conv stages; custom: your own factory (its code runs in the worker)",
    )
    transformer: str = setting(
        DEFAULT_TRANSFORMER, label="Transformer", metavar="D,H,FFN,SEQ,L", model_kinds=("transformer",),
        check=_spec_problem(parse_transformer_spec),
        help="model transformer: d_model, heads, feed-forward width, sequence length, layers",
    )
    cnn: str = setting(
        DEFAULT_CNN, label="CNN", metavar="IMG,K,C1,C2,...", check=_spec_problem(parse_cnn_spec),
        model_kinds=("cnn",),
        help="model cnn: image size, kernel size, then the channels of each stage",
    )
    factory: str = setting(
        "", label="Factory", metavar="FILE.py:FUNC", check=_factory_problem, model_kinds=("custom",),
        placeholder="path/to/model.py:make_model (its code runs in the worker)",
        help="model custom: a function returning (model, inputs[, loss]); its arguments named like "
        "a configuration field (batch_size, seed, ...) get this configuration's values; the file's "
        "code runs in the worker, and a copy is kept in the run folder",
    )
    factory_args: list[str] = setting(
        [], label="Factory arguments", metavar="NAME=VALUE,...", check=_factory_args_problem,
        model_kinds=("custom",), placeholder="seq_len=64",
        help="model custom: keyword arguments the factory gets besides the configuration fields "
        "it names (seq_len=64: make_model(seq_len=64)); each must be a parameter of the factory",
    )
    model_path: str = setting(
        "", label="Model path", placeholder="folder to import package.module from", model_kinds=("custom",),
        help="model custom with package.module:FUNC: the folder it is imported from",
    )
    label: str = setting(
        "", label="Label", placeholder="optional name for this run", help="a name for this run"
    )
    diagnostics: bool = setting(
        True, label="Why", caption="collect diagnostics (profile, compile phases, graph breaks)",
        help="after each variant's timed window: a short profiler trace, compile time by phase, "
        "graph breaks, recompiles and the generated code, for the Why view",
    )

    def __post_init__(self) -> None:
        # ``dynamic`` was a flag once: True passed dynamic=True, False passed nothing (auto)
        value: object = self.dynamic
        if isinstance(value, bool):
            self.dynamic = "true" if value else "auto"

    # -- serialisation -----------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchmarkConfig:
        """Build from a dict; unknown keys or wrongly typed values raise ConfigError.

        A custom model without a ``dtype`` key runs as given (its factory's dtypes);
        a dict that names a dtype keeps it.
        """
        if not isinstance(data, dict):
            raise ConfigError([ConfigProblem("config", "must be a JSON object")])
        problems: list[ConfigProblem] = []
        known = {spec.name: spec for spec in config_fields(cls)}
        kwargs: dict[str, Any] = {}
        data = _read_size_lists(_read_legacy(data))
        if data.get("model") == "custom" and "dtype" not in data:
            data = {**data, "dtype": AS_GIVEN}
        for key, value in data.items():
            spec = known.get(key)
            if spec is None:
                problems.append(ConfigProblem(key, "is not a configuration field"))
                continue
            wrong_type = spec.type_problem(value)
            if wrong_type:
                problems.append(ConfigProblem(key, wrong_type))
                continue
            kwargs[key] = list(value) if spec.kind == "list" else value
        if problems:
            raise ConfigError(problems)
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str) -> BenchmarkConfig:
        if len(text) > MAX_CONFIG_CHARS:
            raise ConfigError(
                [ConfigProblem("config", f"is longer than {MAX_CONFIG_CHARS:,} characters")]
            )
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                [ConfigProblem("config", f"is not valid JSON (line {exc.lineno}: {exc.msg})")]
            ) from None
        except RecursionError:
            raise ConfigError([ConfigProblem("config", "is nested too deeply")]) from None
        except ValueError as exc:  # e.g. a number with thousands of digits
            raise ConfigError([ConfigProblem("config", f"cannot be read: {str(exc)[:80]}")]) from None
        return cls.from_dict(data)

    # -- derived values ----------------------------------------------------
    def layer_sizes(self) -> list[int]:
        return parse_layer_spec(self.layers)

    def compiled_variants(self) -> list[str]:
        return compiled_variants(self.variants)

    def parameter_count(self) -> int:
        sizes = self.layer_sizes()
        return sum(a * b + b for a, b in zip(sizes, sizes[1:]))

    def flops_per_call(self) -> int:
        """Analytic FLOPs of one call: 2·B·in·out per Linear; training ×3."""
        sizes = self.layer_sizes()
        fwd = sum(2 * self.batch_size * a * b for a, b in zip(sizes, sizes[1:]))
        return fwd * (3 if self.workload == "training" else 1)

    def estimated_memory_bytes(self) -> int:
        """Rough upper estimate of device memory one variant needs.

        Weights (plus fp64 reference copy on the same device), activations for
        every layer, and for training gradients and two Adam-free SGD buffers.
        Several variants live at once when measured in rounds.
        """
        sizes = self.layer_sizes()
        elem = BYTES_PER_ELEMENT.get(self.dtype, 4)
        params = self.parameter_count()
        activations = self.batch_size * sum(sizes)
        per_variant = params * elem + activations * elem * (3 if self.workload == "training" else 2)
        if self.workload == "training":
            per_variant += 2 * params * elem  # gradients + momentum
        reference = (params + activations * 2) * 8
        live_variants = len(self.variants) if self.rounds > 1 else 1
        return per_variant * max(1, live_variants) + reference

    def model_text(self) -> str:
        """The model in a few words: ``MLP 1024,1024,512,10``, ``Transformer d256 …``."""
        if self.model == "mlp_ln_residual":
            return f"Residual MLP {self.layers}"
        if self.model == "transformer":
            parts = self.transformer.replace(" ", "").split(",")
            if len(parts) == 5:
                d, h, ffn, seq, layers = parts
                return f"Transformer d{d} h{h} ffn{ffn} seq{seq} ×{layers}"
            return f"Transformer {self.transformer}"
        if self.model == "cnn":
            return f"CNN {self.cnn}"
        if self.model == "custom":
            return f"custom {self.factory}"
        return f"MLP {self.layers}"

    def slug(self, read_factory: bool = False) -> str:
        """Short text naming the config, for folder and file names.

        A custom model's batch is named only where ``read_factory`` (a run about to
        start: the factory's source is parsed, not run) finds it takes ``batch_size``.
        """
        variants = "+".join(self.variants)[:40]
        if self.model in ("mlp", "mlp_ln_residual"):
            layers = "-".join(str(s) for s in self._sizes_or_empty())
            name = f"{'mlp' if self.model == 'mlp' else 'resmlp'}{layers}"
        elif self.model == "transformer":
            name = "tf" + self.transformer.replace(",", "-")
        elif self.model == "cnn":
            name = "cnn" + self.cnn.replace(",", "-")
        else:
            name = "custom-" + self.factory.rsplit(":", 1)[-1]
        # a custom model's batch is its factory's: named only where the factory takes the form's
        batch = f"_b{self.batch_size}"
        if self.model == "custom" and not (read_factory and self.factory_takes("batch_size")):
            batch = ""
        text = f"{name}{batch}_{self.dtype.replace('_', '-')}_{self.device}_{variants}"
        return re.sub(r"[^A-Za-z0-9_.+-]", "-", text)[:100]

    def factory_takes(self, name: str) -> bool:
        """Whether a custom model's factory declares a keyword parameter ``name`` (read, not run)."""
        from .model_specs import factory_signature

        sig = factory_signature(self.factory, self.model_path)
        return not isinstance(sig, str) and sig.takes(name)

    def _factory_args_problems(self) -> list[ConfigProblem]:
        """Each factory argument the factory does not take (its source read, not run)."""
        from .model_specs import factory_signature

        sig = factory_signature(self.factory, self.model_path)
        try:
            names = parse_factory_args(self.factory_args)
        except ValueError:
            return []  # said by the field's own check
        if isinstance(sig, str):
            return []  # the factory's own problem is said where it is loaded
        return [
            ConfigProblem(
                "factory_args",
                f"the factory {sig.function}() does not take {name}: give it a keyword parameter "
                f"named {name} (def {sig.function}({name}=…))",
            )
            for name in names
            if not sig.takes(name) and not sig.var_keyword
        ]

    def _sizes_or_empty(self) -> list[int]:
        try:
            return self.layer_sizes()
        except LayerSpecError:
            return []

    # -- validation --------------------------------------------------------
    def problems(self, env: EnvironmentInfo | None = None) -> list[ConfigProblem]:
        """Every problem with this config; empty when it can run.

        Without ``env`` only checks that need no knowledge of the machine run.
        """
        out: list[ConfigProblem] = []
        typed = True
        for spec in config_fields(type(self)):
            value = getattr(self, spec.name)
            message = spec.problem(value)
            if message:
                out.append(ConfigProblem(spec.name, message))
                typed = typed and spec.type_problem(value) is None
        if not typed:
            return out
        cudagraph = [v for v in self.variants if records_cudagraphs(v)]
        if cudagraph and self.warmup < CUDAGRAPH_MIN_WARMUP:
            out.append(
                ConfigProblem(
                    "warmup",
                    f"{cudagraph[0]} records CUDA graphs during warm-up: "
                    f"use at least {CUDAGRAPH_MIN_WARMUP} warm-up iterations",
                )
            )
        if self.dtype == AS_GIVEN and self.model != "custom":
            out.append(
                ConfigProblem(
                    "dtype",
                    "as given applies to a custom model's factory; built-in models take fp32, "
                    "tf32, bf16 or fp16",
                )
            )
        if self.model == "custom" and not self.factory.strip():
            out.append(
                ConfigProblem("factory", "a custom model needs its factory: path/to/model.py:make_model")
            )
        elif self.model == "custom" and self.factory_args:
            out.extend(self._factory_args_problems())
        if self.rounds > self.iterations:
            out.append(
                ConfigProblem("rounds", f"at most one round per iteration ({self.iterations:,})")
            )
        if env is not None:
            sizes_ok = not any(p.field == "layers" for p in out)
            out.extend(self._environment_problems(env, sizes_ok))
        return out

    def _environment_problems(self, env: EnvironmentInfo, sizes_ok: bool) -> list[ConfigProblem]:
        out: list[ConfigProblem] = []
        known = set(env.compile_modes) | set(env.compile_backends) | set(EAGER_VARIANTS)
        for v in self.variants:
            if v not in known:
                choices = ", ".join([*EAGER_VARIANTS, *env.compile_modes, *env.compile_backends])
                out.append(
                    ConfigProblem(
                        "variants",
                        f"'{v}' is not a compile mode or backend of the installed torch "
                        f"(available: {choices})",
                    )
                )
        if not _DEVICE_RE.match(self.device):
            return out
        device = env.resolve_device(self.device)
        if device not in env.devices:
            if device.startswith("cuda"):
                cudas = [d for d in env.devices if d.startswith("cuda")]
                where = (
                    f"this machine has {', '.join(cudas)}" if cudas else "no CUDA GPU is visible"
                )
                out.append(ConfigProblem("device", f"{device} is not available: {where}"))
            else:
                out.append(ConfigProblem("device", f"{device} is not available on this machine"))
            return out
        dtypes = env.device_dtypes.get(device)
        if dtypes is not None and self.dtype in DTYPES and self.dtype not in dtypes:
            out.append(
                ConfigProblem("dtype", f"{self.dtype} is not supported on {device}")
            )
        memory = env.device_memory.get(device)
        if memory and sizes_ok and self.batch_size >= 1 and self.model == "mlp":
            need = self.estimated_memory_bytes()
            if need > memory:
                out.append(
                    ConfigProblem(
                        "batch_size",
                        f"model and batch need about {format_bytes(need)}, "
                        f"more than the {format_bytes(memory)} available on {device}",
                    )
                )
        return out

    def validate(self, env: EnvironmentInfo | None = None) -> BenchmarkConfig:
        """Return self, or raise ConfigError listing every problem."""
        problems = self.problems(env)
        if problems:
            raise ConfigError(problems)
        return self


#: Fields written as comma-separated whole numbers, which a config file may give as a JSON list.
SIZE_LIST_FIELDS = ("layers", "transformer", "cnn")


def _read_size_lists(data: dict[str, Any]) -> dict[str, Any]:
    """``"layers": [64, 64, 10]`` read as ``"layers": "64,64,10"`` (also ``transformer``, ``cnn``).

    Only a list of whole numbers is read so; anything else is left for the type check to name.
    """
    found = {}
    for name in SIZE_LIST_FIELDS:
        value = data.get(name)
        if isinstance(value, list) and value and all(
            isinstance(v, int) and not isinstance(v, bool) and abs(v) < 10**18 for v in value
        ):
            found[name] = ",".join(str(v) for v in value)
    return {**data, **found} if found else data


def _read_legacy(data: dict[str, Any]) -> dict[str, Any]:
    """Older configs read as today's.

    Saved before rounds: ``interleave``/``interleave_block`` become ``rounds``.
    Saved when ``dynamic`` was a flag: true means ``"true"``; false passed
    nothing to torch.compile, which is ``"auto"``.
    """
    if isinstance(data.get("dynamic"), bool):
        data = {**data, "dynamic": "true" if data["dynamic"] else "auto"}
    if "interleave" not in data and "interleave_block" not in data:
        return data
    data = dict(data)
    interleave = data.pop("interleave", False)
    block = data.pop("interleave_block", 10)
    if "rounds" not in data:
        if interleave is True and isinstance(block, int) and block > 0:
            iterations = data.get("iterations", 200)
            iterations = iterations if isinstance(iterations, int) and iterations > 0 else 200
            data["rounds"] = max(2, min(MAX_ROUNDS, iterations // block))
        else:
            data["rounds"] = 1
    return data


def config_fields(cls: type[BenchmarkConfig] = BenchmarkConfig) -> list[FieldSpec]:
    """The fields of ``cls`` with their metadata, in declaration order."""
    return list(_fields_of(cls))


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover
