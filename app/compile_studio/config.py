"""Benchmark configuration: the one object every layer passes around.

Pure Python (no torch, no Qt), so the GUI process can validate a
configuration as the user types. Checks that need to know the machine (which
devices exist, which compile modes the installed torch offers, how much memory
a device has) take an :class:`EnvironmentInfo` built from the worker's
``hello`` event.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any

DTYPES = ("fp32", "tf32", "bf16", "fp16")
WORKLOADS = ("inference", "training")
ACTIVATIONS = ("gelu", "relu", "silu", "tanh", "none")
TIMERS = ("auto", "host", "cuda_events")
CACHE_MODES = ("warm", "cold")

#: Widest layer accepted. 65 536 x 65 536 weights are already 16 GiB in fp32.
MAX_LAYER_WIDTH = 65_536
MAX_LAYERS = 64
MAX_BATCH = 1_048_576
MAX_ITERATIONS = 1_000_000
MAX_WARMUP = 100_000
#: CUDA-graph based modes record on the first calls after warm-up starts; they
#: need a few warm-up calls before the timed window is steady state.
CUDAGRAPH_MIN_WARMUP = 3
CUDAGRAPH_VARIANTS = ("reduce-overhead", "max-autotune", "cudagraphs")

BYTES_PER_ELEMENT = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}

DEFAULT_LAYERS = "1024,1024,512,10"

_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda)(?::(\d+))?$")


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


@dataclass
class BenchmarkConfig:
    """Everything that defines one benchmark run (an MLP, how to run and time it)."""

    layers: str = DEFAULT_LAYERS
    activation: str = "gelu"
    batch_size: int = 256
    dtype: str = "fp32"
    device: str = "auto"
    workload: str = "inference"
    variants: list[str] = field(default_factory=lambda: ["eager", "default"])
    fullgraph: bool = False
    dynamic: bool = False
    iterations: int = 200
    warmup: int = 20
    timer: str = "auto"
    interleave: bool = False
    interleave_block: int = 10
    seed: int = 0
    compile_cache: str = "warm"
    cold_l2: bool = False
    label: str = ""

    # -- serialisation -----------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchmarkConfig:
        """Build from a dict; unknown keys or wrongly typed values raise ConfigError."""
        if not isinstance(data, dict):
            raise ConfigError([ConfigProblem("config", "must be a JSON object")])
        problems: list[ConfigProblem] = []
        known = {f.name: f for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        defaults = cls()
        for key, value in data.items():
            if key not in known:
                problems.append(ConfigProblem(key, "is not a configuration field"))
                continue
            expected = type(getattr(defaults, key))
            if expected is bool:
                ok = isinstance(value, bool)
            elif expected is int:
                ok = isinstance(value, int) and not isinstance(value, bool)
            elif expected is list:
                ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
            else:
                ok = isinstance(value, expected)
            if not ok:
                problems.append(
                    ConfigProblem(key, f"must be {_type_word(expected)}, got {value!r:.40}")
                )
                continue
            kwargs[key] = list(value) if expected is list else value
        if problems:
            raise ConfigError(problems)
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str) -> BenchmarkConfig:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                [ConfigProblem("config", f"is not valid JSON (line {exc.lineno}: {exc.msg})")]
            ) from None
        return cls.from_dict(data)

    # -- derived values ----------------------------------------------------
    def layer_sizes(self) -> list[int]:
        return parse_layer_spec(self.layers)

    def compiled_variants(self) -> list[str]:
        return [v for v in self.variants if v != "eager"]

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
        Several variants live at once in interleaved mode.
        """
        sizes = self.layer_sizes()
        elem = BYTES_PER_ELEMENT.get(self.dtype, 4)
        params = self.parameter_count()
        activations = self.batch_size * sum(sizes)
        per_variant = params * elem + activations * elem * (3 if self.workload == "training" else 2)
        if self.workload == "training":
            per_variant += 2 * params * elem  # gradients + momentum
        reference = (params + activations * 2) * 8
        live_variants = len(self.variants) if self.interleave else 1
        return per_variant * max(1, live_variants) + reference

    def slug(self) -> str:
        """Short text naming the config, for folder and file names."""
        layers = "-".join(str(s) for s in self._sizes_or_empty())
        variants = "+".join(self.variants)[:40]
        text = f"mlp{layers}_b{self.batch_size}_{self.dtype}_{self.device}_{variants}"
        return re.sub(r"[^A-Za-z0-9_.+-]", "-", text)[:100]

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
        add = out.append
        sizes_ok = True
        try:
            parse_layer_spec(self.layers)
        except LayerSpecError as exc:
            add(ConfigProblem("layers", str(exc)))
            sizes_ok = False
        if self.activation not in ACTIVATIONS:
            add(ConfigProblem("activation", f"must be one of {', '.join(ACTIVATIONS)}"))
        if self.batch_size < 1:
            add(ConfigProblem("batch_size", "must be at least 1"))
        elif self.batch_size > MAX_BATCH:
            add(ConfigProblem("batch_size", f"must be at most {MAX_BATCH:,}"))
        if self.dtype not in DTYPES:
            add(ConfigProblem("dtype", f"must be one of {', '.join(DTYPES)}"))
        if not _DEVICE_RE.match(self.device):
            add(ConfigProblem("device", "must be auto, cpu, mps, cuda or cuda:N"))
        if self.workload not in WORKLOADS:
            add(ConfigProblem("workload", f"must be one of {', '.join(WORKLOADS)}"))
        if self.iterations < 1:
            add(ConfigProblem("iterations", "must be at least 1"))
        elif self.iterations > MAX_ITERATIONS:
            add(ConfigProblem("iterations", f"must be at most {MAX_ITERATIONS:,}"))
        if self.warmup < 0:
            add(ConfigProblem("warmup", "cannot be negative"))
        elif self.warmup > MAX_WARMUP:
            add(ConfigProblem("warmup", f"must be at most {MAX_WARMUP:,}"))
        if self.timer not in TIMERS:
            add(ConfigProblem("timer", f"must be one of {', '.join(TIMERS)}"))
        if self.compile_cache not in CACHE_MODES:
            add(ConfigProblem("compile_cache", "must be warm or cold"))
        if self.interleave_block < 1:
            add(ConfigProblem("interleave_block", "must be at least 1"))
        if not self.variants:
            add(ConfigProblem("variants", "choose at least one variant"))
        elif len(set(self.variants)) != len(self.variants):
            add(ConfigProblem("variants", "lists a variant twice"))
        elif self.compiled_variants() and "eager" not in self.variants:
            add(ConfigProblem("variants", "include eager: speedup is measured against it"))
        cudagraph = [v for v in self.variants if v in CUDAGRAPH_VARIANTS]
        if cudagraph and self.warmup < CUDAGRAPH_MIN_WARMUP:
            add(
                ConfigProblem(
                    "warmup",
                    f"{cudagraph[0]} records CUDA graphs during warm-up: "
                    f"use at least {CUDAGRAPH_MIN_WARMUP} warm-up iterations",
                )
            )
        if env is not None:
            out.extend(self._environment_problems(env, sizes_ok))
        return out

    def _environment_problems(self, env: EnvironmentInfo, sizes_ok: bool) -> list[ConfigProblem]:
        out: list[ConfigProblem] = []
        known = set(env.compile_modes) | set(env.compile_backends) | {"eager"}
        for v in self.variants:
            if v not in known:
                choices = ", ".join(["eager", *env.compile_modes, *env.compile_backends])
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
        if memory and sizes_ok and self.batch_size >= 1:
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


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def _type_word(t: type) -> str:
    return {bool: "true or false", int: "a whole number", str: "text", list: "a list of names"}.get(
        t, t.__name__
    )
