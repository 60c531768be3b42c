"""The plot panel: the four plot tabs over the series of one or more runs.

Data arrives through :meth:`PlotPanel.append` into preallocated numpy buffers
(grown by doubling) and is drawn only by :meth:`PlotPanel.refresh`, which the
window calls from a timer, so a burst of samples never costs a burst of
repaints. The panel shows data; it computes nothing but what it draws
(medians for the dashed lines, histogram counts).
"""

from __future__ import annotations

from typing import cast

import numpy as np
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QTabWidget, QWidget

from ...core.config import AS_GIVEN, BenchmarkConfig
from ...core.protocol import VariantStatus
from ...results import RunResult, summarize
from ...results.analysis.samples import PHASE_NAMES
from ...results.records.run_result import batch_text
from .buffers import PHASES, Series
from .distribution import DistributionTab
from .gpu_state import GpuStateTab
from .latency import LatencyTab
from .style import series_color
from .summary_bars import SummaryBar, SummaryBarsTab
from .tab import PlotTab, TabSpec, registered_tabs


def run_hint(config: BenchmarkConfig) -> str:
    """What Run will do with ``config``, in a few lines: shown before anything is plotted."""
    try:
        model = config.model_text()
    except Exception:  # noqa: BLE001 - a form being edited may not describe a model yet
        model = "the model"
    variants = ", ".join(config.variants) or "no variant chosen"
    rounds = f", in {config.rounds} rounds" if config.rounds > 1 else ""
    return (
        "Nothing measured yet.\n\n"
        f"Run (Ctrl+R) will time {model}, {batch_text(config, read_factory=True)}, "
        f"{'the dtype the factory gives' if config.dtype == AS_GIVEN else config.dtype}, "
        f"{config.workload} on {config.device}\n"
        f"variants: {variants}\n"
        f"{config.warmup} warm-up + {config.iterations} timed calls per variant{rounds}, "
        "then compare each median with eager's.\n\n"
        "Every call's latency appears here as it is measured."
    )


class PlotPanel(QTabWidget):
    """Tabs "Latency", "Distribution", "Summary" and "GPU" over the series of one or more runs.

    A series is one (run, variant), named by a key (``"<run id>/<variant>"``
    for a run's variants). A variant keeps one colour in every run shown (two
    variants never share one), and each run has its own line style (the first
    solid, the next dashed, dotted, …), so both can be read off a curve.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.series: dict[str, Series] = {}
        self._variant_colors: dict[str, int] = {}
        self._run_styles: dict[str, int] = {}
        #: the tabs by key, made from the registered ones (gui/plots/tab.py), in their order
        self.tabs: dict[str, PlotTab] = {}
        self.specs: dict[str, TabSpec] = {}
        for spec in registered_tabs():
            tab = spec.make(self)
            self.tabs[spec.key] = tab
            self.specs[spec.key] = spec
            index = self.addTab(tab, spec.title)
            if spec.tooltip:
                self.setTabToolTip(index, spec.tooltip)
        self.latency = cast(LatencyTab, self.tabs["latency"])
        self.distribution = cast(DistributionTab, self.tabs["distribution"])
        self.summary = cast(SummaryBarsTab, self.tabs["summary"])
        self.gpu = cast(GpuStateTab, self.tabs["gpu"])
        #: the plots themselves (what "Save plot" exports)
        self.latency_plot = self.latency.plot
        self.distribution_plot = self.distribution.plot
        self.summary_plot = self.summary.plot
        self.gpu_plot = self.gpu.plot
        self.currentChanged.connect(self._on_tab_changed)
        self._on_tab_changed(self.currentIndex())  # the tabs behind the first know they are

    # -- series -------------------------------------------------------------------------
    def clear(self) -> None:
        """Remove every series, summary bar and GPU reading."""
        for tab in self.tabs.values():
            tab.clear()
        self.series.clear()
        self._variant_colors.clear()
        self._run_styles.clear()

    @staticmethod
    def split_key(key: str) -> tuple[str, str]:
        """(run key, variant) of a series key ``"<run id>/<variant>"`` (run key "" without a run)."""
        run_key, sep, variant = key.partition("/")
        return (run_key, variant) if sep else ("", key)

    def add_series(self, key: str, label: str) -> None:
        """Add an empty curve ``key`` named ``label`` (its variant's colour, its run's line style);
        relabels an existing one."""
        s = self.series.get(key)
        if s is not None:
            s.label = label
            self._relabel(s)
            return
        run_key, variant = self.split_key(key)
        color_index = self._variant_colors.setdefault(variant, len(self._variant_colors))
        run_style = self._run_styles.setdefault(run_key, len(self._run_styles))
        s = Series(key, label, series_color(color_index))
        self.series[key] = s
        for tab in self.tabs.values():
            tab.add(s, run_style)

    def runs_shown(self) -> list[tuple[str, str, int]]:
        """(run key, name, line style) of each run plotted, in order; the name is the label
        prefix of its series ("" when its series carry bare variant names)."""
        out: list[tuple[str, str, int]] = []
        for run_key, style in self._run_styles.items():
            first = next((s for k, s in self.series.items() if self.split_key(k)[0] == run_key), None)
            name = ""
            if first is not None:
                variant = self.split_key(first.key)[1]
                label = first.label
                name = label[: -len(variant)] if variant and label.endswith(variant) else ""
                name = name.strip().rstrip("·").strip()
            out.append((run_key, name, style))
        return out

    def run_style_of(self, key: str) -> int:
        """The line style index of series ``key``'s run (0: solid, 1: dashed, …)."""
        return self._run_styles[self.split_key(key)[0]]

    def series_keys(self) -> list[str]:
        """Keys of the series, in the order they were added."""
        return list(self.series)

    def append(
        self, key: str, iterations: np.ndarray, wall_ms: np.ndarray, phase: str, round_index: int = -1
    ) -> None:
        """Buffer samples of series ``key`` (``phase`` "warmup" or "measure", measured in
        round ``round_index``, -1 when unknown); draws nothing."""
        self.series[key].append(iterations, wall_ms, phase, round_index)

    def set_series_failed(self, key: str, failed: bool) -> None:
        """Draw series ``key`` dashed and mark it "(failed)" in the legends, or undo that."""
        s = self.series[key]
        if s.failed != failed:
            s.failed = failed
            self._relabel(s)

    def _relabel(self, s: Series) -> None:
        for tab in self.tabs.values():
            tab.relabel(s)

    def color_of(self, key: str) -> QColor | None:
        """The colour of series ``key`` (None: no such series)."""
        s = self.series.get(key)
        return QColor(s.color) if s is not None else None

    def quartiles_of(self, key: str) -> tuple[float, float] | None:
        """(p25, p75) in ms of series ``key``'s measured calls shown (None: no such series or no call)."""
        s = self.series.get(key)
        if s is None or s.meas.count == 0:
            return None
        values = s.measured_values()
        if not len(values):
            return None
        p25, p75 = np.percentile(values, [25, 75])
        return float(p25), float(p75)

    def append_gpu_state(self, run_key: str, label: str, rows: list[dict]) -> None:
        """Buffer GPU readings of run ``run_key`` (dicts as in ``gpu_state.csv``); draws nothing.

        A new ``run_key`` gets its own colour and ``label`` (in the legend and hover text).
        """
        self.gpu.append(run_key, label, rows)

    # -- summary ------------------------------------------------------------------------------
    def set_summary(self, bars: list[SummaryBar]) -> None:
        """Draw each variant's median, p25–p75 box, p5–p95 whiskers and speedup."""
        self.summary.set_bars(bars)

    def summary_bars(self) -> list[SummaryBar]:
        """The bars of the summary tab, left to right."""
        return list(self.summary.bars)

    # -- view ---------------------------------------------------------------------------------
    def set_hint(self, text: str) -> None:
        """What the latency tab shows instead of empty axes while nothing is plotted ("": the axes)."""
        self.latency.set_hint(text)

    def set_log_scale(self, on: bool) -> None:
        """Switch the latency axis between linear and logarithmic."""
        self.latency.set_log_scale(on)

    def current_plot(self) -> QWidget:
        """The plot of the visible tab (on the GPU tab: its three plots, or the note shown instead)."""
        return self.current_tab().current_plot()

    def current_tab(self) -> PlotTab:
        """The visible tab (the first when none is)."""
        tab = self.currentWidget()
        return tab if isinstance(tab, PlotTab) else next(iter(self.tabs.values()))

    def current_spec(self) -> TabSpec:
        """The registration of the visible tab (its title and caption)."""
        tab = self.current_tab()
        return next(self.specs[k] for k, t in self.tabs.items() if t is tab)

    def _on_tab_changed(self, index: int) -> None:
        for tab in self.tabs.values():
            tab.hidden()
        shown = self.widget(index)
        if isinstance(shown, PlotTab):
            shown.shown()

    def refresh(self) -> None:
        """Redraw what changed since the last call from the buffers (cheap when nothing did)."""
        for tab in self.tabs.values():
            tab.tick()
        changed = [s for s in self.series.values() if s.dirty]
        if not changed:
            return
        for s in changed:
            s.dirty = False
        for tab in self.tabs.values():
            tab.redraw(changed)

    # -- whole runs ------------------------------------------------------------------------------
    def load_run(self, run: RunResult, key_prefix: str = "", label_prefix: str = "") -> None:
        """Add every variant of ``run`` as a series and merge its bars into the summary."""
        for name, v in run.variants.items():
            key = f"{key_prefix}{name}"
            self.add_series(key, f"{label_prefix}{name}")
            smp = v.samples
            it = smp.iteration_array().astype(np.float64)
            ms = smp.wall_array()
            codes = smp.phase_array()
            rounds = smp.round_array()
            # one append per stretch of one phase and round, found with numpy (no loop per call)
            starts = np.flatnonzero((np.diff(codes) != 0) | (np.diff(rounds) != 0)) + 1
            bounds = np.concatenate(([0], starts, [len(codes)])).tolist()
            for a, b in zip(bounds[:-1], bounds[1:]):
                if a == b:
                    continue
                name = PHASE_NAMES[int(codes[a])]
                r = int(rounds[a])
                self.append(key, it[a:b], ms[a:b], name if name in PHASES else "measure", -1 if r < 0 else r)
            self.set_series_failed(key, v.status == VariantStatus.FAILED)
        bars = (
            SummaryBar.from_row(row, f"{key_prefix}{row.name}", f"{label_prefix}{row.name}")
            for row in summarize(run)
        )
        new_bars = [b for b in bars if b is not None]
        keys = {b.key for b in new_bars}
        merged = [b for b in self.summary.bars if b.key not in keys] + new_bars
        self.set_summary(merged)
        if run.gpu_state:
            run_key = key_prefix.rstrip("/") or run.run_id
            label = label_prefix.strip().rstrip("·").strip()
            self.append_gpu_state(run_key, label or run.label or run.run_id, run.gpu_state)
        self.refresh()

