"""Stage 10, tf32_probe: eager against max-autotune in tf32 — how far apart, how much faster.

TensorFloat-32 matmuls round their inputs to 10 mantissa bits, for eager and
compiled alike (the app sets the same flags for both). The probe reports each
one's error against fp64 and the gain, and asks only that the app does not
call max-autotune *incorrect* for it. It is the last stage: with too little
time left it is skipped, and a run that would outlast the deadline is stopped
and skipped rather than cut short.
"""

from __future__ import annotations

from typing import Any

from .app_checks import status_of, variant_figures
from .app_runs import app_config, run_app
from .plan import Plan
from .report import Report

CHECK = ("tf32_probe.not_incorrect",
         "tf32: max-autotune's verdict against eager is not incorrect (error and gain reported)")
#: Seconds kept back from the deadline when the probe's run is asked to stop.
MARGIN_S = 15.0


def stage_tf32_probe(
    report: Report, store: Any, plan: Plan, device: str, figures: dict[str, Any]
) -> None:
    """One app run, eager and max-autotune in tf32; the verdict must not be incorrect."""
    config = app_config(plan, device, dtype="tf32", variants=list(plan.tf32_variants),
                        iterations=plan.tf32_iterations, compile_cache="warm",
                        label="gpu_check tf32 probe")
    figures["config"] = config.to_dict()
    app_run = run_app(report, store, "tf32_probe", config,
                      stop_after_s=max(1.0, report.left() - MARGIN_S))
    run = app_run.run
    figs = variant_figures(run)
    figures.update(run_id=run.run_id, status=status_of(run.status), variants=figs)
    compiled = plan.tf32_variants[-1]
    eager, other = figs.get("eager") or {}, figs.get(compiled) or {}

    def error(f: dict[str, Any]) -> float | None:
        d = (f.get("checks") or {}).get("output") or {}
        return d.get("error") if isinstance(d, dict) else None

    e_err, c_err = error(eager), error(other)
    text = (f"error vs fp64: eager {e_err if e_err is None else f'{e_err:.2e}'}, {compiled} "
            f"{c_err if c_err is None else f'{c_err:.2e}'}; gain {other.get('speedup') or '–'}× "
            f"(device {other.get('device_speedup') or '–'}×); verdict "
            f"{other.get('verdict_text') or other.get('verdict') or '–'}")
    figures.update(error_eager=e_err, error_compiled=c_err, gain=other.get("speedup"),
                   device_gain=other.get("device_speedup"), verdict=other.get("verdict"))
    if app_run.stopped_by_us and other.get("status") != "done":
        report.skip(*CHECK, "stopped: the gpu_check deadline was near", text, cuda_only=True)
        return
    ok = (other.get("status") == "done" and other.get("verdict") != "incorrect"
          and other.get("allclose") is not False)
    report.check(*CHECK, ok, text, str(other.get("error") or "")[:300], cuda_only=True)


def skip(report: Report, reason: str) -> None:
    """The probe left out (on the CPU, without numpy, or for lack of time), saying why."""
    report.skip_stage("tf32_probe", reason, [CHECK], cuda_only=True)
