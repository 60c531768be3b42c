"""Is a variant's output still right? Normwise error against an fp64 reference.

A variant's output ``out`` is compared with the fp64 reference ``ref`` of the
same model on the same input:

* ``error``  = ‖out − ref‖ / ‖ref‖ (Frobenius norms, computed in fp64);
* ``gain``   = ⟨out, ref⟩ / ⟨ref, ref⟩, the scale of ``out`` along ``ref``.
  Rounding errors are unbiased and nearly orthogonal to ``ref``, so ``gain``
  stays within a few ulps of 1 for a correct model while a systematic scale
  error (outputs or gradients ×1.01) shows in full.

A compiled variant is *correct* when all three hold (:func:`judge`):

1. ``error ≤ ERROR_BOUND[dtype]`` — the dtype's own limit;
2. ``error ≤ max(EAGER_MULTIPLE × eager's error, ERROR_FLOOR[dtype])`` —
   compile may reorder arithmetic, not lose accuracy;
3. ``|gain − 1| ≤ GAIN_BOUND[dtype]``.

Bounds (unit roundoff u: fp32 6e-8, tf32/fp16 4.9e-4, bf16 3.9e-3). Each
output element of a K-long dot product carries the rounding of its inputs,
weights and result, a few u in normwise terms for the MLPs benchmarked here,
growing slowly with depth. The bounds leave about an order of magnitude of
room over that (fp32 1e-5 ≈ 170 u, fp16 3e-3 ≈ 6 u, bf16 2e-2 ≈ 5 u) and
stay far below what a real defect does to such outputs (a dropped bias or a
5 % scale error is ≥ 5e-2).

tf32 is the exception to "rounding is unbiased": Triton's tf32 matmuls feed
fp32 operands to the tensor cores, which drop the 13 low mantissa bits —
truncation toward zero, not rounding (cuBLAS rounds). Each operand loses a
fraction δ ∈ [0, 2⁻¹⁰) of itself: on average 2⁻¹¹·E[1/m] ≈ 0.36·2⁻¹⁰ for
mantissas m spread over [1, 2), at most 2⁻¹¹ on average. A product of two
truncated operands is low by about 0.72·2⁻¹⁰ ≈ 7e-4 (at most 2⁻¹⁰ ≈ 9.8e-4),
with the same sign in every term, so it does not average out over K: each
layer scales its output by about 1 − 7e-4, and the scale passes through the
activations to the next layer. Over L layers gain ≈ 1 − L·7e-4 (the default
1024,1024,512,10 MLP, simulated: gain − 1 = −1.95e-3, normwise error 2.2e-3
where rounding gives 4.4e-4). So for tf32 ``GAIN_BOUND`` is 5e-3 (five
layers at the worst-case 9.8e-4 each); the floor of the eager rule is as
large (eager, rounded, can be five times as accurate as a correct truncating
kernel), and the error bound 6e-3 adds the unbiased part (≈ 1e-3) to it. A
1 % scale error, a dropped bias or a 5 % error is still flagged.

A model run as given (dtype ``as_given``) is judged by the bounds of the dtype
its floating parameters are in (:func:`tolerance_key`): bf16, fp16 or fp32
(fp64 takes fp32's; a mix takes its lowest precision's).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import torch

ERROR_BOUND = {"fp32": 1e-5, "tf32": 6e-3, "fp16": 3e-3, "bf16": 2e-2}
ERROR_FLOOR = {"fp32": 1e-6, "tf32": 5e-3, "fp16": 3e-4, "bf16": 2e-3}
GAIN_BOUND = {"fp32": 1e-6, "tf32": 5e-3, "fp16": 5e-4, "bf16": 3e-3}
EAGER_MULTIPLE = 4.0

#: The training check is judged only where eager's steps moved the parameters by at least
#: this many of their own rounding units (‖p_eager − p₀‖ ≥ DRIFT_MIN_MOVE · ‖u·p₀‖).
DRIFT_MIN_MOVE = 100.0

#: Mantissa bits at or below which a dtype is judged as bf16 / fp16 (fewer bits: bf16's bounds).
_BF16_BITS = 7
_FP16_BITS = 10


def tolerance_key(dtype: torch.dtype | None) -> str:
    """The key of the bounds a model in ``dtype`` is judged by: bf16, fp16 or fp32.

    fp64 (and None: no floating parameter) take fp32's bounds; a floating dtype
    with fewer mantissa bits than bf16 (float8) takes bf16's, the loosest.
    """
    if dtype is None or not dtype.is_floating_point:
        return "fp32"
    bits = round(-math.log2(torch.finfo(dtype).eps))  # mantissa bits: bf16 7, fp16 10
    if bits <= _BF16_BITS:
        return "bf16"
    if bits <= _FP16_BITS:
        return "fp16"
    return "fp32"


RULE = (
    "normwise error ‖out−ref‖/‖ref‖ vs fp64 ≤ {bound:g}, ≤ max({k:g}× eager's, {floor:g}), "
    "and |gain−1| ≤ {gain:g}"
)


@dataclass(frozen=True)
class Deviation:
    """How one tensor (or a set of them) deviates from its fp64 reference."""

    error: float
    gain: float
    finite: bool

    def to_dict(self) -> dict[str, float | bool | None]:
        d = asdict(self)
        for key in ("error", "gain"):
            if not math.isfinite(d[key]):
                d[key] = None
        return d


def deviation(out: torch.Tensor | list[torch.Tensor], ref: torch.Tensor | list[torch.Tensor]) -> Deviation:
    """Normwise error and gain of ``out`` against ``ref`` (lists are taken as one vector)."""
    outs = out if isinstance(out, list) else [out]
    refs = ref if isinstance(ref, list) else [ref]
    if not outs and not refs:
        return Deviation(error=0.0, gain=1.0, finite=True)
    o = torch.cat([t.detach().to("cpu", torch.float64).reshape(-1) for t in outs])
    r = torch.cat([t.detach().to("cpu", torch.float64).reshape(-1) for t in refs])
    finite = bool(torch.isfinite(o).all())
    ref_sq = float(r.dot(r))
    if ref_sq == 0.0:
        err = 0.0 if not bool(o.any()) else math.inf
        return Deviation(error=err, gain=1.0 if err == 0.0 else math.inf, finite=finite)
    if not finite:
        return Deviation(error=math.inf, gain=math.inf, finite=False)
    error = float(torch.linalg.vector_norm(o - r)) / math.sqrt(ref_sq)
    gain = float(o.dot(r)) / ref_sq
    return Deviation(error=error, gain=gain, finite=True)


#: The rule where eager in the run's dtype is the reference (the model cannot run in fp64).
EAGER_REFERENCE_RULE = (
    "normwise error ‖out−ref‖/‖ref‖ vs {reference} ≤ {bound:g} and |gain−1| ≤ {gain:g} "
    "(the model cannot run in fp64; eager is the reference)"
)


def rule_text(dtype: str, reference: str = "fp64") -> str:
    """The correctness rule for ``dtype`` against ``reference`` ("fp64" or "eager fp32"), in words."""
    if reference != "fp64":
        return EAGER_REFERENCE_RULE.format(
            reference=reference, bound=ERROR_BOUND[dtype], gain=GAIN_BOUND[dtype]
        )
    return RULE.format(
        bound=ERROR_BOUND[dtype], k=EAGER_MULTIPLE, floor=ERROR_FLOOR[dtype], gain=GAIN_BOUND[dtype]
    )


def judge(
    dtype: str, dev: Deviation, eager: Deviation | None, what: str = "output"
) -> tuple[bool, str]:
    """(correct?, every rule it breaks, in words) for a deviation; ``eager`` None judges eager.

    ``what``: the checked tensors as the words name them (``output``, ``gradients``).
    """
    if not dev.finite:
        return False, f"the {what} hold{'s' if what == 'output' else ''} NaN or infinity"
    why: list[str] = []
    bound = ERROR_BOUND[dtype]
    if dev.error > bound:
        why.append(f"error {dev.error:.2e} is above the {dtype} bound {bound:g}")
    if eager is not None and eager.finite:
        allowed = max(EAGER_MULTIPLE * eager.error, ERROR_FLOOR[dtype])
        if dev.error > allowed:
            why.append(
                f"error {dev.error:.2e} is more than {EAGER_MULTIPLE:g}× eager's "
                f"{eager.error:.2e} on the same input"
            )
    if abs(dev.gain - 1.0) > GAIN_BOUND[dtype]:
        why.append(
            f"{what} scaled by {dev.gain:.5f} against the reference "
            f"(|gain−1| above the {dtype} bound {GAIN_BOUND[dtype]:g})"
        )
    return not why, ", ".join(why)


def unit_roundoff(dtype: torch.dtype) -> float:
    """Half the spacing of ``dtype``'s numbers at 1 (fp32 6e-8, bf16 3.9e-3); 0 if not floating."""
    return float(torch.finfo(dtype).eps) / 2.0 if dtype.is_floating_point else 0.0


def drift_bound(dtype: str) -> float:
    """The most a correct variant's parameters drift from eager's, relative to how far they moved.

    After the same steps from the same p₀, drift = ‖p − p_eager‖ / ‖p_eager − p₀‖ has two
    sources. (1) The gradients: each within ``ERROR_BOUND`` (E) of the fp64 reference, so two
    variants' updates differ by ε ≤ 2E, relative; SGD with momentum averages them and does
    not amplify them over a few small steps (lr × curvature ≪ 1). (2) The parameters' own
    rounding: where two updates differ by δ, p + update rounds to the same number or one
    ulp apart, with probability δ/ulp, so the squared difference is about δ·ulp, not δ²;
    normwise √(ε·u·‖p₀‖ / ‖p_eager − p₀‖) ≤ √(ε / DRIFT_MIN_MOVE) where the check is
    judged. The bound is three times their sum: fp32 1.4e-3, tf32 6.9e-2, fp16 4.1e-2,
    bf16 0.18. A step whose outputs or gradients are 1 % off drifts by about 1e-2: flagged
    in fp32 (7× its bound); in the lower precisions only grosser defects are.
    """
    e = 2.0 * ERROR_BOUND[dtype]
    return 3.0 * (e + math.sqrt(e / DRIFT_MIN_MOVE))


def params_drift(
    params: list[torch.Tensor],
    eager: list[torch.Tensor],
    initial: list[torch.Tensor],
    current: Iterable[torch.Tensor],
) -> tuple[float, float, float] | None:
    """(drift, ‖p_eager − p₀‖, the parameters' resolution) for :func:`judge_drift`; None: eager did not move.

    drift = ‖p − p_eager‖ / ‖p_eager − p₀‖ of parameters ``params`` and eager's ``eager``
    after the same steps from the same ``initial`` p₀ (fp64, CPU); the resolution is
    ‖u·p₀‖ with u the unit roundoff of the variant's own parameters ``current``.
    """
    moved = sum(float((e - p0).square().sum()) for e, p0 in zip(eager, initial))
    if moved == 0.0:
        return None
    apart = sum(float((p - e).square().sum()) for p, e in zip(params, eager))
    resolution = sum(
        (unit_roundoff(p.dtype) * float(p0.norm())) ** 2 for p, p0 in zip(current, initial)
    )
    return (apart / moved) ** 0.5, moved**0.5, resolution**0.5


def judge_drift(dtype: str, drift: float, moved: float, resolution: float) -> tuple[bool | None, str]:
    """(correct?, why not) of the training check's drift; None when it cannot be judged.

    ``moved``: ‖p_eager − p₀‖; ``resolution``: ‖u·p₀‖, the parameters' rounding unit, normwise.
    Updates under ``DRIFT_MIN_MOVE`` rounding units are mostly rounding: not judged.
    """
    if not math.isfinite(drift):
        return False, "the parameters hold NaN or infinity after the check's steps"
    if moved < DRIFT_MIN_MOVE * resolution:
        return None, "the updates are too small against the parameters' rounding to judge"
    bound = drift_bound(dtype)
    if drift > bound:
        return False, (
            f"after the same training steps from the same start the parameters are {drift:.2e} "
            f"from eager's (relative to how far eager's moved), above the {dtype} bound {bound:.2g}"
        )
    return True, ""
