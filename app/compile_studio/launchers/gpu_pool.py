"""GPUs handed out one per worker (``CUDA_VISIBLE_DEVICES``), and the launcher of a local worker that takes one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core import protocol
from .supervisor import WorkerLauncher


class GpuPool:
    """The GPUs of one machine, handed to concurrent workers one each (``CUDA_VISIBLE_DEVICES``).

    :meth:`acquire` waits for a free GPU (lowest number first); :meth:`release` frees it.
    """

    def __init__(self, gpu_ids: tuple[int, ...]):
        self.gpu_ids = tuple(gpu_ids)
        self._free = list(self.gpu_ids)
        self._cond = threading.Condition()

    def acquire(self) -> int:
        with self._cond:
            while not self._free:
                self._cond.wait()
            return self._free.pop(0)

    def release(self, gpu: int) -> None:
        with self._cond:
            if gpu in self.gpu_ids and gpu not in self._free:
                self._free.append(gpu)
                self._free.sort(key=self.gpu_ids.index)
                self._cond.notify()


class PooledGpu:
    """A launcher's GPU: fixed (``gpu``), or taken from a pool in ``prepare`` until ``cleanup``."""

    gpu: int | None
    pool: GpuPool | None
    found: dict[str, Any]

    def _take_gpu(self) -> None:
        if self.pool is not None and "gpu" not in self.found:
            self.found["gpu"] = self.pool.acquire()

    def _give_gpu_back(self) -> None:
        gpu = self.found.pop("gpu", None)
        if self.pool is not None and gpu is not None:
            self.pool.release(gpu)

    def visible_gpu(self) -> int | None:
        """The GPU this worker is given (``CUDA_VISIBLE_DEVICES``), None for all."""
        gpu = self.found.get("gpu", self.gpu)
        return None if gpu is None else int(gpu)


@dataclass(frozen=True)
class LocalGpuLauncher(PooledGpu, WorkerLauncher):
    """A worker on this machine that sees one GPU of several (one worker per GPU)."""

    gpu: int | None = None
    pool: GpuPool | None = None
    found: dict[str, Any] = field(default_factory=dict, compare=False)

    def describe(self) -> str:
        gpu = self.visible_gpu()
        return "this machine" if gpu is None else f"this machine, GPU {gpu}"

    def prepare(self, on_status: Callable[[str], None] | None = None) -> None:
        self._take_gpu()

    def environment(self) -> dict[str, str]:
        env = super().environment()
        gpu = self.visible_gpu()
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(gpu)
        return env

    def cleanup(self, hello: protocol.HelloEvent | None) -> None:
        self._give_gpu_back()
