"""The checks of one app run, judged from the folder it left (results layer: needs numpy).

Every judge takes the run as read back from its folder; those of CUDA alone
skip on the CPU with the reason. The results layer is imported inside the
functions that need it.
"""

from __future__ import annotations

import contextlib
import math
import statistics
from typing import Any

from compile_studio.core.config import BenchmarkConfig, format_bytes
from compile_studio.core.variants import records_cudagraphs
from compile_studio.engine import checks as rule
from compile_studio.engine.clocks import CLOCK_CHANGE_WARN

from .figures import as_float, ms
from .nvml import ClockSampler, Nvml, pynvml_installed
from .report import CUDA_ONLY, Report

#: A CUDA-graph variant's peak memory must be at least this fraction of eager's.
GRAPH_MEMORY_MIN = 0.5
#: The SM clock at the start of round 1 must be at least this fraction of the run's highest.
CLOCK_START_MIN = 0.9
NO_PYNVML = "nvidia-ml-py is not installed: the worker records no NVML readings"
#: Words of the app's warning for a clock that changed inside a timed window.
CLOCK_WARNING = ("changed by", "inside a timed window")


def status_of(value: object) -> str:
    return str(getattr(value, "value", value))


def variant_figures(run: Any) -> dict[str, dict[str, Any]]:
    """What the checks and the report need of each variant, from the run and its summary."""
    from compile_studio.results import summarize

    rows = {r.name: r for r in summarize(run)}
    out: dict[str, dict[str, Any]] = {}
    for name, v in run.variants.items():
        row = rows.get(name)
        out[name] = {
            "status": status_of(v.status),
            "error": v.error,
            "median_ms": row.median_ms if row else None,
            "device_median_ms": row.device_median_ms if row else None,
            "pipelined_ms": v.pipelined_ms,
            "speedup": row.speedup if row else None,
            "device_speedup": row.device_speedup if row else None,
            "verdict": row.verdict if row else "",
            "verdict_text": row.verdict_text if row else "",
            "compile_s": v.compile_s,
            "compile_timing": v.compile_timing,
            "cudagraph_record_ms": v.cudagraph_record_ms,
            "peak_memory_bytes": v.peak_memory_bytes,
            "memory_kind": v.memory_kind,
            "allclose": v.allclose,
            "checks": v.checks,
            "cudagraphs": v.cudagraphs,
            "clock": v.clock,
            "warnings": v.warnings,
            "rounds": len(v.samples.measured_rounds()),
        }
    return out


def print_app_table(report: Report, figs: dict[str, dict[str, Any]]) -> None:
    report.say(f"   {'variant':16s} {'median':>11s} {'device':>11s} {'pipelined':>11s} "
               f"{'speedup':>8s} {'dev spd':>8s} {'compile':>8s} {'peak mem':>10s} correct")

    def num(v: float | None, fmt: str) -> str:
        return "–" if v is None else format(v, fmt)

    for name, f in figs.items():
        peak = f["peak_memory_bytes"]
        report.say(
            f"   {name:16s} {num(f['median_ms'], '.4f'):>8s} ms {num(f['device_median_ms'], '.4f'):>8s} ms "
            f"{num(f['pipelined_ms'], '.4f'):>8s} ms {num(f['speedup'], '.2f'):>7s}× "
            f"{num(f['device_speedup'], '.2f'):>7s}× {num(f['compile_s'], '.2f'):>7s}s "
            f"{format_bytes(peak) if peak is not None else '–':>10s} "
            f"{f['allclose']}"
            + (f"  cudagraphs: {f['cudagraphs']}" if f["cudagraphs"] else "")
        )


def _error(v: Any, key: str) -> float | None:
    d = v.checks.get(key) or {}
    return d.get("error") if isinstance(d, dict) else None


def check_app_run(
    report: Report, tag: str, run: Any, cuda: bool, nvml: Nvml | None,
    figures: dict[str, Any], compile_timing: str,
) -> None:
    """Every check of one app run, from the folder it left."""
    cfg = run.config
    assert cfg is not None
    inference = cfg.workload == "inference"
    figs = variant_figures(run)
    figures["run_id"] = run.run_id
    figures["status"] = status_of(run.status)
    figures["message"] = run.message
    figures["measurement"] = run.measurement
    figures["variants"] = figs
    print_app_table(report, figs)
    variants = run.variants

    problems = [f"{n}: {v.error}" for n, v in variants.items() if v.error]
    done = [n for n, v in variants.items() if status_of(v.status) == "done"]
    report.check(
        f"{tag}.complete", "run complete, every variant done",
        status_of(run.status) == "complete" and len(done) == len(cfg.variants) and not problems,
        f"status {status_of(run.status)}; done: {', '.join(done) or 'none'}",
        "; ".join(problems)[:500] or run.message[:300],
    )

    errs = ", ".join(
        f"{n} {_error(v, 'output'):.2e}"
        + (f" (grads {_error(v, 'gradients'):.2e})" if _error(v, "gradients") is not None else "")
        for n, v in variants.items() if _error(v, "output") is not None
    )
    report.check(
        f"{tag}.correct", "every variant correct by the app's rule",
        bool(variants) and all(v.allclose is True for v in variants.values()),
        f"normwise error vs fp64: {errs}",
        "; ".join(p for v in variants.values() for p in (v.checks.get("problems") or []))[:500],
    )

    compiled = [n for n in cfg.variants if n in variants and n not in ("eager", "eager-aa")]
    _judge_error_vs_eager(report, tag, cfg, variants, compiled)
    if inference:
        _judge_replay_and_graphs(report, tag, cfg, variants, cuda)
        judge_graph_memory(report, tag, cfg, variants, cuda)
    _judge_floor(report, tag, run, cuda)
    _judge_device_time(report, tag, variants, cuda)

    peaks = {n: v.peak_memory_bytes for n, v in variants.items()}
    peak_text = ", ".join(f"{n} {format_bytes(p) if p is not None else '–'}" for n, p in peaks.items())
    kind = next((v.memory_kind for v in variants.values() if v.memory_kind), "")
    report.judge(
        cuda, f"{tag}.memory_differs",
        "each variant's own peak memory: eager's > 0 and not all the same",
        all(p is not None for p in peaks.values()) and (peaks.get("eager") or 0) > 0
        and len(set(peaks.values())) > 1,
        f"{kind}: {peak_text}",
        "on the CPU a tiny model's peaks fall inside memory already resident: reported only",
    )
    _judge_clock_readings(report, tag, run, cuda, nvml)
    _judge_nvml_in_run(report, tag, run, cuda, nvml)

    times = {n: (variants[n].compile_s, variants[n].compile_timing) for n in compiled}
    report.check(
        f"{tag}.compile_time", f"compile time reported per compiled variant ({compile_timing})",
        bool(times) and all(s is not None and s > 0 and t == compile_timing for s, t in times.values()),
        ", ".join(f"{n} {s if s is None else round(s, 2)} s {t}" for n, (s, t) in times.items()),
    )
    pipe = {n: v.pipelined_ms for n, v in variants.items()}
    report.check(f"{tag}.pipelined", "pipelined figure per variant",
                 bool(pipe) and all(p is not None and p > 0 for p in pipe.values()),
                 ", ".join(f"{n} {ms(p)}" for n, p in pipe.items()))
    if cfg.rounds > 1:
        got = {n: len(v.samples.measured_rounds()) for n, v in variants.items()}
        report.check(f"{tag}.rounds", f"{cfg.rounds} rounds recorded per variant",
                     bool(got) and all(g == cfg.rounds for g in got.values()),
                     ", ".join(f"{n} {g}" for n, g in got.items()))
    if not inference:
        judge_params_drift(report, tag, variants, compiled)
        judge_drift_judged_or_said(report, tag, variants, compiled)


def _judge_error_vs_eager(
    report: Report, tag: str, cfg: BenchmarkConfig, variants: dict[str, Any], compiled: list[str]
) -> None:
    bound: list[str] = []
    ok = bool(compiled)
    for n in compiled:
        own, eager = _error(variants[n], "output"), _error(variants[n], "eager_output")
        if own is None or eager is None:
            ok = False
            bound.append(f"{n} no figures")
            continue
        allowed = max(rule.EAGER_MULTIPLE * eager, rule.ERROR_FLOOR[cfg.dtype])
        ok = ok and own <= allowed
        bound.append(f"{n} {own:.2e} ≤ {allowed:.2e}")
    report.check(f"{tag}.error_vs_eager",
                 f"compiled error ≤ max({rule.EAGER_MULTIPLE:g}× eager's, the {cfg.dtype} floor)",
                 ok, ", ".join(bound))


def _judge_replay_and_graphs(
    report: Report, tag: str, cfg: BenchmarkConfig, variants: dict[str, Any], cuda: bool
) -> None:
    diffs = {n: v.checks.get("replay_max_diff") for n, v in variants.items()}
    report.check(f"{tag}.replay_identical",
                 "steady-state output bit-identical to the first (replay_max_diff == 0)",
                 bool(diffs) and all(d == 0 for d in diffs.values()),
                 ", ".join(f"{n} {d}" for n, d in diffs.items()))
    graphed = [n for n in cfg.variants if records_cudagraphs(n)]
    states = ", ".join(f"{n}: {variants[n].cudagraphs}" for n in graphed if n in variants)
    name = "CUDA graphs used by the CUDA-graph variants"
    if not graphed:
        report.skip(f"{tag}.cudagraphs_used", name,
                    "no CUDA-graph variant in this run" + ("" if cuda else f"; {CUDA_ONLY}"),
                    cuda_only=True)
    elif cuda:
        report.check(f"{tag}.cudagraphs_used", name,
                     all(n in variants and variants[n].cudagraphs == "used" for n in graphed),
                     states, cuda_only=True)
    else:
        report.skip(f"{tag}.cudagraphs_used", name, CUDA_ONLY, states, cuda_only=True)


def judge_graph_memory(
    report: Report, tag: str, cfg: BenchmarkConfig, variants: dict[str, Any], cuda: bool
) -> None:
    """A CUDA-graph variant holds its graphs' memory pool: its peak is no fraction of eager's."""
    id_ = f"{tag}.cudagraph_memory"
    name = (f"every CUDA-graph variant's peak memory ≥ {GRAPH_MEMORY_MIN:.0%} of eager's, "
            "allocated bytes as eager's (the recording counted, the second variant's too)")
    graphed = [n for n in cfg.variants if records_cudagraphs(n) and n in variants]
    eager = variants.get("eager")
    eager_peak = eager.peak_memory_bytes if eager is not None else None
    parts = [f"eager {format_bytes(eager_peak) if eager_peak is not None else '–'}"]
    for n in graphed:
        p = variants[n].peak_memory_bytes
        share = f" = {p / eager_peak:.0%}" if p is not None and eager_peak else ""
        parts.append(f"{n} {format_bytes(p) if p is not None else '–'}{share} "
                     f"({variants[n].memory_kind or 'no kind'})")
    figure = ", ".join(parts)
    if not cuda:
        report.skip(id_, name, CUDA_ONLY, figure, cuda_only=True)
    elif not graphed or eager is None:
        report.skip(id_, name, "no CUDA-graph variant and eager in this run", figure,
                    cuda_only=True)
    else:
        # every CUDA-graph variant, the second one into the pool too, and all in
        # allocated bytes as eager's figure is (never the pool's reserved segments)
        peaks = [variants[n].peak_memory_bytes for n in graphed]
        kinds = [variants[n].memory_kind or "" for n in graphed]
        ok = bool(eager_peak) and all(
            p is not None and p >= GRAPH_MEMORY_MIN * eager_peak for p in peaks
        ) and all(k.startswith("cuda_allocator_peak") and "graph_pools" not in k for k in kinds)
        report.check(id_, name, ok, figure, cuda_only=True)


def _judge_floor(report: Report, tag: str, run: Any, cuda: bool) -> None:
    m, variants = run.measurement, run.variants
    floor, floor_dev = m.get("harness_floor_ms"), m.get("harness_floor_device_ms")
    mins = {n: float(v.samples.measured_wall_ms().min()) for n, v in variants.items()
            if v.samples.measured_wall_ms().size}
    ok = floor is not None and bool(mins) and all(floor < x for x in mins.values())
    figure = f"floor {ms(floor, 5)}; fastest " + ", ".join(f"{n} {ms(x)}" for n, x in mins.items())
    if cuda:
        dev_mins = {n: float(d.min()) for n, v in variants.items()
                    if (d := v.samples.measured_device_ms()) is not None and d.size}
        ok = ok and floor_dev is not None and all(floor_dev < x for x in dev_mins.values())
        figure += f"; device floor {ms(floor_dev, 5)}"
    report.check(f"{tag}.harness_floor", "harness floor in run.json, below every variant's minimum",
                 ok, figure)


def _judge_device_time(report: Report, tag: str, variants: dict[str, Any], cuda: bool) -> None:
    name = "CUDA-event device time per call, ≤ host time"
    if not cuda:
        report.skip(f"{tag}.device_time", name, CUDA_ONLY, cuda_only=True)
        return
    lines, ok = [], bool(variants)
    for n, v in variants.items():
        wall, dev = v.samples.measured_wall_ms(), v.samples.measured_device_ms()
        has = dev is not None and len(dev) == len(wall) and len(wall) > 0
        below = has and float(statistics.median(dev)) <= float(statistics.median(wall)) * 1.02
        ok = ok and bool(below)
        lines.append(f"{n} {len(dev) if dev is not None else 0}/{len(wall)} "
                     + (f"dev {statistics.median(dev):.4f} ≤ host {statistics.median(wall):.4f}"
                        if has else ""))
    report.check(f"{tag}.device_time", name, ok, "; ".join(lines), cuda_only=True)


def _judge_clock_readings(report: Report, tag: str, run: Any, cuda: bool, nvml: Nvml | None) -> None:
    variants, m = run.variants, run.measurement
    starts = {n: (v.clock.get("start") or {}).get("mhz") for n, v in variants.items()}
    source = m.get("clock_source")
    clock_text = f"source {source}; start MHz " + ", ".join(f"{n} {s}" for n, s in starts.items())
    if cuda:
        name = "SM clock read at each timed window's edges"
        if not pynvml_installed():
            report.skip(f"{tag}.clock_readings", name, NO_PYNVML, clock_text, cuda_only=True)
        elif nvml is None:
            report.skip(f"{tag}.clock_readings", name, "no NVML on this machine", clock_text,
                        cuda_only=True)
        else:
            report.check(
                f"{tag}.clock_readings", name,
                source == "nvml_sm_clock" and all(s is not None for s in starts.values()),
                clock_text, cuda_only=True,
            )
    elif any(s is not None for s in starts.values()):
        report.check(f"{tag}.clock_readings", "core clock read at each timed window's edges",
                     all(s is not None for s in starts.values()), clock_text)
    else:
        report.skip(f"{tag}.clock_readings", "core clock read at each timed window's edges",
                    "this machine exposes no CPU frequency in sysfs", clock_text)


def _judge_nvml_in_run(report: Report, tag: str, run: Any, cuda: bool, nvml: Nvml | None) -> None:
    name = "NVML readings and the GPU's UUID kept in the run"
    if not cuda:
        report.skip(f"{tag}.nvml_in_run", name, CUDA_ONLY, cuda_only=True)
    elif not pynvml_installed():
        report.skip(f"{tag}.nvml_in_run", name, NO_PYNVML, cuda_only=True)
    elif nvml is None:
        report.skip(f"{tag}.nvml_in_run", name, "no NVML on this machine", cuda_only=True)
    else:
        folder_text = ""
        with contextlib.suppress(OSError):
            folder_text = run_json_text(report, run)
        has_uuid = bool(nvml.uuid) and nvml.uuid in folder_text.lower()
        report.check(
            f"{tag}.nvml_in_run", name, len(run.gpu_state) > 0 and has_uuid,
            f"{len(run.gpu_state)} gpu_state readings; UUID {nvml.uuid} "
            f"{'found' if has_uuid else 'not found'} in run.json", cuda_only=True,
        )


def judge_params_drift(
    report: Report, tag: str, variants: dict[str, Any], compiled: list[str]
) -> None:
    """Training: each compiled variant's parameters after the steps, against eager's, as a number."""
    drifts = {n: variants[n].checks.get("params_drift") for n in compiled}

    def number(d: object) -> bool:
        return isinstance(d, (int, float)) and not isinstance(d, bool) and math.isfinite(d)

    report.check(
        f"{tag}.params_drift",
        "parameter drift against eager is a number for every compiled variant (not left out)",
        bool(drifts) and all(number(d) for d in drifts.values()),
        ", ".join(f"{n} {d:.3g}" if number(d) else f"{n} {d}" for n, d in drifts.items())
        + "; steps: " + ", ".join(f"{n} {len(v.samples)}" for n, v in variants.items()),
    )


def judge_drift_judged_or_said(
    report: Report, tag: str, variants: dict[str, Any], compiled: list[str]
) -> None:
    """Training: each compiled variant's parameters judged against a bound, or the run says why not."""
    parts: list[str] = []
    ok = bool(compiled)
    for n in compiled:
        c = variants[n].checks if n in variants else {}
        bound, why = c.get("params_drift_bound"), c.get("params_drift_not_judged")
        if bound is not None:
            parts.append(f"{n} judged (drift {c.get('params_drift')}, bound {bound:.2g})")
        elif isinstance(why, str) and why:
            parts.append(f"{n} not judged, said why: {why[:160]}")
        else:
            ok = False
            parts.append(f"{n} neither judged nor said why (drift {c.get('params_drift')})")
    report.check(f"{tag}.params_judged_or_said",
                 "parameters after the check's steps judged by a bound, or the run says why not",
                 ok, "; ".join(parts))


CLOCK_START = ("clock_warm_start",
               f"SM clock at the start of round 1 ≥ {CLOCK_START_MIN:.0%} of the highest "
               "NVML reading in the run")
CLOCK_STEADY = ("clock_steady", "no clock-change warning in any timed window")


def judge_clocks(
    report: Report, tag: str, run: Any, cuda: bool, measure_t: float | None,
    sampler: ClockSampler | None,
) -> None:
    """The GPU at full clock when round 1 starts, and steady through every window.

    ``measure_t``: when the timed calls began (monotonic); with ``sampler``, the
    readings of this process's own NVML where the run has none of its own.
    """
    start_id, start_name = f"{tag}.{CLOCK_START[0]}", CLOCK_START[1]
    steady_id, steady_name = f"{tag}.{CLOCK_STEADY[0]}", CLOCK_STEADY[1]
    if not cuda:
        report.skip(start_id, start_name, CUDA_ONLY, cuda_only=True)
        report.skip(steady_id, steady_name, CUDA_ONLY, cuda_only=True)
        return
    variants = run.variants
    source = str(run.measurement.get("clock_source") or "")
    starts = {n: as_float((v.clock.get("start") or {}).get("mhz")) for n, v in variants.items()}
    edges = [as_float((v.clock.get(k) or {}).get("mhz")) for v in variants.values()
             for k in ("start", "end")]
    state = [as_float(r.get("sm_clock_mhz")) for r in run.gpu_state]
    readings = [x for x in state + edges if x is not None]
    if readings and all(s is not None for s in starts.values()) and starts:
        highest = max(readings)
        first = min(s for s in starts.values() if s is not None)
        report.check(
            start_id, start_name, first >= CLOCK_START_MIN * highest,
            "round 1 starts at " + ", ".join(f"{n} {s:.0f}" for n, s in starts.items() if s)
            + f" MHz; highest {highest:.0f} MHz ({len(state)} gpu_state readings and the "
            f"window edges); lowest start = {first / highest:.0%}", cuda_only=True,
        )
    elif sampler is not None and sampler.readings and measure_t is not None:
        first_s = sampler.first_after(measure_t)
        highest_s = sampler.highest()
        ok = first_s is not None and bool(highest_s) and first_s >= CLOCK_START_MIN * highest_s
        report.check(
            start_id, start_name, ok,
            f"round 1 starts at {first_s} MHz; highest {highest_s} MHz of "
            f"{len(sampler.readings)} readings by this process ({sampler.nvml.source}): the run "
            f"has none of its own (clock source: {source or 'none'})", cuda_only=True,
        )
    else:
        report.skip(start_id, start_name,
                    f"no SM clock readings: the run's clock source is {source or 'none'}"
                    + ("" if sampler is not None else " and this machine has no NVML"),
                    cuda_only=True)

    warnings = [w for v in variants.values() for w in v.warnings
                if all(word in w for word in CLOCK_WARNING)]
    changes = {n: as_float(v.clock.get("max_change")) for n, v in variants.items()}
    figure = ("largest change per window: "
              + ", ".join(f"{n} {c * 100:+.1f} %" if c is not None else f"{n} –"
                          for n, c in changes.items())
              + (f"; warnings: {' | '.join(warnings)[:400]}" if warnings else "; no warnings"))
    if not source.startswith("nvml"):
        report.skip(steady_id, steady_name,
                    f"the run read no SM clock (source: {source or 'none'})", figure, cuda_only=True)
        return
    report.check(
        steady_id, steady_name,
        not warnings and all(c is not None and abs(c) <= CLOCK_CHANGE_WARN for c in changes.values()),
        figure, cuda_only=True,
    )


def run_json_text(report: Report, run: Any) -> str:
    if report.runs_root is None:
        return ""
    for path in report.runs_root.glob(f"*{run.run_id}*/run.json"):
        return path.read_text(encoding="utf-8")
    for path in report.runs_root.glob("*/run.json"):
        text = path.read_text(encoding="utf-8")
        if run.run_id and run.run_id in text:
            return text
    return ""
