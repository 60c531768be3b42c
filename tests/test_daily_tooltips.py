"""Tooltips: every variant in the form says what it is; every summary table header says what it means."""

from __future__ import annotations

from PySide6.QtCore import Qt

from compile_studio.core.config import EnvironmentInfo
from compile_studio.core.variants import AA_CONTROL
from compile_studio.gui.config_panel import VARIANT_HELP, ConfigPanel
from compile_studio.gui.summary_table import SummaryTableModel
from compile_studio.results.report.formatting import HEADER_HELP, SUMMARY_HEADERS


def env(devices):
    return EnvironmentInfo(
        devices=tuple(devices),
        compile_modes=("default", "reduce-overhead", "max-autotune", "lite"),
        compile_backends=("inductor", "cudagraphs", "aot_eager"),
    )


def test_every_variant_has_a_tooltip_and_cuda_only_ones_are_marked_on_cpu(qtbot):
    panel = ConfigPanel()
    qtbot.addWidget(panel)
    panel.set_environment(env(["cpu"]))
    checklist = panel.variants_list
    names = checklist.choices()
    assert {"lite", "reduce-overhead", "cudagraphs"} <= set(names)
    for i in range(checklist.count()):
        assert checklist.item(i).toolTip(), names[i]
    assert "lite" in VARIANT_HELP and "noise floor" in VARIANT_HELP[AA_CONTROL]
    assert sorted(checklist.cuda_only_marked()) == ["cudagraphs", "reduce-overhead"]
    tip = checklist.item(names.index("cudagraphs")).toolTip()
    assert tip.startswith("Needs a CUDA device: on cpu")


def test_on_a_cuda_device_nothing_is_marked(qtbot):
    panel = ConfigPanel()
    qtbot.addWidget(panel)
    panel.set_environment(env(["cpu", "cuda:0"]))
    assert panel.variants_list.cuda_only_marked() == []  # auto resolves to cuda:0
    panel.device_combo.setCurrentText("cpu")
    assert sorted(panel.variants_list.cuda_only_marked()) == ["cudagraphs", "reduce-overhead"]


def test_every_summary_header_has_a_one_line_tooltip():
    model = SummaryTableModel()
    model.set_runs([("a", []), ("b", [])])
    headers = model.headers()
    assert set(SUMMARY_HEADERS) <= set(headers)
    for k, h in enumerate(headers):
        tip = model.headerData(k, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
        assert tip and "\n" not in tip and tip == HEADER_HELP[h]
