"""One achieved-FLOP/s figure: ``show``, ``why``, the report and summary.csv agree on one saved run.

The figure is FLOPs per call (torch's FlopCounterMode count the run recorded, else the MLP's
analytic count) ÷ the variant's median time per call (results.analysis.summary.FLOP_RATE_DEFINITION).
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from compile_studio.cli import commands as cli
from compile_studio.results import load_run, summarize
from compile_studio.results.analysis.summary import (
    FLOP_RATE_DEFINITION,
    achieved_tflops,
    flop_rate_line,
    fmt_flop_rate,
    run_flops_per_call,
)
from compile_studio.results.explain.why import why_text
from compile_studio.results.explain.why_files import load_why
from compile_studio.results.explain.why_rules import evidence
from compile_studio.results.report.run_export import markdown_report

#: ``45.2 GFLOP/s`` or ``1.3 TFLOP/s`` wherever a rate is printed
RATE = re.compile(r"\d[\d.e+-]* [GT]FLOP/s")


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory, worker_fork_server) -> Path:
    """One real tiny run with diagnostics (the profile the Why view reads), saved to disk."""
    from support import worker_zygote

    out = tmp_path_factory.mktemp("flops")
    with worker_zygote.forked_workers(worker_fork_server):
        code = cli.main([
            "run", "--layers", "64,128,10", "--batch-size", "16", "--device", "cpu",
            "--iterations", "20", "--warmup", "2", "--warmup-min-ms", "0", "--rounds", "2",
            "--variants", "eager,aot_eager", "--compile-timing", "in_run", "--quiet", "--out", str(out),
        ])
    assert code == 0
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def _rates(text: str) -> dict[str, str]:
    """``{variant: "45.2 GFLOP/s"}`` from an ``achieved: eager 45.2 GFLOP/s, aot_eager …`` line."""
    line = next(x for x in text.splitlines() if x.startswith("achieved: "))
    listed = line[len("achieved: "):].split(" (")[0]
    return {name: rate for name, rate in (part.split(" ", 1) for part in listed.split(", "))}


def test_show_why_report_and_summary_csv_give_the_same_figure(saved_run, capsys):
    assert cli.main(["show", str(saved_run)]) == 0
    shown = _rates(capsys.readouterr().out)
    assert set(shown) == {"eager", "aot_eager"}

    assert cli.main(["why", str(saved_run)]) == 0
    why_out = capsys.readouterr().out
    per_variant = {}
    for block in why_out.split("== ")[1:]:
        name = block.split(" ", 1)[0]
        line = next(x for x in block.splitlines() if x.startswith("achieved: "))
        per_variant[name] = line[len("achieved: "):].split(" (")[0]
    assert per_variant == shown
    # a rate inside a sentence is the same figure too
    assert set(RATE.findall(why_out)) <= set(shown.values())

    run = load_run(saved_run)
    report = markdown_report(run)
    assert report.count("achieved: ") == 1  # once, whether or not the run has diagnostics
    assert _rates(report) == shown
    assert set(RATE.findall(report)) <= set(shown.values())

    with open(saved_run / "summary.csv", newline="", encoding="utf-8") as f:
        stored = {row["name"]: row["tflops"] for row in csv.DictReader(f)}
    for name, text in shown.items():
        assert fmt_flop_rate(float(stored[name])) == text


def test_the_figure_is_counted_flops_over_the_median(saved_run):
    run = load_run(saved_run)
    flops, source = run_flops_per_call(run)
    assert source == "counted" and flops == run.measurement["flops_per_call"]
    for row in summarize(run):
        assert row.tflops == pytest.approx(flops / (row.median_ms / 1000.0) / 1e12)
    line = flop_rate_line(run)
    assert line is not None and "counted by torch's FlopCounterMode / median time per call" in line
    assert "FlopCounterMode" in FLOP_RATE_DEFINITION and "median time per call" in FLOP_RATE_DEFINITION


def test_the_why_figure_is_the_summarys_with_or_without_samples(saved_run):
    """The Why tab reads a run listed without samples: its rate still uses the median, never the
    profiled calls' time."""
    with_samples = load_run(saved_run)
    listed = load_run(saved_run, samples=False)
    rows = {r.name: r for r in summarize(with_samples)}
    for run in (with_samples, listed):
        for name in ("eager", "aot_eager"):
            e = evidence(run, name)
            assert e is not None
            assert e.tflops == pytest.approx(rows[name].tflops)
            assert e.ms == pytest.approx(rows[name].median_ms)
    text = why_text(listed, load_why(saved_run))
    assert f"achieved: {fmt_flop_rate(rows['eager'].tflops)}" in text


def test_a_run_without_a_count_falls_back_on_the_mlps_analytic_flops(saved_run):
    run = load_run(saved_run)
    counted = dict(run.measurement)
    counted.pop("flops_per_call")
    bare = replace(run, measurement=counted)
    flops, source = run_flops_per_call(bare)
    assert source == "analytic" and flops == run.config.flops_per_call()
    median = summarize(run)[0].median_ms
    assert achieved_tflops(flops, median) == pytest.approx(flops / (median / 1000.0) / 1e12)
    e = evidence(bare, "eager")
    assert e is not None and e.tflops == pytest.approx(achieved_tflops(flops, e.ms))
    assert "from the MLP's layer sizes" in markdown_report(bare)


def test_rates_are_written_alike():
    assert fmt_flop_rate(0.0193) == "19.3 GFLOP/s"
    assert fmt_flop_rate(0.16) == "160.0 GFLOP/s"
    assert fmt_flop_rate(2.5) == "2.5 TFLOP/s"
    assert fmt_flop_rate(0.0004) == "0.4 GFLOP/s"
    assert fmt_flop_rate(None) == "–"
    assert achieved_tflops(None, 1.0) is None and achieved_tflops(1e9, 0.0) is None
    assert json.dumps(achieved_tflops(2e9, 1.0)) == "2.0"
