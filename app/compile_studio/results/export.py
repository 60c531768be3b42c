"""Export a run to a folder: CSVs, JSON and a Markdown report for an issue tracker."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..config import format_bytes
from .formatting import SUMMARY_HEADERS, markdown_table, summary_cells
from .run_result import RunResult, summarize
from .store import (
    GPU_STATE_CSV,
    RUN_JSON,
    SAMPLES_CSV,
    SUMMARY_CSV,
    gpu_state_to_csv,
    run_to_json,
    samples_to_csv,
    summary_to_csv,
)


class ExportFailed(OSError):
    """An export that could not be written; nothing partial was left behind."""


def _write_all(files: dict[Path, bytes]) -> list[Path]:
    """Write every file through a temp file; rename only when all were written."""
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in files.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        for tmp, path in temps:
            os.replace(tmp, path)
    except OSError as exc:
        for tmp, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        where = next(iter(files)).parent
        raise ExportFailed(
            f"cannot write to {where}: {exc.strerror or exc}"
        ) from exc
    return list(files)


def export_run(run: RunResult, folder: str | Path, prefix: str = "") -> list[Path]:
    """Write ``samples.csv``, ``summary.csv``, ``run.json`` (and ``gpu_state.csv``
    when the run has GPU readings) of ``run`` into ``folder``.

    ``prefix`` is put before each file name. Raises :class:`ExportFailed`.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ExportFailed(f"cannot write to {folder}: no such folder")
    files = {
        folder / f"{prefix}{SAMPLES_CSV}": samples_to_csv(run).encode(),
        folder / f"{prefix}{SUMMARY_CSV}": summary_to_csv(run).encode(),
        folder / f"{prefix}{RUN_JSON}": run_to_json(run).encode(),
    }
    if run.gpu_state:
        files[folder / f"{prefix}{GPU_STATE_CSV}"] = gpu_state_to_csv(run).encode()
    return _write_all(files)


def markdown_report(run: RunResult, plot_png: str | None = None) -> str:
    """A report ready to paste into a GitHub issue about torch.compile."""
    env = run.environment
    cfg = run.config
    lines = [f"# Compile Studio run {run.run_id}", ""]
    lines.append(f"Status: **{run.status}**" + (f" — {run.message}" if run.message else ""))
    lines.append("")
    lines.append("## Environment")
    lines.append("")
    device = env.get("device") or (cfg.device if cfg is not None else "")
    dev_name = (env.get("device_names") or {}).get(device, "")
    for key, value in (
        ("torch", env.get("torch")),
        ("CUDA", env.get("cuda")),
        ("ROCm", env.get("rocm")),
        ("driver", env.get("driver")),
        ("device", f"{device} {dev_name}".strip()),
        ("CPU", env.get("cpu")),
        ("Python", env.get("python")),
        ("OS", env.get("os")),
        ("app", run.app_version),
    ):
        if value:
            lines.append(f"- {key}: `{value}`")
    lines += ["", "## Configuration", "", "```json"]
    import json

    lines.append(json.dumps(cfg.to_dict() if cfg is not None else {}, indent=2, sort_keys=True))
    lines += ["```", "", "## Results", ""]
    rows = summarize(run)
    lines.append(markdown_table(SUMMARY_HEADERS, [summary_cells(r) for r in rows]))
    lines.append("")
    in_rounds = any(r.interval_method == "rounds" for r in rows)
    method = (
        "The variants were measured in rounds run in alternating order (A B A B …); "
        "speedup = eager's median / the variant's, per round, with a 95 % interval "
        "from the spread of those per-round ratios. "
        if in_rounds
        else "The variants were measured one after the other (one round); speedup = eager's "
        "median / the variant's, with a 95 % block-bootstrap interval over runs of consecutive calls. "
    )
    lines.append(
        "Latencies are per call (median of the timed iterations, warm-up excluded). "
        + method
        + "Break-even = compile seconds / time saved per call, given only for a variant found faster."
    )
    judged = [r for r in rows if r.verdict and r.name != "eager"]
    if judged:
        lines += ["", "### Verdict", ""]
        lines.extend(f"- **{r.name}**: {r.verdict_text}" for r in judged)
    problems = [
        r for r in rows if r.error or r.noisy or r.allclose is False or r.graph_breaks or r.checks
    ]
    if problems:
        lines += ["", "### Notes", ""]
        for r in problems:
            if r.error:
                lines.append(f"- **{r.name}** failed: {r.error}")
            if r.noisy:
                lines.append(f"- {r.name}: noisy (IQR {r.iqr_pct:.0f} % of the median)")
            if r.checks:
                lines.append(f"- {r.name}: {r.checks}")
            if r.allclose is False:
                lines.append(f"- {r.name}: output differs from the fp64 reference beyond tolerance")
            if r.graph_breaks:
                reasons = run.variants[r.name].break_reasons
                lines.append(f"- {r.name}: {r.graph_breaks} graph break(s): " + "; ".join(reasons[:3]))
    peak = [r for r in rows if r.peak_memory_bytes]
    if peak:
        lines += ["", "Peak memory: " + ", ".join(f"{r.name} {format_bytes(r.peak_memory_bytes or 0)}" for r in peak)]
    if plot_png:
        lines += ["", f"![latency per iteration]({plot_png})"]
    return "\n".join(lines) + "\n"


def export_markdown(
    run: RunResult, folder: str | Path, plot_png_bytes: bytes | None = None, name: str = "report"
) -> list[Path]:
    """Write ``report.md`` (and ``report.png`` beside it when given). Raises ExportFailed."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ExportFailed(f"cannot write to {folder}: no such folder")
    files: dict[Path, bytes] = {}
    png_name = None
    if plot_png_bytes is not None:
        png_name = f"{name}.png"
        files[folder / png_name] = plot_png_bytes
    files[folder / f"{name}.md"] = markdown_report(run, png_name).encode()
    return _write_all(files)
