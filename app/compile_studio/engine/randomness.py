"""Is the model random? How its output changes between calls (seeded or unseeded), told in words."""

from __future__ import annotations

import copy

import torch

from . import checks
from .run_state import RunState
from .variant import CheckedOutput, checked_output
from .workloads import Workload, call_model

#: How a model is random: ``seeded`` (the same output under the same torch seed) or
#: ``unseeded`` (a different output even then: a random source other than torch's).
SEEDED, UNSEEDED = "seeded", "unseeded"

RANDOMNESS_TEXT = {
    SEEDED: "the model's output changes from call to call (random operators such as Dropout in "
    "training mode); outputs are compared with the RNG reseeded before each call, and a variant "
    "whose output still differs is not judged",
    UNSEEDED: "the model's output changes from call to call even with torch's RNG reseeded before "
    "each call (a random source other than torch's, such as Python's random, or state the model "
    "keeps between calls); the output check is skipped",
}


def use_eager_random_numbers() -> None:
    """Inductor's random operators fall back to eager's: the same seed gives the same numbers."""
    import torch._inductor.config as inductor_config

    inductor_config.fallback_random = True


def detect_randomness(run: RunState, workload: Workload) -> str | None:
    """How the model's output is random: None, SEEDED or UNSEEDED.

    Eager, on a copy of the model (as each variant runs it: on the device, at
    the run's dtype, in training or eval mode), called three times on the
    inputs: with the seed reset before the first two, then once more with the
    RNG as the second left it. Outputs count as the same when bit-identical or
    apart by no more than the dtype's error floor (a non-deterministic
    reduction on a GPU is not randomness). A model that fails here is left to
    fail in its variants; torch's random state is put back after. The built-in
    models are not random: only a factory's model is looked at.
    """
    if run.config.model != "custom":
        return None
    model = copy.deepcopy(workload.model)
    model = model.to(run.device) if run.dtype is None else model.to(run.device, run.dtype)
    model.train(run.training)
    grad = torch.no_grad() if run.training else torch.inference_mode()
    devices = [run.device.index or 0] if run.is_cuda else []

    outputs: list[CheckedOutput] = []
    try:
        with torch.random.fork_rng(devices=devices), grad:
            for reseed in (True, True, False):
                if reseed:
                    run.reseed()
                outputs.append(checked_output(call_model(model, run.x)))
                run.timer.sync()
    except Exception:  # noqa: BLE001 - the variants report the model's own failure
        return None
    finally:
        del model
        if run.is_cuda:
            torch.cuda.empty_cache()
    first, again, moved = outputs
    if not same_output(first, again, run.check_dtype):
        return UNSEEDED
    if not same_output(first, moved, run.check_dtype):
        return SEEDED
    return None


def same_output(a: CheckedOutput, b: CheckedOutput, check_dtype: str) -> bool:
    """Bit-identical, or apart by no more than ``check_dtype``'s error floor."""
    if a.structure != b.structure:
        return False
    if all(
        torch.allclose(x, y, rtol=0.0, atol=0.0, equal_nan=True)
        for x, y in zip(a.tensors, b.tensors)
    ):
        return True  # bit for bit (NaN where NaN)
    dev = checks.deviation(a.tensors, b.tensors)
    return dev.finite and dev.error <= checks.ERROR_FLOOR[check_dtype]
