"""Growable numpy columns behind the plots: latency samples per series, GPU readings per run.

Columns are preallocated and doubled when full, so appending a batch costs
amortised O(batch) and drawing takes a view (``buf[:n]``) without copying.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtGui import QColor

#: The phases a latency sample is drawn in.
PHASES = ("warmup", "measure")

#: The GPU readings' quantities (keys of the readings) with their axis labels, top to bottom.
GPU_QUANTITIES: tuple[tuple[str, str], ...] = (
    ("sm_clock_mhz", "SM clock (MHz)"),
    ("temperature_c", "temperature (°C)"),
    ("power_w", "power (W)"),
)


class SampleBuffer:
    """Growable (x, y, flag) columns; ``monotonic`` while x never went down."""

    def __init__(self, capacity: int = 1024) -> None:
        self.x = np.empty(capacity, dtype=np.float64)
        self.y = np.empty(capacity, dtype=np.float64)
        self.flag = np.empty(capacity, dtype=np.bool_)
        self.n = 0
        self.monotonic = True

    def append(self, x: np.ndarray, y: np.ndarray, flag: bool = False) -> None:
        m = len(x)
        if m == 0:
            return
        need = self.n + m
        if need > len(self.x):
            cap = len(self.x)
            while cap < need:
                cap *= 2
            for name in ("x", "y", "flag"):
                old = getattr(self, name)
                new = np.empty(cap, dtype=old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)
        if self.monotonic:
            if m > 1 and np.any(np.diff(x) < 0):
                self.monotonic = False
            elif self.n and x[0] < self.x[self.n - 1]:
                self.monotonic = False
        self.x[self.n : need] = x
        self.y[self.n : need] = y
        self.flag[self.n : need] = flag
        self.n = need

    @property
    def xs(self) -> np.ndarray:
        return self.x[: self.n]

    @property
    def ys(self) -> np.ndarray:
        return self.y[: self.n]


class Series:
    """One (run, variant) curve: its name, colour, failed mark and samples.

    ``all`` keeps every sample in arrival order (flag: warm-up); ``warm`` and
    ``meas`` split them by phase for drawing. ``dirty`` is set by
    :meth:`append` and cleared by whoever draws.
    """

    def __init__(self, key: str, label: str, color: QColor) -> None:
        self.key = key
        self.label = label
        self.color = color
        self.failed = False
        self.all = SampleBuffer()
        self.warm = SampleBuffer(64)
        self.meas = SampleBuffer()
        self.warm_lo = math.inf
        self.warm_hi = -math.inf
        self.dirty = False

    def append(self, iterations: np.ndarray, wall_ms: np.ndarray, phase: str) -> None:
        """Buffer samples of ``phase`` ("warmup" or "measure"); raises ValueError on bad input."""
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
        x = np.asarray(iterations, dtype=np.float64).ravel()
        y = np.asarray(wall_ms, dtype=np.float64).ravel()
        if x.shape != y.shape:
            raise ValueError(f"{len(x)} iterations but {len(y)} latencies")
        if not len(x):
            return
        warm = phase == "warmup"
        self.all.append(x, y, warm)
        if warm:
            self.warm.append(x, y)
            self.warm_lo = min(self.warm_lo, float(x.min()))
            self.warm_hi = max(self.warm_hi, float(x.max()))
        else:
            self.meas.append(x, y)
        self.dirty = True

    @property
    def warmup_range(self) -> tuple[float, float] | None:
        """(first, last) warm-up iteration; None without warm-up samples."""
        if self.warm.n == 0:
            return None
        return (self.warm_lo, self.warm_hi)

    def legend_text(self) -> str:
        return f"{self.label} (failed)" if self.failed else self.label


class GpuReadings:
    """The GPU readings of one run as growable float columns (None → NaN).

    Keeps the variant tag of every reading and where the tag changes
    (``boundaries``), from which :meth:`segments` are cut.
    """

    COLUMNS = ("t_s", "iteration") + tuple(q for q, _ in GPU_QUANTITIES)

    def __init__(self) -> None:
        self.n = 0
        self.cols = {c: np.empty(256, dtype=np.float64) for c in self.COLUMNS}
        self.variants: list[str | None] = []
        #: (t, variant) where the variant tag changes (the first tagged reading included)
        self.boundaries: list[tuple[float, str]] = []
        self._last_tag: str | None = None
        self.monotonic = True

    def append(self, rows: list[dict]) -> None:
        m = len(rows)
        if m == 0:
            return
        need = self.n + m
        cap = len(self.cols["t_s"])
        if need > cap:
            while cap < need:
                cap *= 2
            for c, old in self.cols.items():
                new = np.empty(cap, dtype=np.float64)
                new[: self.n] = old[: self.n]
                self.cols[c] = new
        for c in self.COLUMNS:
            self.cols[c][self.n : need] = [as_float(row.get(c)) for row in rows]
        t = self.cols["t_s"][self.n : need]
        if self.monotonic:
            prev = self.cols["t_s"][self.n - 1] if self.n else -math.inf
            if np.any(np.diff(np.concatenate(([prev], t))) < 0):
                self.monotonic = False
        for i, row in enumerate(rows):
            tag = row.get("variant")
            tag = None if tag is None else str(tag)
            self.variants.append(tag)
            if tag is not None and tag != self._last_tag:
                if math.isfinite(t[i]):
                    self.boundaries.append((float(t[i]), tag))
                self._last_tag = tag
        self.n = need

    def column(self, name: str) -> np.ndarray:
        return self.cols[name][: self.n]

    def segments(self) -> list[tuple[float, float, str]]:
        """(start t, end t, variant) of each stretch of readings with one variant tag."""
        if not self.boundaries:
            return []
        t = self.column("t_s")
        finite = t[np.isfinite(t)]
        end = float(finite.max()) if len(finite) else self.boundaries[-1][0]
        out = []
        for i, (t0, tag) in enumerate(self.boundaries):
            t1 = self.boundaries[i + 1][0] if i + 1 < len(self.boundaries) else max(end, t0)
            out.append((t0, t1, tag))
        return out


def as_float(value: object) -> float:
    """A reading as a float; None (or anything unreadable) as NaN."""
    if value is None:
        return math.nan
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
