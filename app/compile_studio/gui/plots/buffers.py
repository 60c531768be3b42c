"""Growable numpy columns behind the plots: latency samples per series, GPU readings per run.

Columns are preallocated and doubled when full, so appending a batch costs
amortised O(batch) and drawing takes a view (``buf[:n]``) without copying.
A latency curve keeps at most DISPLAY_POINTS points: a longer run is
decimated for display (min and max of each stretch of calls), so the window's
memory stays bounded at a million calls; the full data is in the run folder.
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


#: Most points one live curve keeps for display; beyond it the buffer is decimated
#: (min and max of each stretch of calls kept, so spikes stay visible).
DISPLAY_POINTS = 131_072
#: Measured latencies kept as a uniform sample for statistics of the display (median, histogram).
SAMPLE_POINTS = 65_536


class SampleBuffer:
    """Growable (x, y, flag) columns; ``monotonic`` while x never went down.

    With ``max_points`` the buffer holds at most that many points (plus a
    partial stretch): once full, every four points are folded into the two
    of them with the lowest and the highest y (in x order), and later samples
    are gathered in stretches of ``stride`` calls of which the min and max
    are kept. Memory stays bounded however long the run, and every peak
    stays drawn. ``count`` is the number of samples appended.
    """

    def __init__(self, capacity: int = 1024, max_points: int | None = None) -> None:
        if max_points is not None:
            max_points = max(8, max_points - max_points % 4)
            capacity = min(capacity, max_points)
        self.x = np.empty(capacity, dtype=np.float64)
        self.y = np.empty(capacity, dtype=np.float64)
        self.flag = np.empty(capacity, dtype=np.bool_)
        self.n = 0
        self.count = 0
        self.monotonic = True
        self.max_points = max_points
        #: samples per kept stretch (1: every sample is kept)
        self.stride = 1
        self._pending: list[tuple[np.ndarray, np.ndarray, bool]] = []
        self._pending_n = 0

    def append(self, x: np.ndarray, y: np.ndarray, flag: bool = False) -> None:
        m = len(x)
        if m == 0:
            return
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if self.monotonic:
            last = self._last_x()
            if m > 1 and np.any(np.diff(x) < 0):
                self.monotonic = False
            elif last is not None and x[0] < last:
                self.monotonic = False
        self.count += m
        if self.stride == 1:
            room = m if self.max_points is None else min(m, self.max_points - self.n)
            self._store(x[:room], y[:room], np.full(room, flag))
            if room == m:
                return
            self._fold()
            x, y = x[room:], y[room:]
        self._pending.append((x, y, flag))
        self._pending_n += len(x)
        self._drain()

    @property
    def pending(self) -> bool:
        """Whether appended points wait to be folded in (the curve is decimated)."""
        return bool(self._pending)

    def _last_x(self) -> float | None:
        if self._pending:
            return float(self._pending[-1][0][-1])
        return float(self.x[self.n - 1]) if self.n else None

    def _store(self, x: np.ndarray, y: np.ndarray, flag: np.ndarray) -> None:
        m = len(x)
        if m == 0:
            return
        need = self.n + m
        if need > len(self.x):
            cap = max(len(self.x), 1)
            while cap < need:
                cap *= 2
            if self.max_points is not None:
                cap = min(cap, self.max_points)
            for name in ("x", "y", "flag"):
                old = getattr(self, name)
                new = np.empty(cap, dtype=old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)
        self.x[self.n : need] = x
        self.y[self.n : need] = y
        self.flag[self.n : need] = flag
        self.n = need

    @staticmethod
    def _peaks(x: np.ndarray, y: np.ndarray, flag: np.ndarray, group: int) -> tuple[np.ndarray, ...]:
        """Of each ``group`` consecutive points the lowest and the highest y, in x order."""
        k = len(x) // group
        xs, ys, fs = (a[: k * group].reshape(k, group) for a in (x, y, flag))
        rows = np.arange(k)
        lo, hi = ys.argmin(axis=1), ys.argmax(axis=1)
        first, second = np.minimum(lo, hi), np.maximum(lo, hi)
        pick = np.stack([first, second], axis=1)
        out_x = xs[rows[:, None], pick].ravel()
        out_y = ys[rows[:, None], pick].ravel()
        out_f = np.repeat(fs.any(axis=1), 2)
        return out_x, out_y, out_f

    def _fold(self) -> None:
        """Halve the points kept: every four become their min and max; stretches double."""
        n = self.n - self.n % 4
        x, y, f = self._peaks(self.x[:n], self.y[:n], self.flag[:n], 4)
        rest = slice(n, self.n)
        rx, ry, rf = self.x[rest].copy(), self.y[rest].copy(), self.flag[rest].copy()
        self.n = 0
        self._store(x, y, f)
        self._store(rx, ry, rf)
        self.stride = 4 if self.stride == 1 else self.stride * 2

    def _drain(self) -> None:
        """Fold pending samples into kept stretches (min and max of each ``stride`` calls)."""
        if self._pending_n < self.stride:
            return
        x = np.concatenate([p[0] for p in self._pending])
        y = np.concatenate([p[1] for p in self._pending])
        f = np.concatenate([np.full(len(p[0]), p[2]) for p in self._pending])
        whole = len(x) - len(x) % self.stride
        px, py, pf = self._peaks(x[:whole], y[:whole], f[:whole], self.stride)
        while len(px):
            assert self.max_points is not None
            room = min(len(px), self.max_points - self.n)
            room -= room % 2
            self._store(px[:room], py[:room], pf[:room])
            px, py, pf = px[room:], py[room:], pf[room:]
            if len(px):
                self._fold()
        self._pending = [(x[whole:], y[whole:], bool(f[whole:].any()))] if whole < len(x) else []
        self._pending_n = len(x) - whole

    @property
    def xs(self) -> np.ndarray:
        if not self._pending:
            return self.x[: self.n]
        return np.concatenate([self.x[: self.n]] + [p[0] for p in self._pending])

    @property
    def ys(self) -> np.ndarray:
        if not self._pending:
            return self.y[: self.n]
        return np.concatenate([self.y[: self.n]] + [p[1] for p in self._pending])

    @property
    def nbytes(self) -> int:
        """Bytes held (kept points and the partial stretch)."""
        return self.x.nbytes + self.y.nbytes + self.flag.nbytes + sum(
            p[0].nbytes + p[1].nbytes for p in self._pending
        )


class Reservoir:
    """A uniform random sample of at most ``size`` values of a stream (Algorithm R, vectorised)."""

    def __init__(self, size: int = SAMPLE_POINTS, seed: int = 0) -> None:
        self.values = np.empty(size, dtype=np.float64)
        self.n = 0
        self.seen = 0
        self._rng = np.random.default_rng(seed)

    def add(self, y: np.ndarray) -> None:
        y = np.asarray(y, dtype=np.float64)
        size = len(self.values)
        room = min(len(y), size - self.n)
        self.values[self.n : self.n + room] = y[:room]
        self.n += room
        self.seen += room
        rest = y[room:]
        if not len(rest):
            return
        # the i-th value seen (1-based) replaces a random slot with probability size / i
        seen = self.seen + np.arange(1, len(rest) + 1)
        slots = (self._rng.random(len(rest)) * seen).astype(np.int64)
        hit = slots < size
        self.values[slots[hit]] = rest[hit]
        self.seen += len(rest)

    @property
    def sample(self) -> np.ndarray:
        return self.values[: self.n]


class Series:
    """One (run, variant) curve: its name, colour, failed mark and samples.

    ``all`` keeps every sample in arrival order (flag: warm-up); ``warm`` and
    ``meas`` split them by phase for drawing. Each keeps at most
    DISPLAY_POINTS points (decimated beyond, peaks kept); the full data is on
    disk. ``meas_sample`` is a uniform sample of the measured latencies.
    ``dirty`` is set by :meth:`append` and cleared by whoever draws.
    """

    def __init__(self, key: str, label: str, color: QColor) -> None:
        self.key = key
        self.label = label
        self.color = color
        self.failed = False
        self.all = SampleBuffer(max_points=DISPLAY_POINTS)
        self.warm = SampleBuffer(64, max_points=DISPLAY_POINTS)
        self.meas = SampleBuffer(max_points=DISPLAY_POINTS)
        self.meas_sample = Reservoir()
        self.warm_lo = math.inf
        self.warm_hi = -math.inf
        #: the first iteration of each measurement round after the first
        self.round_starts: list[float] = []
        self._round = -1
        self.dirty = False

    def append(self, iterations: np.ndarray, wall_ms: np.ndarray, phase: str, round_index: int = -1) -> None:
        """Buffer samples of ``phase`` ("warmup" or "measure"); raises ValueError on bad input.

        ``round_index`` is the measurement round of measured samples (-1: unknown); where
        a later round begins is kept in :attr:`round_starts`.
        """
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
            self.meas_sample.add(y)
            if round_index > self._round:
                if self._round >= 0:
                    self.round_starts.append(float(x[0]))
                self._round = round_index
        self.dirty = True

    def measured_values(self) -> np.ndarray:
        """The measured latencies for statistics of the display (median line, histogram):
        all of them while the curve is not decimated, else a uniform sample of them."""
        if self.meas.stride == 1 and not self.meas.pending:
            return self.meas.ys
        return self.meas_sample.sample

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
