"""Every size the stages use, for one mode (CUDA or CPU, full or tiny)."""

from __future__ import annotations

from dataclasses import dataclass, field

#: The app's seed configuration: its default MLP at its default batch and dtype.
SEED_LAYERS = "1024,1024,512,10"
SEED_BATCH = 256
SEED_DTYPE = "fp32"


@dataclass(frozen=True)
class LaunchModel:
    """One model of the launch-bound stage: a label for its checks and its sizes."""

    label: str
    layers: str
    batch: int
    dtype: str


@dataclass(frozen=True)
class Plan:
    """Every size the stages use, for one mode (CUDA or CPU, full or tiny)."""

    app_layers: str
    app_batch: int
    app_dtype: str
    app_variants: tuple[str, ...]
    app_iterations: int
    app_warmup: int
    app_warmup_min_ms: int
    app_rounds: int
    train_dtype: str
    train_variants: tuple[str, ...]
    train_iterations: int
    train_compile_timing: str
    compare_layers: str
    compare_batch: int
    compare_dtype: str
    compare_variants: tuple[str, ...]
    rounds: int
    calls: int
    cold_calls: int
    pipelined_calls: int
    pipelined_repeats: int
    timer_min_s: float
    bench_rep_ms: int
    warmup_s: float
    gemm_calls: int
    probe_calls: int
    #: the launch-bound stage: its models, variants, and calls per figure
    launch_models: tuple[LaunchModel, ...] = ()
    launch_variants: tuple[str, ...] = ("eager", "default", "reduce-overhead")
    launch_calls: int = 0
    launch_pair_calls: int = 0
    launch_pair_repeats: int = 0
    launch_profile_calls: int = 0
    #: the tf32 probe: eager against max-autotune on the app-run model in tf32
    tf32_variants: tuple[str, ...] = ("eager", "max-autotune")
    tf32_iterations: int = 0
    #: seconds a stage needs at least (started only with that much left)
    stage_needs_s: dict[str, float] = field(default_factory=dict)


def launch_models(app_layers: str, app_batch: int, tiny: bool) -> tuple[LaunchModel, ...]:
    """The app-run model (bf16) and the seed MLP, at their own batches (smaller when tiny)."""
    return (
        LaunchModel("app_model", app_layers, app_batch, "bf16"),
        LaunchModel("seed_mlp", SEED_LAYERS, 64 if tiny else SEED_BATCH, SEED_DTYPE),
    )


def make_plan(cuda: bool, tiny: bool) -> Plan:
    """The plan of one mode: CUDA (H100/H200 sizes) or the CPU, full or ``tiny``."""
    if cuda:
        app_layers = "256,256,256" if tiny else "1024,1024,1024,1024"
        app_batch = 64 if tiny else 1024
        return Plan(
            app_layers=app_layers,
            app_batch=app_batch,
            app_dtype="bf16",
            app_variants=("eager", "default", "reduce-overhead", "max-autotune"),
            app_iterations=50 if tiny else 200,
            app_warmup=10 if tiny else 20,
            app_warmup_min_ms=50 if tiny else 200,
            app_rounds=4,
            train_dtype="fp32",
            train_variants=("eager", "default"),
            train_iterations=30 if tiny else 100,
            train_compile_timing="isolated",
            compare_layers="1024,1024,1024" if tiny else "4096,4096,4096,4096,4096",
            compare_batch=1024 if tiny else 16384,
            compare_dtype="bf16",
            compare_variants=("eager", "default", "reduce-overhead"),
            rounds=3,
            calls=10 if tiny else 20,
            cold_calls=10 if tiny else 20,
            pipelined_calls=10 if tiny else 20,
            pipelined_repeats=3 if tiny else 5,
            timer_min_s=0.05 if tiny else 0.2,
            bench_rep_ms=20 if tiny else 50,
            warmup_s=0.1 if tiny else 0.3,
            gemm_calls=30 if tiny else 100,
            probe_calls=30 if tiny else 50,
            launch_models=launch_models(app_layers, app_batch, tiny),
            launch_calls=50 if tiny else 100,
            launch_pair_calls=10 if tiny else 20,
            launch_pair_repeats=5 if tiny else 9,
            launch_profile_calls=10 if tiny else 20,
            tf32_iterations=50 if tiny else 100,
            stage_needs_s={
                "gemm": 5,
                "same_process": 30,
                "launch_bound": 25,
                "cudagraph_skip": 5,
                "fixed_points": 30,
                "app_rounds": 40,
                "app_sequential": 25,
                "app_training": 25,
                "tf32_probe": 40,
            },
        )
    return Plan(
        app_layers="32,32,8" if tiny else SEED_LAYERS,
        app_batch=4 if tiny else SEED_BATCH,
        app_dtype="fp32",
        app_variants=("eager", "aot_eager") if tiny else ("eager", "default", "aot_eager"),
        app_iterations=30 if tiny else 100,
        app_warmup=5 if tiny else 10,
        app_warmup_min_ms=0 if tiny else 200,
        app_rounds=3 if tiny else 4,
        train_dtype="fp32",
        train_variants=("eager", "aot_eager"),
        train_iterations=20 if tiny else 50,
        train_compile_timing="in_run",
        compare_layers="32,32,8" if tiny else SEED_LAYERS,
        compare_batch=4 if tiny else SEED_BATCH,
        compare_dtype="fp32",
        compare_variants=("eager", "aot_eager") if tiny else ("eager", "default", "aot_eager"),
        rounds=3,
        calls=20 if tiny else 30,
        cold_calls=3 if tiny else 10,
        pipelined_calls=20 if tiny else 30,
        pipelined_repeats=3,
        timer_min_s=0.02 if tiny else 0.2,
        bench_rep_ms=0,
        warmup_s=0.0 if tiny else 0.2,
        gemm_calls=0,
        probe_calls=0,
        launch_models=launch_models("1024,1024,1024,1024", 1024, tiny),
        stage_needs_s={
            "same_process": 5 if tiny else 20,
            "fixed_points": 10 if tiny else 30,
            "app_rounds": 8 if tiny else 30,
            "app_sequential": 8 if tiny else 30,
            "app_training": 8 if tiny else 20,
        },
    )
