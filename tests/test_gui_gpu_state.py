"""The GPU tab (NVML readings beside the latency): buffers, variant markers, overlays, the
"no readings" note, exports, and the readings' path from a worker process to the window.

No NVIDIA GPU here: readings are fed as events or RunResults, and a scripted worker
process (started through the worker-prefix setting, as a remote prefix would be)
emits ``gpu_state`` lines like the real one does on a CUDA run.
"""

from __future__ import annotations

import math
import re
import sys
import textwrap
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtGui import QImage

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.gui.image_export import save_plot_png, save_plot_svg
from compile_studio.gui.job_thread import JobThread
from compile_studio.gui.plots import GPU_QUANTITIES, NO_GPU_READINGS, PlotPanel
from compile_studio.jobs.run_job import RunJob
from compile_studio.launchers.supervisor import WORKER_PREFIX_ENV
from compile_studio.results import RunResult, RunStore, VariantResult, load_run
from support.gui_helpers import (
    RUN_TIMEOUT_MS,
    gpu_legend_labels,
    gpu_note_shown,
    gpu_run_keys,
    gpu_state_data,
    gpu_variant_bands,
    gpu_variant_boundaries,
    open_window,
    run_and_wait,
)

GPU_TAB = 3
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def panel(qtbot) -> PlotPanel:
    p = PlotPanel()
    qtbot.addWidget(p)
    p.resize(820, 520)
    p.show()
    qtbot.waitExposed(p)
    return p


def readings(n_eager: int = 40, n_default: int = 60, t0: float = 0.0, seed: int = 0) -> list[dict]:
    """A throttling run: clock 1980 → 1400 MHz in the middle of "default" as it heats up."""
    rng = np.random.default_rng(seed)
    rows = []
    total = n_eager + n_default
    for i in range(total):
        variant = "eager" if i < n_eager else "default"
        frac = i / total
        rows.append(
            {
                "t_s": round(t0 + 0.1 * i, 3),
                "gpu": 0,
                "variant": variant,
                "iteration": (i if i < n_eager else i - n_eager) * 5,
                "sm_clock_mhz": (1980.0 if i < n_eager + n_default // 2 else 1400.0) + float(rng.normal(0, 5)),
                "temperature_c": 60.0 + 25.0 * frac,
                "power_w": 300.0 + 50.0 * frac + float(rng.normal(0, 3)),
            }
        )
    return rows


def gpu_run(run_id: str, rows: list[dict]) -> RunResult:
    run = RunResult(run_id=run_id, created="2025-01-01T00:00:00", config=BenchmarkConfig(label=run_id), status="complete")
    for name in ("eager", "default"):
        v = VariantResult(name=name, status="done")
        v.samples.extend(0, "warmup", [2.0, 1.5], None)
        v.samples.extend(2, "measure", [1.0, 1.1, 0.9, 1.0], None)
        run.variants[name] = v
    run.gpu_state = rows
    return run


def test_batches_come_back_exactly_with_none_as_nan(panel):
    rows = readings(7, 9)
    rows[3]["sm_clock_mhz"] = None
    rows[4]["temperature_c"] = None
    rows[10]["power_w"] = None
    rows[11]["iteration"] = None
    for start in range(0, len(rows), 5):  # batches of 5, then 1
        panel.append_gpu_state("run1", "run 1", rows[start : start + 5])
        panel.refresh()
    data = gpu_state_data(panel, "run1")
    for col in ("t_s", "iteration", "sm_clock_mhz", "temperature_c", "power_w"):
        expected = np.array([math.nan if r[col] is None else r[col] for r in rows], dtype=float)
        assert np.array_equal(data[col], expected, equal_nan=True), col
    assert math.isnan(data["sm_clock_mhz"][3]) and math.isnan(data["power_w"][10])
    # copies: changing them does not change what is drawn
    data["t_s"][0] = -5
    assert gpu_state_data(panel, "run1")["t_s"][0] == 0.0
    # the curves show the same arrays (NaN leaves a gap)
    for q, _ in GPU_QUANTITIES:
        (curve,) = panel.gpu.plots[q].listDataItems()
        x, y = curve.getOriginalDataset()
        assert np.array_equal(x, [r["t_s"] for r in rows])
        assert np.array_equal(y, gpu_state_data(panel, "run1")[q], equal_nan=True)


def test_append_alone_draws_nothing_refresh_does_and_is_cheap_after(panel):
    panel.append_gpu_state("r", "r", readings(5, 5))
    (curve,) = panel.gpu.plots["sm_clock_mhz"].listDataItems()
    assert curve.getOriginalDataset()[0] is None or len(curve.getOriginalDataset()[0]) == 0
    assert gpu_note_shown(panel)
    panel.refresh()
    assert len(curve.getOriginalDataset()[0]) == 10
    assert not gpu_note_shown(panel)
    # nothing new: refresh leaves the drawn data alone (no setData)
    calls = []
    curve.sigPlotChanged.connect(lambda *_: calls.append(1))
    panel.refresh()
    assert calls == []
    panel.append_gpu_state("r", "r", readings(1, 0, t0=5.0))
    panel.refresh()
    assert calls and len(curve.getOriginalDataset()[0]) == 11


def test_load_run_shows_readings_with_variant_boundaries_where_the_tag_changes(panel):
    rows = readings(40, 60)
    # readings before the first latency sample carry no variant: no marker for them
    for row in rows[:2]:
        row["variant"] = row["iteration"] = None
    run = gpu_run("20250101-000000_a", rows)
    panel.load_run(run, key_prefix=f"{run.run_id}/")
    assert gpu_run_keys(panel) == [run.run_id]
    assert not gpu_note_shown(panel)
    assert gpu_variant_boundaries(panel, run.run_id) == [(0.2, "eager"), (4.0, "default")]
    # a lone run: bands in the latency colours of its variants, the last one to the last reading
    bands = gpu_variant_bands(panel, run.run_id)
    assert bands == [(0.2, 4.0, "eager"), (4.0, 9.9, "default")]
    for q, _ in GPU_QUANTITIES:
        assert len(panel.gpu.plots[q].listDataItems()) == 1
    assert np.array_equal(gpu_state_data(panel, run.run_id)["t_s"], [r["t_s"] for r in rows])
    # the hover text names the variant and iteration of a reading, with its values
    text = panel.gpu.hover_at(7.02)
    assert text is not None
    assert "t 7.0 s · default, iteration 150" in text
    clock, temp, power = re.search(r"(\d+) MHz · (\d+) °C · (\d+) W", text).groups()
    assert abs(int(clock) - 1400) < 30  # throttled by then
    assert int(temp) == round(rows[70]["temperature_c"]) and int(power) == round(rows[70]["power_w"])
    assert panel.gpu.hover_at(0.08).startswith("t 0.1 s · before the first call\n")


def test_live_readings_extend_the_last_band_and_add_a_boundary_when_the_variant_changes(panel):
    rows = readings(20, 20)
    panel.append_gpu_state("live", "live", rows[:10])
    panel.refresh()
    assert gpu_variant_boundaries(panel, "live") == [(0.0, "eager")]
    assert gpu_variant_bands(panel, "live") == [(0.0, 0.9, "eager")]
    panel.append_gpu_state("live", "live", rows[10:20])
    panel.refresh()
    assert gpu_variant_bands(panel, "live") == [(0.0, 1.9, "eager")]
    panel.append_gpu_state("live", "live", rows[20:])
    panel.refresh()
    assert gpu_variant_boundaries(panel, "live") == [(0.0, "eager"), (2.0, "default")]
    assert gpu_variant_bands(panel, "live")[-1] == (2.0, 3.9, "default")


def test_two_runs_overlaid_give_two_curves_per_plot_and_a_legend(panel):
    a = gpu_run("run-a", readings(40, 60, seed=1))
    b = gpu_run("run-b", readings(30, 50, seed=2))
    panel.load_run(a, key_prefix="run-a/", label_prefix="A · ")
    assert gpu_legend_labels(panel) == []  # one run: no legend needed
    panel.load_run(b, key_prefix="run-b/", label_prefix="B · ")
    assert gpu_run_keys(panel) == ["run-a", "run-b"]
    for q, _ in GPU_QUANTITIES:
        curves = panel.gpu.plots[q].listDataItems()
        assert len(curves) == 2
        assert curves[0].opts["pen"].color() != curves[1].opts["pen"].color()
    assert gpu_legend_labels(panel) == ["A", "B"]
    assert gpu_variant_boundaries(panel, "run-a") == [(0.0, "eager"), (4.0, "default")]
    assert gpu_variant_boundaries(panel, "run-b") == [(0.0, "eager"), (3.0, "default")]
    # overlaid runs: dashed lines only, no bands mixing on top of each other
    assert gpu_variant_bands(panel, "run-a") == [] and gpu_variant_bands(panel, "run-b") == []
    hover = panel.gpu.hover_at(3.5)
    assert hover.splitlines()[0].startswith("A: t 3.5 s · eager")
    assert hover.splitlines()[2].startswith("B: t 3.5 s · default")


def test_clear_empties_and_the_note_comes_back(panel):
    panel.setCurrentIndex(GPU_TAB)
    assert panel.tabText(GPU_TAB) == "GPU"
    assert gpu_note_shown(panel)
    assert panel.gpu.note.text() == NO_GPU_READINGS
    assert panel.current_plot() is panel.gpu.note
    panel.load_run(gpu_run("r", readings()), key_prefix="r/")
    assert not gpu_note_shown(panel)
    assert panel.current_plot() is panel.gpu_plot
    assert panel.gpu_plot.isVisible() and not panel.gpu.note.isVisible()
    panel.clear()
    assert gpu_run_keys(panel) == []
    assert gpu_note_shown(panel) and panel.gpu.note.isVisible()
    for q, _ in GPU_QUANTITIES:
        plot = panel.gpu.plots[q]
        assert plot.listDataItems() == []
        assert not [i for i in plot.items if type(i).__name__ in ("InfiniteLine", "LinearRegionItem") and i.isVisible()]
    with pytest.raises(KeyError):
        gpu_state_data(panel, "r")
    # a run without readings keeps the note
    panel.load_run(gpu_run("no-gpu", []), key_prefix="no-gpu/")
    assert gpu_note_shown(panel)


def test_png_and_svg_of_the_gpu_tab(panel, tmp_path):
    panel.add_series("r/eager", "eager")
    panel.add_series("r/default", "default")
    panel.append_gpu_state("r", "r", readings(120, 180))
    panel.refresh()
    panel.setCurrentIndex(GPU_TAB)
    plot = panel.current_plot()
    assert plot is panel.gpu_plot
    panel.gpu.hover_at(5.0)  # the hover line and label stay out of exports
    png = save_plot_png(plot, tmp_path / "gpu.png", scale=2)
    image = QImage(str(png))
    assert (image.width(), image.height()) == (plot.width() * 2, plot.height() * 2)
    colours = set()
    for x in range(0, image.width(), 7):
        for y in range(0, image.height(), 7):
            colours.add(image.pixel(x, y))
    assert len(colours) > 20  # curves, bands, axes, text: far from blank
    svg = tmp_path / "gpu.svg"
    save_plot_svg(plot, svg)
    text = svg.read_text()
    assert text.count("<path") + text.count("<polyline") > 10
    for words in ("SM clock (MHz)", "temperature (°C)", "power (W)", "seconds since GPU sampling started",
                  ">eager<", ">default<"):
        assert words in text, words
    assert "t 5.0 s" not in text  # the hover label is left out



def test_gpu_exports_carry_the_title_and_configuration_caption(qtbot, tmp_path):
    """Save plot on the GPU tab writes the caption the latency and distribution exports carry."""
    window = open_window(qtbot)
    window.resize(1280, 760)
    run = gpu_run("r1", readings(120, 180))
    run.config = BenchmarkConfig(layers="64,32,8", batch_size=16, label="hot card")
    window.show_run(run)
    window.plots.setCurrentIndex(GPU_TAB)
    plot = window.plots.current_plot()
    assert plot is window.plots.gpu_plot
    lines = window.exports.plot_caption_lines()
    assert lines[0] == "GPU state during the run — hot card"
    assert "MLP 64,32,8 · batch 16" in lines[1] and "dashed = where a variant starts" in lines[2]
    svg = tmp_path / "gpu.svg"
    assert window.exports.save_plot(svg)
    root = ET.parse(svg).getroot()
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    for words in ("GPU state during the run", "hot card", "MLP 64,32,8", "batch 16", "dashed = where a variant starts",
                  "SM clock (MHz)"):
        assert words in texts, words
    assert list(root.iter(f"{SVG}image")) == []
    png = tmp_path / "gpu.png"
    assert window.exports.save_plot(png, scale=1)
    image = QImage(str(png))
    assert (image.width(), image.height()) == (plot.width(), plot.height())
    top = [image.pixelColor(x, y).lightness() for x in range(0, image.width(), 2) for y in range(0, 24)]
    assert min(top) < 150  # the caption's dark text in the top rows
    # on screen the caption row stays empty and zero high
    label, layout = plot.export_caption_slot()
    assert label.text == "" and layout.rowMaximumHeight(0) == 0

def _scripted_worker(tmp_path) -> str:
    """A worker stand-in that speaks the protocol: samples and GPU readings for each variant."""
    script = tmp_path / "scripted_worker.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, sys
            config = json.loads(sys.stdin.readline())
            def emit(event):
                print(json.dumps(event), flush=True)
            emit({{"type": "{protocol.PHASE}", "variant": None, "phase": "build", "iterations": 0}})
            t = 0.0
            for v in config["variants"]:
                emit({{"type": "{protocol.PHASE}", "variant": v, "phase": "measure", "iterations": 4}})
                emit({{"type": "{protocol.SAMPLES}", "variant": v, "phase": "measure", "first_iteration": 0,
                      "wall_ms": [1.0, 1.1, 0.9, 1.0], "device_ms": None}})
                ts = [round(t + 0.1 * i, 3) for i in range(3)]
                t += 0.3
                emit({{"type": "{protocol.GPU_STATE}", "gpu": 0, "t_s": ts, "variant": [v] * 3,
                      "iteration": [1, 2, 3], "sm_clock_mhz": [1980, None, 1400],
                      "temperature_c": [60, 61, 62], "power_w": [300.5, 310.0, None]}})
                emit({{"type": "{protocol.VARIANT_DONE}", "variant": v, "status": "done"}})
            emit({{"type": "{protocol.DONE}", "status": "completed"}})
            """
        )
    )
    return f"{sys.executable} {script}"


def test_the_run_thread_brings_the_readings_of_each_gpu_state_event(qtbot, tmp_path, monkeypatch, tiny_config):
    from compile_studio.results.records.run_result import gpu_state_rows

    monkeypatch.setenv(WORKER_PREFIX_ENV, _scripted_worker(tmp_path))
    thread = JobThread()
    thread.runner = RunJob(BenchmarkConfig(**tiny_config), None, on_event=thread.relay_event)
    got: list[list[dict]] = []

    def on_event(part, event) -> None:
        if isinstance(event, protocol.GpuStateEvent):
            got.append(gpu_state_rows(event))

    thread.worker_event.connect(on_event)
    with qtbot.waitSignal(thread.finished_job, timeout=RUN_TIMEOUT_MS) as blocker:
        thread.start()
    thread.wait(10_000)
    run = blocker.args[0]
    assert run.status == "complete", run.message
    assert [len(batch) for batch in got] == [3, 3]
    assert got[0][0] == {
        "gpu": 0, "t_s": 0.0, "variant": "eager", "iteration": 1,
        "sm_clock_mhz": 1980, "temperature_c": 60, "power_w": 300.5,
    }
    assert got[0][1]["sm_clock_mhz"] is None and got[1][2]["power_w"] is None
    assert got[1][0]["variant"] == "aot_eager"
    assert [r for batch in got for r in batch] == run.gpu_state


def test_window_shows_live_readings_and_keeps_them_with_the_run(qtbot, tmp_path, monkeypatch, tiny_config):
    monkeypatch.setenv(WORKER_PREFIX_ENV, _scripted_worker(tmp_path))
    window = open_window(qtbot)
    run = run_and_wait(qtbot, window, BenchmarkConfig(**tiny_config))
    plots = window.plots
    assert gpu_run_keys(plots) == [run.run_id]
    data = gpu_state_data(plots, run.run_id)
    assert np.allclose(data["t_s"], [0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
    assert np.array_equal(data["sm_clock_mhz"], [1980, np.nan, 1400] * 2, equal_nan=True)
    assert gpu_variant_boundaries(plots, run.run_id) == [(0.0, "eager"), (0.3, "aot_eager")]
    assert not gpu_note_shown(plots)
    # the run folder keeps them and they come back from disk into the same tab
    folder = RunStore(window.store.root).list_runs()[0].folder
    assert (folder / "gpu_state.csv").is_file()
    reloaded = load_run(folder)
    assert len(reloaded.gpu_state) == 6
    window.plots.clear()
    window.plots.load_run(reloaded, key_prefix=f"{reloaded.run_id}/", label_prefix="")
    assert gpu_variant_boundaries(window.plots, reloaded.run_id) == [(0.0, "eager"), (0.3, "aot_eager")]
    # a second run rebuilds the views: the first one's readings are not shown with it
    run2 = run_and_wait(qtbot, window, BenchmarkConfig(**tiny_config))
    assert gpu_run_keys(window.plots) == [run2.run_id]
    assert len(gpu_state_data(window.plots, run2.run_id)["t_s"]) == 6
