"""NVML for the checks: nvidia-ml-py where it is installed, else ``libnvidia-ml.so.1`` through ctypes.

:class:`CtypesNvml` is the app's own ctypes reader
(:mod:`compile_studio.engine.nvml_ctypes`): the checks read the GPU as the app does.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compile_studio.engine.nvml_ctypes import (  # the app's own reader, used here as it is
    LIBRARY,
    NVML_CLOCK_GRAPHICS,
    NVML_CLOCK_MEM,
    NVML_CLOCK_SM,
    NVML_SUCCESS,
    NVML_TEMPERATURE_GPU,
    UUID_CHARS,
    VERSION_CHARS,
    CtypesNvml,
    NvmlError,
)

__all__ = [
    "LIBRARY", "NVML_CLOCK_GRAPHICS", "NVML_CLOCK_MEM", "NVML_CLOCK_SM", "NVML_SUCCESS",
    "NVML_TEMPERATURE_GPU", "UUID_CHARS", "VERSION_CHARS", "CtypesNvml", "NvmlError",
]


def normalise_uuid(uuid: object) -> str:
    """``GPU-1234…`` (NVML) and ``1234…`` (torch) name the same GPU."""
    text = str(uuid or "").strip().lower()
    return text[4:] if text.startswith("gpu-") else text


@dataclass
class Nvml:
    """An NVML binding (pynvml or :class:`CtypesNvml`), the handle of the GPU measured, its UUID."""

    pynvml: Any
    handle: Any
    uuid: str
    #: ``pynvml`` or ``ctypes libnvidia-ml.so.1``
    source: str
    #: how the handle was found
    found_by: str = ""


def handle_for(binding: Any, torch_uuid: str, index: int | None) -> tuple[Any, str, str]:
    """(handle, NVML UUID, how it was found) of the GPU torch calls ``torch_uuid``.

    NVML numbers GPUs by PCI bus and ignores ``CUDA_VISIBLE_DEVICES``: by the
    UUID first, then by comparing each index's UUID; by ``index`` alone only
    where torch gives no UUID and no ``CUDA_VISIBLE_DEVICES`` renumbers the GPUs.
    Raises NvmlError where none matches.
    """
    want = normalise_uuid(torch_uuid)
    if want:
        try:
            handle = binding.nvmlDeviceGetHandleByUUID("GPU-" + want)
            return handle, normalise_uuid(binding.nvmlDeviceGetUUID(handle)), "uuid"
        except Exception:  # noqa: BLE001 - look through the indexes instead
            pass
        for i in range(int(binding.nvmlDeviceGetCount())):
            handle = binding.nvmlDeviceGetHandleByIndex(i)
            got = normalise_uuid(binding.nvmlDeviceGetUUID(handle))
            if got == want:
                return handle, got, f"index {i} (its UUID)"
        raise NvmlError(-1, f"no NVML device has torch's UUID {want}")
    if index is None or os.environ.get("CUDA_VISIBLE_DEVICES"):
        raise NvmlError(-1, "torch gives no UUID and CUDA_VISIBLE_DEVICES renumbers the GPUs")
    handle = binding.nvmlDeviceGetHandleByIndex(index)
    return handle, normalise_uuid(binding.nvmlDeviceGetUUID(handle)), f"index {index} (no UUID)"


def open_ctypes(torch_uuid: str, index: int | None,
                load: Callable[[], CtypesNvml] = CtypesNvml.load) -> Nvml | str:
    """NVML through ctypes for one GPU, or why not (the library absent, init failed, no match)."""
    try:
        binding = load()
    except OSError as exc:
        return f"{LIBRARY} cannot be loaded ({exc})"
    try:
        binding.nvmlInit()
        handle, uuid, how = handle_for(binding, torch_uuid, index)
    except Exception as exc:  # noqa: BLE001
        return f"{LIBRARY}: {exc}"
    return Nvml(binding, handle, uuid, CtypesNvml.source, how)


@dataclass
class NoNvml:
    """Why there is no NVML; ``absent``: neither nvidia-ml-py nor the library is on this machine."""

    reason: str
    absent: bool


def open_nvml(device: Any) -> Nvml | NoNvml:
    """NVML for a CUDA device: pynvml as the app finds it, else ctypes; or why there is none."""
    import torch

    from compile_studio.engine.gpu_monitor import nvml_handle

    found = nvml_handle(device)
    if found is not None:
        binding, handle, _ = found
        raw = binding.nvmlDeviceGetUUID(handle)
        uuid = normalise_uuid(raw.decode() if isinstance(raw, bytes) else raw)
        return Nvml(binding, handle, uuid, "pynvml", "the app's lookup")
    props = torch.cuda.get_device_properties(device)
    installed = pynvml_installed()
    pynvml_reason = "nvidia-ml-py gave no handle" if installed else "nvidia-ml-py is not installed"
    opened = open_ctypes(str(getattr(props, "uuid", "") or ""), device.index or 0)
    if isinstance(opened, str):
        absent = not installed and "cannot be loaded" in opened
        return NoNvml(f"no NVML: {pynvml_reason}, and {opened}", absent)
    return opened


def pynvml_installed() -> bool:
    """Whether nvidia-ml-py (``pynvml``) can be imported here (the worker uses this Python)."""
    import importlib.util

    try:
        return importlib.util.find_spec("pynvml") is not None
    except (ImportError, ValueError):
        return False


@dataclass
class ClockSampler:
    """Reads the SM clock every ``interval_s`` from a thread of its own: (t monotonic, MHz)."""

    nvml: Nvml
    interval_s: float = 0.05
    readings: list[tuple[float, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> ClockSampler:
        self._thread = threading.Thread(target=self._loop, name="sm-clock", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        b = self.nvml.pynvml
        while not self._stop.wait(self.interval_s):
            try:
                mhz = float(b.nvmlDeviceGetClockInfo(self.nvml.handle, b.NVML_CLOCK_SM))
            except Exception:  # noqa: BLE001 - a refused reading is no reading
                continue
            self.readings.append((time.monotonic(), mhz))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    def first_after(self, t: float) -> float | None:
        """The first reading at or after monotonic time ``t``."""
        return next((mhz for at, mhz in self.readings if at >= t), None)

    def highest(self) -> float | None:
        return max((mhz for _, mhz in self.readings), default=None)
