"""One variant's per-iteration samples, kept as numpy columns, and what is derived from them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ...core.protocol import Phase

#: The phases a sample can be in, by code (the ``phase`` column of :class:`VariantSamples`).
PHASE_NAMES: tuple[str, ...] = tuple(str(p) for p in Phase)
_PHASE_CODE = {name: code for code, name in enumerate(PHASE_NAMES)}
_MEASURE = _PHASE_CODE[str(Phase.MEASURE)]
#: ``round`` of a sample without one (warm-up, files without rounds)
NO_ROUND = -1


class VariantSamples:
    """Per-iteration samples of one variant (warm-up and measured), in order.

    Kept as growable numpy columns (a million calls take ~30 MB, not a Python
    object per value): :meth:`wall_array` and the other ``*_array`` methods
    give views without copying; ``iteration``, ``phase``, ``wall_ms``,
    ``device_ms`` and ``round`` give the columns as lists (None where a
    sample has no device time or round). What is derived from the samples
    (statistics, round groups) is kept per length by :meth:`cached`.
    """

    _COLUMNS = (("_iteration", np.int64), ("_phase", np.int8), ("_wall", np.float64),
                ("_device", np.float64), ("_round", np.int64))

    def __init__(self, capacity: int = 0) -> None:
        self.n = 0
        self._iteration: np.ndarray = np.empty(capacity, dtype=np.int64)
        self._phase: np.ndarray = np.empty(capacity, dtype=np.int8)
        self._wall: np.ndarray = np.empty(capacity, dtype=np.float64)
        self._device: np.ndarray = np.empty(capacity, dtype=np.float64)
        self._round: np.ndarray = np.empty(capacity, dtype=np.int64)
        self._cache: dict[str, tuple[int, Any]] = {}

    def __len__(self) -> int:
        return self.n

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VariantSamples):
            return NotImplemented
        return self.n == other.n and all(
            np.array_equal(getattr(self, c)[: self.n], getattr(other, c)[: other.n], equal_nan=c in ("_wall", "_device"))
            for c, _ in self._COLUMNS
        )

    def __repr__(self) -> str:
        return f"VariantSamples(n={self.n})"

    def _reserve(self, extra: int) -> None:
        need = self.n + extra
        cap = len(self._wall)
        if need <= cap:
            return
        cap = max(need, 2 * cap, 256)
        for name, dtype in self._COLUMNS:
            new = np.empty(cap, dtype=dtype)
            new[: self.n] = getattr(self, name)[: self.n]
            setattr(self, name, new)

    def extend(
        self,
        first_iteration: int,
        phase: str,
        wall_ms: Sequence[float] | np.ndarray,
        device_ms: Sequence[float | None] | np.ndarray | None,
        round_index: int | None = None,
    ) -> None:
        """Append consecutive iterations of one phase (and round)."""
        n = len(wall_ms)
        if n == 0:
            return
        device: np.ndarray | float = np.nan
        if device_ms is not None:
            device = np.array(
                [np.nan if d is None else d for d in device_ms]
                if not isinstance(device_ms, np.ndarray) else device_ms,
                dtype=np.float64,
            )
        self.append_arrays(
            np.arange(first_iteration, first_iteration + n, dtype=np.int64),
            self._code(phase),
            np.asarray(wall_ms, dtype=np.float64),
            device,
            NO_ROUND if round_index is None else round_index,
        )

    def append_arrays(
        self,
        iteration: np.ndarray,
        phase: np.ndarray | int,
        wall_ms: np.ndarray,
        device_ms: np.ndarray | float,
        round_index: np.ndarray | int,
    ) -> None:
        """Append columns as arrays (phase as codes of PHASE_NAMES, NaN: no device time, NO_ROUND: none);
        a scalar phase, device time or round stands for the whole stretch."""
        n = len(wall_ms)
        if n == 0:
            return
        self._reserve(n)
        a, b = self.n, self.n + n
        self._iteration[a:b] = iteration
        self._phase[a:b] = phase
        self._wall[a:b] = wall_ms
        self._device[a:b] = device_ms
        self._round[a:b] = round_index
        self.n = b

    @staticmethod
    def _code(phase: str) -> int:
        try:
            return _PHASE_CODE[str(phase)]
        except KeyError:
            raise ValueError(f"unknown phase {phase!r}") from None

    # -- the columns as arrays (views) -----------------------------------------------------
    def iteration_array(self) -> np.ndarray:
        return self._iteration[: self.n]

    def phase_array(self) -> np.ndarray:
        """Phase codes (indexes into PHASE_NAMES)."""
        return self._phase[: self.n]

    def wall_array(self) -> np.ndarray:
        return self._wall[: self.n]

    def device_array(self) -> np.ndarray:
        """Device ms (NaN where a sample has none)."""
        return self._device[: self.n]

    def round_array(self) -> np.ndarray:
        """Round indexes (NO_ROUND where a sample has none)."""
        return self._round[: self.n]

    # -- the columns as lists --------------------------------------------------------------
    @property
    def iteration(self) -> list[int]:
        return cast(list[int], self.iteration_array().tolist())

    @property
    def phase(self) -> list[str]:
        return cast(list[str], np.asarray(PHASE_NAMES, dtype=object)[self.phase_array()].tolist())

    @property
    def wall_ms(self) -> list[float]:
        return cast(list[float], self.wall_array().tolist())

    @property
    def device_ms(self) -> list[float | None]:
        d = self.device_array()
        return [None if v != v else v for v in d.tolist()]

    @property
    def round(self) -> list[int | None]:
        return [None if r == NO_ROUND else r for r in self.round_array().tolist()]

    # -- derived ---------------------------------------------------------------------------
    def forget(self, what: str) -> None:
        """Drop what :meth:`cached` kept under ``what``."""
        self._cache.pop(what, None)

    def cached(self, what: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, kept until more samples arrive."""
        hit = self._cache.get(what)
        if hit is not None and hit[0] == self.n:
            return hit[1]
        value = compute()
        self._cache[what] = (self.n, value)
        return value

    def measured_mask(self) -> np.ndarray:
        return cast(np.ndarray, self.phase_array() == _MEASURE)

    def round_groups(self, device: bool = False) -> dict[int, np.ndarray]:
        """Measured samples (wall or device ms) by round index, in time order within each round.

        Samples without a round (older files) form round 0.
        """

        def compute() -> dict[int, np.ndarray]:
            values = self.device_array() if device else self.wall_array()
            mask = self.measured_mask()
            if device:
                mask &= ~np.isnan(values)
            vals = values[mask]
            rounds = np.maximum(self.round_array()[mask], 0)
            if rounds.size == 0:
                return {}
            if rounds.min() == rounds.max():
                return {int(rounds[0]): vals.copy()}
            return {int(k): vals[rounds == k] for k in np.unique(rounds)}

        return self.cached("device_groups" if device else "groups", compute)  # type: ignore[no-any-return]

    def measured_rounds(self) -> list[np.ndarray]:
        """The measured wall times of each round, in round order (one group without rounds)."""
        groups = self.round_groups()
        return [groups[k] for k in sorted(groups)]

    def measured_wall_ms(self) -> np.ndarray:
        return cast(np.ndarray, self.wall_array()[self.measured_mask()])

    def measured_device_ms(self) -> np.ndarray | None:
        d = self.device_array()[self.measured_mask()]
        d = d[~np.isnan(d)]
        return d if d.size else None

    def count(self, phase: str) -> int:
        return int(np.count_nonzero(self.phase_array() == self._code(phase)))
