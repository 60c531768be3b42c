"""Export a run to a folder: CSVs, JSON and a Markdown report for an issue tracker."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from urllib.parse import quote

from ...core.config import format_bytes
from ..analysis.summary import SummaryRow, flop_rate_line, summarize
from ..explain.why import markdown_lines as why_markdown_lines
from ..records.run_result import RunResult
from ..storage.file_io import current_umask
from ..storage.run_files import (
    GPU_STATE_CSV,
    RUN_JSON,
    SAMPLES_CSV,
    SUMMARY_CSV,
    gpu_state_to_csv,
    run_to_json,
    samples_to_csv,
    summary_to_csv,
)
from .formatting import SUMMARY_HEADERS, markdown_table, run_context, summary_cells, verdict_lines
from .turns_text import turns_line


class ExportFailed(OSError):
    """An export that could not be written; nothing partial was left behind."""


#: Longest file-name stem an export writes.
_MAX_STEM = 120


def safe_file_stem(text: str, fallback: str = "run") -> str:
    """``text`` as a plain file-name part: letters, digits and ``_ . + -`` only.

    Names of exported files come from run content (a run id), which may come
    from someone else's ``run.json``: no separator, no leading dot, no ``..``
    survives, so the name can only mean a file in the chosen folder.
    """
    stem = re.sub(r"[^A-Za-z0-9_.+-]", "-", str(text))[:_MAX_STEM]
    stem = re.sub(r"\.{2,}", ".", stem).lstrip(".-")
    return stem or fallback


def _inside(folder: Path, path: Path) -> Path:
    """``path`` when it resolves to a file directly inside ``folder``; ExportFailed otherwise."""
    where = folder.resolve()
    target = where / path.name
    if path.name in ("", ".", "..") or target.resolve().parent != where:
        raise ExportFailed(f"refusing to write {path.name!r} outside {folder}")
    return target


def _write_all(files: dict[Path, bytes]) -> list[Path]:
    """Write every file through a temp file; rename only when all were written.

    Every file must land directly inside its folder (see :func:`_inside`);
    the files follow the user's umask like any other file they create.
    """
    files = {_inside(path.parent, path): data for path, data in files.items()}
    mode = 0o666 & ~current_umask()
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in files.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fchmod(fh.fileno(), mode)
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
    prefix = safe_file_stem(prefix, fallback="") if prefix else ""
    files = {
        folder / f"{prefix}{SAMPLES_CSV}": samples_to_csv(run).encode(),
        folder / f"{prefix}{SUMMARY_CSV}": summary_to_csv(run).encode(),
        folder / f"{prefix}{RUN_JSON}": run_to_json(run).encode(),
    }
    if run.gpu_state:
        files[folder / f"{prefix}{GPU_STATE_CSV}"] = gpu_state_to_csv(run).encode()
    return _write_all(files)


_MD_SPECIAL = re.compile(r"([\\`*<>~|#])")
_MD_SPECIAL_IN_TABLE = re.compile(r"([\\`*<>~#])")
#: an underscore that could start or end emphasis (``aot_eager`` stays as it is)
_MD_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def md_text(value: object, table: bool = False) -> str:
    """Text from a run as literal Markdown text: one line, markup characters escaped.

    ``table`` leaves ``|`` to the table writer, which escapes it itself.
    """
    text = " ".join(str(value).split())
    text = (_MD_SPECIAL_IN_TABLE if table else _MD_SPECIAL).sub(r"\\\1", text)
    # a link or image needs "](" or "][": an interval such as [0.9–1.1] stays as it is
    text = text.replace("](", "]\\(").replace("][", "]\\[")
    return _MD_UNDERSCORE.sub(r"\\_", text)


def md_code(value: object) -> str:
    """Text from a run as a one-line Markdown code span, whatever backticks it holds."""
    text = " ".join(str(value).split())
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_fence(text: str) -> str:
    """A fence longer than any run of backticks in ``text`` (it cannot close early)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def markdown_report(run: RunResult, plot_png: str | None = None, folder: str | Path | None = None) -> str:
    """A report ready to paste into a GitHub issue about torch.compile.

    Every text that comes from the run (ids, messages, names, environment)
    is escaped, so a crafted run.json cannot add links, images or markup.
    ``folder``: the run's folder, where its diagnostics and trials are read
    for "What to try" (default: the folder the run was read from).
    """
    lines = [f"# Compile Studio run {md_text(run.run_id)}", ""]
    lines.append(
        f"Status: **{md_text(run.status)}**" + (f" — {md_text(run.message)}" if run.message else "")
    )
    lines.append("")
    lines += _md_environment(run)
    lines += _md_configuration(run)
    rows = summarize(run)
    lines += _md_results(run, rows)
    lines += _md_notes(run, rows)
    lines += why_markdown_lines(run, md_text)
    lines += what_to_try_lines(run, folder if folder is not None else _run_folder(run), rows)
    peak = [r for r in rows if r.peak_memory_bytes]
    if peak:
        lines += ["", "Peak memory: " + ", ".join(
            f"{md_text(r.name)} {format_bytes(r.peak_memory_bytes or 0)}" for r in peak
        )]
    if plot_png:
        # a name the user typed may hold spaces or brackets: the link is percent-encoded
        lines += ["", f"![latency per iteration]({quote(plot_png, safe='+')})"]
    return "\n".join(lines) + "\n"


def _md_environment(run: RunResult) -> list[str]:
    """The report's Environment section: versions, device, CPU, OS and the run's context."""
    env = run.environment
    cfg = run.config
    lines = ["## Environment", ""]
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
            lines.append(f"- {key}: {md_code(value)}")
    lines.extend(f"- {key}: {md_text(value)}" for key, value in run_context(run) if key != "machine")
    return lines


def _md_configuration(run: RunResult) -> list[str]:
    """The report's Configuration section: the config as JSON, what was measured, the model's notes."""
    cfg = run.config
    config_json = json.dumps(cfg.to_dict() if cfg is not None else {}, indent=2, sort_keys=True)
    fence = md_fence(config_json)
    lines = ["", "## Configuration", "", f"{fence}json", config_json, fence, ""]
    if cfg is not None:
        lines.append(f"Measured: {md_text(run.title())}")
        lines.extend(f"- {md_text(note)}" for note in run.model_notes())
        lines.append("")
    return lines


def _md_results(run: RunResult, rows: list[SummaryRow]) -> list[str]:
    """The report's Results section: the table, how it was measured, rates, pauses, verdicts."""
    lines = ["## Results", ""]
    cells = [[md_text(c, table=True) for c in summary_cells(r)] for r in rows]
    lines.append(markdown_table(SUMMARY_HEADERS, cells))
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
    rate = flop_rate_line(run, rows)
    if rate:
        lines += ["", md_text(rate)]
    turns = turns_line(run)
    if turns:
        lines += ["", md_text(turns)]
    judged = [r for r in rows if r.verdict and r.name != "eager"]
    if judged:
        lines += ["", "### Verdict", ""]
        for r, line in zip(judged, verdict_lines(run, judged)):
            lines.append(f"- **{md_text(r.name)}**: {md_text(line[len(r.name) + 2:])}")
    return lines


def _md_notes(run: RunResult, rows: list[SummaryRow]) -> list[str]:
    """The report's Notes: failures, noise, failed checks, incorrect outputs and graph breaks."""
    problems = [
        r for r in rows if r.error or r.noisy or r.allclose is False or r.graph_breaks or r.checks
    ]
    if not problems:
        return []
    lines = ["", "### Notes", ""]
    for r in problems:
        name = md_text(r.name)
        if r.error:
            lines.append(f"- **{name}** failed: {md_text(r.error)}")
        if r.noisy:
            lines.append(f"- {name}: noisy (IQR {r.iqr_pct or 0:.0f} % of the median)")
        if r.checks:
            lines.append(f"- {name}: {md_text(r.checks)}")
        if r.allclose is False:
            from ..analysis.verdict import incorrect_text

            checks = run.variants[r.name].checks or {}
            said = incorrect_text(
                [str(p) for p in checks.get("problems") or []], str(checks.get("reference") or "fp64")
            )
            lines.append(f"- {name}: {md_text(said)}")
        if r.graph_breaks:
            reasons = run.variants[r.name].break_reasons
            lines.append(
                f"- {name}: {r.graph_breaks} graph break(s): "
                + "; ".join(md_text(x) for x in reasons[:3])
            )
    return lines


def _run_folder(run: RunResult) -> Path | None:
    """The folder ``run`` was read from (None for a run not read from a run folder)."""
    source = run.source
    try:
        return source if source is not None and source.is_dir() else None
    except OSError:
        return None


def what_to_try_lines(run: RunResult, folder: str | Path | None, rows: list[SummaryRow] | None = None) -> list[str]:
    """The report's "What to try" section: the ranked suggestions and, where tried, the verdict.

    Empty when nothing is suggested and nothing was tried. Every text from
    the run's files is escaped.
    """
    from ..suggestions.what_to_try import verdict_summary, what_to_try

    w = what_to_try(run, folder, rows)
    if not w.suggestions and not w.trials:
        return []
    out = ["", "### What to try", ""]
    if w.suggestions:
        out.append(
            "Ranked by the effect the run's evidence allows. A configuration change can be tried: "
            "`compile-studio-cli advise RUN --try N` runs the run's configuration (A) against it (B) "
            "in alternating rounds and judges it like a variant."
        )
        out.append("")
    for k, s in enumerate(w.suggestions, 1):
        where = f" \\[{md_text(s.variant)}\\]" if s.variant else ""
        if s.delta:
            change = f"config {md_code(s.delta_text())}"
        elif s.code is not None:
            change = f"code at {md_code(s.code.place or 'your code')}, shown, not tried"
        else:
            change = "shown, not tried"
        line = f"{k}. {md_text(s.title)}{where} — {change}"
        tried = w.tried(s)
        if tried is not None:
            said = verdict_summary(tried.suggestion)
            line += (
                f" — tried: **{md_text(tried.suggestion.verdict or 'no verdict')}** "
                f"({md_text(said.partition(' — ')[2] or said)})"
            )
        else:
            line += " — not tried yet" if s.delta else ""
        out.append(line)
    shown = {(s.rule, s.delta_text()) for s in w.suggestions}
    extra = []
    for t in w.trials:
        if t.record is not None:
            extra += [ts for ts in t.record.suggestions if (ts.rule, ts.delta_text()) not in shown]
    if extra:
        out += ["", "Tried earlier, no longer suggested:", ""]
        for ts in extra:
            out.append(
                f"- {md_text(ts.rule)} ({md_code(ts.delta_text() or 'no change')}): "
                f"**{md_text(ts.verdict or 'no verdict')}** ({md_text(verdict_summary(ts).partition(' — ')[2])})"
            )
    for t in w.damaged():
        out.append(f"- trial {md_text(t.folder.name)} cannot be read: {md_text(t.problem)}")
    return out


def export_markdown(
    run: RunResult,
    folder: str | Path,
    plot_png_bytes: bytes | None = None,
    name: str = "report",
    name_given: bool = False,
) -> list[Path]:
    """Write ``report.md`` (and ``report.png`` beside it when given). Raises ExportFailed.

    ``name_given``: ``name`` is the one the user typed (kept as typed, a plain file name);
    else it is made a safe file-name part (it may come from a run's content).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ExportFailed(f"cannot write to {folder}: no such folder")
    typed = Path(str(name)).name if name_given else ""
    name = typed if typed not in ("", ".", "..") else safe_file_stem(name, fallback="report")
    files: dict[Path, bytes] = {}
    png_name = None
    if plot_png_bytes is not None:
        png_name = f"{name}.png"
        files[folder / png_name] = plot_png_bytes
    files[folder / f"{name}.md"] = markdown_report(run, png_name).encode()
    return _write_all(files)
