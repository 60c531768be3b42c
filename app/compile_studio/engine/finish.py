"""After a variant's timed window: its steady-state and correctness checks, reports and variant_done.

Outside any timed window: a steady-state call checked against the first, the
correctness verdict (for training, a fixed number of steps from the same
starting point compared with eager's), a pipelined throughput figure, the
variant's own peak memory, its CUDA-graph and clock reports, then the
variant's diagnostics (their profiled calls) and, last, the ``variant_done``
event: what the supervisor does for a finished variant runs after them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ..core import protocol
from ..core.variants import is_eager
from . import checks
from .clocks import CLOCK_CHANGE_WARN, slowdowns
from .randomness import SEEDED, UNSEEDED
from .run_errors import Stopped
from .run_state import RunState
from .variant import CheckedOutput, Variant, checked_output

#: Back-to-back calls timed with one synchronisation for the pipelined figure.
PIPELINED_CALLS = 50
#: Training steps every variant runs from the same starting point for the parameters check.
DRIFT_STEPS = 5


@dataclass
class _Verdict:
    """What a variant's checks found, gathered for its ``variant_done``."""

    #: a different output tree: wrong whatever the numbers
    structural: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: problems not counted against the variant (a random model's), and checks not judged
    skipped: list[str] = field(default_factory=list)
    #: the first call's output tree differs from the reference's (then no numbers compare)
    shape_problem: str | None = None
    out_dev: checks.Deviation | None = None
    replay_diff: float | None = None
    grads_dev: checks.Deviation | None = None
    params_drift: float | None = None
    drift_bound: float | None = None
    drift_unjudged: str | None = None


def finish_variant(run: RunState, v: Variant) -> None:
    """Checks outside the timed window, the diagnostics' profiled calls, then ``variant_done``.

    A random model's numeric differences (not a different output structure) do
    not make a variant incorrect: its check is skipped, saying why.
    """
    try:
        late = steady_state_output(run, v)
        v.pipelined_ms = time_pipelined(run, v)
        drift_steps(run, v)
    except Stopped:
        raise
    except BaseException as exc:  # noqa: BLE001
        run.send_error(v.name, exc, "checking the steady-state output")
        return
    verdict = _Verdict()
    _check_output(run, v, late, verdict)
    if run.training and v.first_grads is not None and run.reference_grads is not None:
        _check_training(run, v, verdict)
    _skip_random(run, v, verdict)
    correct = _correctness(run, v, verdict)
    cudagraph_report(run, v)
    device_time = device_time_report(run, v)
    clock = clock_report(run, v)
    in_window = v.recompiles_in_window
    if v.compiled and in_window:
        run.send_warning(
            v.name,
            f"{v.name} recompiled {in_window}x inside the timed window: "
            "its samples are not steady state",
        )
    done = _done_event(run, v, verdict, correct, device_time, clock)
    # Profiled first, then said done: what the supervisor does for a finished variant (its
    # summary, the window's table) must not run beside the profiled calls the "why" reads.
    run.why.report(
        run, v.name, v.step, v.compiled, {"cudagraph_skips": list(v.cudagraph_skips)},
        ms_per_call=v.pipelined_ms,
    )
    run.sink.event(done)


def _eager_baseline(run: RunState, v: Variant, eager_dev: checks.Deviation | None) -> checks.Deviation | None:
    """Eager's own deviation, the baseline ``v`` is judged beside (None: judged alone).

    Against eager in the run's dtype (the model cannot run in fp64) eager is the reference itself.
    """
    return None if v.name == "eager" or run.reference_kind != "fp64" else eager_dev


def _check_output(run: RunState, v: Variant, late: CheckedOutput | None, verdict: _Verdict) -> None:
    """The first call's output, and a steady-state call's, against the reference."""
    assert v.first_output is not None
    first, ref, dtype = v.first_output, run.reference, run.check_dtype
    baseline = _eager_baseline(run, v, run.eager_output_dev)
    verdict.shape_problem = first.structure_difference(ref)
    if verdict.shape_problem is not None:
        verdict.structural.append(f"first call: {verdict.shape_problem}")
    else:
        verdict.out_dev = checks.deviation(first.tensors, ref.tensors)
        if v.name == "eager":
            run.eager_output_dev = verdict.out_dev
        ok, why = checks.judge(dtype, verdict.out_dev, baseline)
        if not ok:
            verdict.problems.append(f"first call: {why}")
    if late is None:
        return
    late_shape = late.structure_difference(first, "the first call")
    if late_shape is not None:
        verdict.structural.append(f"steady state: {late_shape}")
        return
    verdict.replay_diff = late.max_abs_diff(first)
    if verdict.shape_problem is not None:
        return
    late_ok, late_why = checks.judge(dtype, checks.deviation(late.tensors, ref.tensors), baseline)
    if not late_ok:
        verdict.problems.append(f"steady state: {late_why}")
    elif verdict.replay_diff != 0.0 and run.random_kind is None:
        run.send_warning(
            v.name,
            f"{v.name}: a steady-state call differs from the first call by up to "
            f"{verdict.replay_diff:.3g} (not bit-identical, but within the correctness rule)",
        )


def _check_training(run: RunState, v: Variant, verdict: _Verdict) -> None:
    """The first step's gradients against the reference's, and the parameters' drift."""
    assert v.first_grads is not None and run.reference_grads is not None
    verdict.grads_dev = checks.deviation(v.first_grads, run.reference_grads)
    if v.name == "eager":
        run.eager_grads_dev = verdict.grads_dev
    g_ok, g_why = checks.judge(
        run.check_dtype, verdict.grads_dev, _eager_baseline(run, v, run.eager_grads_dev), "gradients",
    )
    if not g_ok:
        verdict.problems.append(f"gradients: {g_why}")
    verdict.params_drift, verdict.drift_bound, drift_why, verdict.drift_unjudged = drift_verdict(run, v)
    if drift_why:
        verdict.problems.append(f"parameters: {drift_why}")
    if verdict.drift_unjudged and run.random_kind is None:
        run.send_warning(v.name, f"{v.name}: the training check's parameters are not judged: "
                          f"{verdict.drift_unjudged} (the gradients are judged)")


def _skip_random(run: RunState, v: Variant, verdict: _Verdict) -> None:
    """A random model's numeric problems become skipped checks, saying why; so does a
    training check whose parameters had no bound."""
    if run.random_kind == UNSEEDED or (run.random_kind == SEEDED and verdict.problems):
        parts = _checked_parts(verdict.problems) or (
            "output and gradients check" if run.training else "output check"
        )
        verdict.skipped, verdict.problems = verdict.problems, [
            f"{parts} skipped: the model's output is random "
            + (
                "even with torch's RNG reseeded"
                if run.random_kind == UNSEEDED
                else "and this variant's differs from the reference even with the RNG reseeded"
            )
            + "; a difference here does not say that compile is wrong"
        ]
    if run.training and verdict.drift_bound is None:
        verdict.skipped.append(f"parameters: not judged: {_unjudged_drift(run, v, verdict.params_drift)}")


def _correctness(run: RunState, v: Variant, verdict: _Verdict) -> bool | None:
    """Whether ``v`` is correct (None: a random model's, not judged), its problems said as a warning.

    The structural problems lead ``verdict.problems`` from here on.
    """
    problems = verdict.problems = verdict.structural + verdict.problems
    correct: bool | None = not problems
    if verdict.structural:
        run.send_warning(v.name, f"{v.name} is not correct: " + "; ".join(problems))
    elif problems and run.random_kind is not None:
        correct = None
        run.send_warning(v.name, f"{v.name}: " + "; ".join(problems))
    elif problems:
        run.send_warning(v.name, f"{v.name} is not correct: " + "; ".join(problems))
    return correct


def _done_event(
    run: RunState,
    v: Variant,
    verdict: _Verdict,
    correct: bool | None,
    device_time: dict[str, Any] | None,
    clock: dict[str, Any],
) -> protocol.VariantDoneEvent:
    """The variant's ``variant_done``: its checks, memory, CUDA graphs, clocks and pauses."""
    assert v.first_output is not None
    first, ref, out_dev = v.first_output, run.reference, verdict.out_dev
    return protocol.VariantDoneEvent(
        variant=v.name,
        status=protocol.VariantStatus.DONE,
        recompiles=v.recompiles if v.compiled else None,
        recompiles_in_window=v.recompiles_in_window if v.compiled else None,
        max_abs_error=first.max_abs_diff(ref) if verdict.shape_problem is None else None,
        max_rel_error=out_dev.error if out_dev is not None and out_dev.finite else None,
        allclose=correct,
        peak_memory_bytes=run.memory.peak(v.name),
        memory_kind=run.memory.kind_of(v.name),
        checks={
            "rule": checks.rule_text(run.check_dtype, run.reference_kind),
            "reference": run.reference_kind,
            "output": out_dev.to_dict() if out_dev is not None else None,
            "eager_output": run.eager_output_dev.to_dict()
            if run.eager_output_dev and not is_eager(v.name)
            else None,
            "gradients": verdict.grads_dev.to_dict() if verdict.grads_dev else None,
            "params_drift": verdict.params_drift,
            "params_drift_bound": verdict.drift_bound,
            "params_drift_not_judged": verdict.drift_unjudged,
            "replay_max_diff": verdict.replay_diff,
            "problems": verdict.problems,
            "not_compared": list(first.not_compared),
            "skipped": verdict.skipped,
            "device_time": device_time,
        },
        cudagraphs=cudagraph_state(run, v),
        cudagraph_skips=list(v.cudagraph_skips),
        cudagraph_record_ms=v.cudagraph_record_ms,
        pipelined_ms=v.pipelined_ms,
        unpinned_ms=v.unpinned_ms,
        clock=clock,
        turns=run.turns.of(v.name),
    )


def _checked_parts(problems: list[str]) -> str:
    """``gradients check``, ``output and gradients checks``: what the problems are about."""
    names = []
    for problem in problems:
        head = problem.split(":", 1)[0]
        name = {"first call": "output", "steady state": "output"}.get(head, head)
        if name in ("output", "gradients", "parameters") and name not in names:
            names.append(name)
    if not names:
        return ""
    return " and ".join(names) + (" checks" if len(names) > 1 else " check")


def _unjudged_drift(run: RunState, v: Variant, drift: float | None) -> str:
    """Why the training check's parameter drift has no bound for ``v``, in words."""
    if v.name == "eager":
        return "eager's parameters are the yardstick the others are compared with"
    if run.random_kind is not None:
        return (
            "the model is random: each variant's training steps draw other numbers, so their "
            "parameters are not compared"
        )
    if drift is not None:
        return "the updates are too small against the parameters' rounding to judge"
    if "eager" not in run.drift_params:
        return "eager's training steps did not run, so there is nothing to compare with"
    return "eager's training steps did not move the parameters"


def steady_state_output(run: RunState, v: Variant) -> CheckedOutput | None:
    """Inference: one more call after the window, to compare with the first."""
    if run.training:
        return None
    with torch.inference_mode():
        if run.random_kind is not None:
            run.reseed()
        out = v.step(run.x)
        late = checked_output(out)
    run.timer.sync()
    return late


def time_pipelined(run: RunState, v: Variant) -> float:
    """Milliseconds per call of PIPELINED_CALLS back-to-back calls, synchronised once."""
    calls = max(1, min(PIPELINED_CALLS, run.config.iterations))
    with run.no_grad():
        return run.timer.pipelined(lambda: v.step(run.x), calls)


def drift_steps(run: RunState, v: Variant) -> None:
    """Training: DRIFT_STEPS steps from the variant's starting point, parameters kept.

    Parameters, buffers and optimizer state go back to where they were at build,
    in place (CUDA-graph addresses and Dynamo's guards stay valid); then every
    variant, eager included, runs the same steps on the same inputs, whatever
    its warm-up and timed calls were. Outside any timed window.
    """
    if not run.training or run.random_kind is not None or v.initial_params is None:
        return
    if v.name in run.drift_params:
        return
    v.restore()
    with run.no_grad():
        for _ in range(DRIFT_STEPS):
            run.check_stop()
            v.step(run.x)
    run.timer.sync()
    run.drift_params[v.name] = v.params_cpu()


def drift_verdict(
    run: RunState, v: Variant
) -> tuple[float | None, float | None, str | None, str | None]:
    """(drift, its bound, why it is wrong, why it is not judged) of the training check.

    drift = ‖p − p_eager‖ / ‖p_eager − p₀‖ after the same DRIFT_STEPS steps from the
    same p₀, judged by :func:`checks.judge_drift`. Eager is the yardstick (all None);
    a random model's steps draw other numbers per variant (all None: said elsewhere).
    Where a compiled variant's drift cannot be judged — no eager to compare with, or
    eager's updates below what the parameters' dtype holds (bf16 and fp16 at the step's
    learning rate) — the last item says why, in words.
    """
    params = run.drift_params.get(v.name)
    if v.name == "eager" or params is None or not v.initial_params:
        return None, None, None, None
    run.drift_params.pop(v.name, None)
    eager = run.drift_params.get("eager")
    if eager is None:
        return None, None, None, "no eager variant in this run to compare the parameters with"
    dtype = run.check_dtype
    found = checks.params_drift(params, eager, v.initial_params, v.model.parameters())
    if found is None:
        return None, None, None, (
            f"eager's {DRIFT_STEPS} training steps left the parameters exactly where they were: "
            f"every update was below half a rounding unit of the {dtype} parameters, so there "
            "is no movement to compare"
        )
    drift, moved, resolution = found
    ok, why = checks.judge_drift(dtype, drift, moved, resolution)
    if ok is None:  # finite, and the updates too small to judge
        return drift, None, None, (
            f"eager's {DRIFT_STEPS} training steps moved the parameters by {moved:.2g}, under "
            f"{checks.DRIFT_MIN_MOVE:g} of their {dtype} rounding units ({resolution:.2g} "
            f"normwise): at the step's learning rate most updates are rounding in {dtype}, "
            "so a drift would not say that compile is wrong"
        )
    return drift, checks.drift_bound(dtype), None if ok else why, None


def cudagraph_state(run: RunState, v: Variant) -> str | None:
    """Whether a CUDA-graph variant used its graphs, in words; None for the others."""
    from ..core.variants import records_cudagraphs

    if not records_cudagraphs(v.name):
        return None
    if not run.is_cuda:
        return f"not used: there are no CUDA graphs on {run.device.type}"
    if v.cudagraph_skips:
        return "skipped: " + v.cudagraph_skips[0]
    return "used"


def cudagraph_report(run: RunState, v: Variant) -> None:
    """A warning when a CUDA-graph variant ran without its graphs."""
    state = cudagraph_state(run, v)
    if state and state != "used":
        run.send_warning(v.name, f"{v.name}: CUDA graphs {state}; it ran without them")


def device_time_report(run: RunState, v: Variant) -> dict[str, Any] | None:
    """How many device samples the sleep covered; a warning where some include launch gaps."""
    if not v.device_samples:
        return None
    if v.uncovered:
        share = v.uncovered / v.device_samples
        run.send_warning(
            v.name,
            f"{v.name}: {v.uncovered} of {v.device_samples} device-timed calls "
            f"({share:.0%}) outlasted the sleep that keeps the stream busy: their device time "
            "includes launch gaps (a host synchronisation inside the model, such as .item(), "
            "or a launch longer than the sleep), so the device column is not kernel time alone",
        )
    return {"samples": v.device_samples, "uncovered": v.uncovered}


def clock_report(run: RunState, v: Variant) -> dict[str, Any]:
    """The clock at the timed windows' edges, warning when it changed too much inside one."""
    change = v.clock_max_change
    if change is not None and abs(change) > CLOCK_CHANGE_WARN:
        run.send_warning(
            v.name,
            f"{v.name}: the {run.clock.source.replace('_', ' ')} changed by "
            f"{change * 100:+.0f} % inside a timed window",
        )
    throttled = slowdowns(v.clock_start, v.clock_end)
    if throttled:
        run.send_warning(
            v.name,
            f"{v.name}: the GPU was slowed down at the edge of a timed window "
            f"({', '.join(r.replace('_', ' ') for r in throttled)}: NVML's clock-event reasons); "
            "its times are those of a throttled GPU",
        )
    return {
        "source": run.clock.source,
        "start": v.clock_start,
        "end": v.clock_end,
        "max_change": change,
    }
