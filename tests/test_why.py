"""Why is it faster or slower: diagnostics from real workers, the sentence, the view and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from compile_studio import cli
from compile_studio.config import BenchmarkConfig
from compile_studio.engine.diagnostics import CALL_MARK, is_gemm, profile_figures
from compile_studio.results import RunStore, load_run
from compile_studio.results.export import markdown_report
from compile_studio.results.formatting import verdict_lines
from compile_studio.results.schema import RunDamaged
from compile_studio.results.why import (
    Evidence,
    classify,
    load_why,
    peak_tflops,
    read_text_file,
    sentence,
    trace_file,
)
from compile_studio.session import RunSession

BASE = {
    "layers": "32,32,8", "batch_size": 4, "device": "cpu", "iterations": 12, "warmup": 2,
    "warmup_min_ms": 0, "rounds": 2, "compile_timing": "in_run",
}


@pytest.fixture(scope="module")
def cold_run(tmp_path_factory):
    """One real worker: eager and Inductor (default) compiled with a fresh, empty cache."""
    config = BenchmarkConfig.from_dict({**BASE, "variants": ["eager", "default"], "compile_cache": "cold"})
    outcome = RunSession(config, RunStore(tmp_path_factory.mktemp("why") / "runs")).run()
    assert outcome.run.status == "complete", outcome.run.message
    assert outcome.folder is not None
    return outcome


@pytest.mark.inductor
def test_each_variant_leaves_a_chrome_trace_of_its_profiled_calls(cold_run):
    report = load_why(cold_run.folder)
    assert set(report.variants) == {"eager", "default"}, report.absent
    for name, v in report.variants.items():
        assert v.trace == trace_file(name)
        doc = json.loads((cold_run.folder / v.trace).read_text())
        marks = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith(CALL_MARK)]
        assert v.profile is not None and len(marks) == v.profile.calls >= 1
        assert any(str(e.get("name", "")).startswith("aten::") for e in doc["traceEvents"])


@pytest.mark.inductor
def test_the_profile_is_taken_outside_the_timed_window(cold_run):
    run = load_run(cold_run.folder)
    for v in run.variants.values():
        assert v.samples.count("measure") == BASE["iterations"]
        assert v.samples.count("warmup") == BASE["warmup"]
        # no profiled call slipped in: the iterations are the planned ones, in order
        assert v.samples.iteration == list(range(BASE["warmup"] + BASE["iterations"]))
    lines = (cold_run.folder / "samples.csv").read_text().splitlines()
    assert len(lines) == 1 + 2 * (BASE["warmup"] + BASE["iterations"])


@pytest.mark.inductor
def test_named_compile_phases_cover_a_cold_compile(cold_run):
    run = load_run(cold_run.folder)
    c = load_why(cold_run.folder).variants["default"].compile
    assert c is not None and c.cache["fx_graph_misses"] >= 1  # really cold
    named = sum(c.phases.values())
    assert named / run.variants["default"].compile_s >= 0.8, c.phases
    assert c.phases["Dynamo tracing"] > 0 and c.phases["C++/Triton build"] > 0


@pytest.mark.inductor
def test_inductors_output_code_is_kept_with_its_kernels(cold_run):
    v = load_why(cold_run.folder).variants["default"]
    assert v.code and v.code[0].file is not None
    text = read_text_file(cold_run.folder, v.code[0].file)
    assert "def call(" in text and v.code[0].fused >= 1
    assert v.profile is not None and v.profile.fused_kernels_in_code >= 1
    with pytest.raises(RunDamaged):
        read_text_file(cold_run.folder, "../run.json")


@pytest.mark.inductor
def test_the_why_command_and_the_report_say_why(cold_run, capsys):
    assert cli.main(["why", str(cold_run.folder)]) == 0
    out = capsys.readouterr().out
    run = load_run(cold_run.folder)
    # which sentence depends on this run's own figures (the classifier is tested table-driven)
    said = sentence(run, "default")
    assert said
    for words in ("== eager", "== default", f"why: {said}", "phases:", "Dynamo tracing",
                  "output code:", "ui.perfetto.dev", "graph breaks: none"):
        assert words in out
    assert cli.main(["why", str(cold_run.folder), "no-such-variant"]) == 2
    assert "### Why" in markdown_report(run)
    assert any(f"why: {said}" in line for line in verdict_lines(run))


@pytest.mark.inductor
def test_the_why_view_shows_a_real_run(cold_run, qtbot):
    from compile_studio.gui.why_view import WhyView

    view = WhyView()
    qtbot.addWidget(view)
    view.show_folder(load_run(cold_run.folder), cold_run.folder)
    assert view.variant_box.currentText() == "default"
    assert view.sentence.text() == sentence(load_run(cold_run.folder), "default")
    assert view.ops.rowCount() > 0 and view.phases.bars
    assert "def call(" in view.code.toPlainText()
    assert "ui.perfetto.dev" in view.trace_label.text()
    view.variant_box.setCurrentText("eager")
    assert view.ops.item(0, 0).text()


BREAKING = '''
import torch
from torch import nn


class Chatty(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.a(x))
        print("compile studio test: a print in forward")
        return self.b(h)


def make_model():
    return Chatty(), (torch.randn(4, 16),)
'''


def test_a_graph_break_is_shown_with_its_reason_and_source_line(tmp_path, capsys):
    path = tmp_path / "chatty.py"
    path.write_text(textwrap.dedent(BREAKING))
    config = BenchmarkConfig.from_dict(
        {**BASE, "iterations": 4, "warmup": 1, "variants": ["eager", "aot_eager"],
         "model": "custom", "factory": f"{path}:make_model"}
    )
    outcome = RunSession(config, RunStore(tmp_path / "runs")).run()
    assert outcome.run.status == "complete", outcome.run.message
    v = load_why(outcome.folder).variants["aot_eager"]
    assert v.graph_breaks, v.missing
    b = v.graph_breaks[0]
    line = BREAKING.splitlines().index('        print("compile studio test: a print in forward")') + 1
    assert Path(b.file).name == "chatty.py" and b.line == line
    assert b.source.startswith("print(") and "print" in b.reason
    assert cli.main(["why", str(outcome.folder), "aot_eager"]) == 0
    assert f"chatty.py:{line}" in capsys.readouterr().out


def _isolated(check: str) -> None:
    """Run ``why_in_process.<check>`` in a Python process of its own; its assertions decide."""
    here = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here), str(here.parent / "app")])}
    done = subprocess.run(
        [sys.executable, "-c", f"import why_in_process as m; m.{check}()"],
        capture_output=True, text=True, env=env, timeout=240,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_a_batch_change_without_dynamic_shapes_is_a_recompile_with_its_guard_reason():
    _isolated("check_recompile_with_its_guard_reason")


def test_a_hit_recompile_limit_is_reported():
    _isolated("check_hit_recompile_limit")


def test_the_seed_mlp_is_gemm_bound_and_a_tiny_one_dispatch_bound():
    _isolated("check_seed_mlp_gemm_bound_tiny_dispatch_bound")


E = Evidence
CASES = [
    (E("eager", "cuda", ms=0.05, kernels=6, busy=0.3, gemm_share=0.1),
     E("default", "cuda", ms=0.03, kernels=3, busy=0.5, gemm_share=0.2),
     "eager spends 70 % of each call launching 6 kernels; default fuses them into 3; "
     "try reduce-overhead to remove launches"),
    (E("eager", "cuda", ms=0.05, kernels=6, busy=0.3),
     E("reduce-overhead", "cuda", ms=0.01, kernels=3, busy=0.8, cudagraphs=True),
     "eager spends 70 % of each call launching 6 kernels; reduce-overhead fuses them into 3; "
     "its CUDA graph replays them with one launch"),
    (E("eager", "cuda", ms=1.0, kernels=3, busy=0.95, gemm_share=0.9, flops_per_call=8.4065e11,
       peak_tflops=989.0),
     E("default", "cuda", ms=1.0, kernels=3, busy=0.95, gemm_share=0.9, flops_per_call=8.4065e11,
       peak_tflops=989.0),
     "both run the same GEMM kernels at 85 % of peak; compile cannot help here"),
    (E("eager", "cpu", ms=0.03, kernels=3, busy=0.45, gemm_share=0.2),
     E("aot_eager", "cpu", ms=0.04, kernels=5, busy=0.3),
     "eager is dispatch-bound: 3 operators of 10 µs each, 55 % of each call outside any "
     "operator; aot_eager still runs 5; on CPU this fixed cost stays in every call — a larger "
     "batch amortises it"),
    (E("eager", "cpu", ms=0.055, kernels=5, busy=0.99, gemm_share=0.3),
     E("default", "cpu", ms=0.057, kernels=5, busy=0.6),
     "eager is dispatch-bound: 5 operators of 11 µs each — too little work each to outweigh "
     "the cost of dispatching it; default still runs 5; on CPU this fixed cost stays in every "
     "call — a larger batch amortises it"),
    (E("eager", "cuda", ms=0.03, kernels=6, busy=0.8),
     E("default", "cuda", ms=0.02, kernels=2, busy=0.7),
     "eager is launch-bound: 6 kernels of 5 µs each, 20 % of each call outside any kernel; "
     "default fuses them into 2; try reduce-overhead to remove launches"),
    (E("eager", "cpu", ms=5.0, kernels=5, busy=0.97, gemm_share=0.92, gemm_per_call=3,
       flops_per_call=0.8e9),
     E("default", "cpu", ms=5.0, kernels=5, busy=0.97, gemm_share=0.93),
     "eager is compute-bound: GEMMs hold 92 % of each call (3 per call, 160.0 GFLOP/s); "
     "default runs the same library GEMMs — compile cannot help here"),
    (E("eager", "cpu", ms=2.0, kernels=10, busy=0.9, gemm_share=0.2),
     E("default", "cpu", ms=1.0, kernels=4, busy=0.9, gemm_share=0.4),
     "operators other than GEMMs take 70 % of each eager call (10 operators); default fuses "
     "them into 4 — this is where compile helps"),
    (E("eager", "cpu", ms=2.0, kernels=10, busy=None), None,
     "no profile of eager: nothing can be said about why"),
]


@pytest.mark.parametrize(("eager", "other", "expected"), CASES)
def test_the_sentence_from_its_evidence(eager, other, expected):
    assert classify(eager, other) == expected


def test_peaks_are_known_only_for_the_gpus_in_the_table():
    assert peak_tflops("NVIDIA H100 PCIe", "bf16") == 756.0
    assert peak_tflops("NVIDIA H100 80GB HBM3", "bf16") == 989.0
    assert peak_tflops("NVIDIA H200", "bf16") == 989.0
    assert peak_tflops("NVIDIA A100-SXM4-80GB", "bf16") is None
    assert peak_tflops(None, "bf16") is None


def test_a_damaged_why_file_is_read_as_far_as_it_fits(tmp_path):
    (tmp_path / "why.json").write_text(json.dumps({"variants": {
        "default": {"profile": {"calls": "many", "ops": [{"name": 3, "share": 0.5}] * 3},
                    "graph_breaks": [{"reason": "r", "line": "x"}], "compile": [],
                    "output_code": [{"path": "/etc/passwd", "file": "../../etc/passwd"}]},
        "": {}, "x" * 500: {},
    }}))
    report = load_why(tmp_path)
    v = report.variants["default"]
    assert v.profile is not None and v.profile.calls is None and len(v.profile.ops) == 3
    assert v.graph_breaks[0].line is None and v.compile is None
    assert v.code[0].file is None  # file names come from the variant name, never from the file
    assert report.problems and set(report.variants) == {"default"}
    (tmp_path / "why.json").write_text("{not json")
    assert "damaged" in load_why(tmp_path).absent
    assert "no why.json" in load_why(tmp_path / "nowhere").absent


def _event(name, start, end, parent=None, device="CPU", self_us=None):
    e = SimpleNamespace(
        name=name, time_range=SimpleNamespace(start=start, end=end), cpu_parent=parent,
        cpu_children=[], device_type=SimpleNamespace(name=device),
        self_cpu_time_total=(end - start) if self_us is None else self_us,
    )
    if parent is not None:
        parent.cpu_children.append(e)
    return e


def test_cuda_figures_count_kernels_busy_time_and_gemms_apart_from_fused_epilogues():
    events = []
    for k in range(2):
        t = 1000 * k
        mark = _event(f"{CALL_MARK} {k}", t, t + 100, self_us=20)
        op = _event("aten::addmm", t + 10, t + 90, mark)
        events += [mark, op]
        events.append(_event("ampere_sgemm_128x64_tn", t + 20, t + 50, device="CUDA"))
        events.append(_event("triton_poi_fused_addmm_gelu_0", t + 55, t + 65, device="CUDA"))
    figures = profile_figures(events, cuda=True)
    assert figures["calls"] == 2 and figures["kernels_per_call"] == 2
    assert figures["busy"] == pytest.approx(0.4) and figures["gemm_share"] == pytest.approx(0.3)
    assert figures["gemm_per_call"] == 1 and figures["ops_per_call"] == 1
    assert figures["kernels"][0]["name"] == "ampere_sgemm_128x64_tn"
    assert figures["kernels"][0]["self_ms_per_call"] == pytest.approx(0.03)
    assert not is_gemm("triton_poi_fused_addmm_gelu_0") and is_gemm("aten::mm")
    assert not is_gemm("aten::gelu") and is_gemm("sm90_xmma_gemm_bf16bf16")


def test_diagnostics_off_sends_nothing_and_costs_nothing():
    _isolated("check_diagnostics_off")


@pytest.mark.inductor
def test_the_table_says_why_beside_the_verdict(cold_run, qtbot):
    from PySide6.QtCore import Qt

    from compile_studio.gui.main_window import MainWindow

    window = MainWindow(probe=False)
    qtbot.addWidget(window)
    run = load_run(cold_run.folder)
    assert window.show_run(run, alone=True)
    model = window.table_model
    i = next(k for k, r in enumerate(model.rows()) if r.row.name == "default")
    tip = model.data(model.index(i, model.headers().index("verdict")), Qt.ItemDataRole.ToolTipRole)
    assert tip.endswith(f"Why: {sentence(run, 'default')}")
