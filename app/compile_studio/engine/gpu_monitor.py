"""GPU state sampling (SM clock, temperature, power) through NVML, when available.

NVML is nvidia-ml-py's ``pynvml`` where it is installed, else the NVIDIA driver's
``libnvidia-ml.so.1`` read through ctypes (:mod:`.nvml_ctypes`).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..core import protocol

SAMPLE_INTERVAL_S = 0.1
SEND_INTERVAL_S = 0.5

#: t_s, variant, iteration, SM clock MHz, temperature °C, power W
_Reading = tuple[float, "str | None", "int | None", "int | None", "int | None", "float | None"]


def open_nvml() -> Any:
    """An initialised NVML binding: nvidia-ml-py's ``pynvml``, else the driver's library
    through ctypes (:mod:`.nvml_ctypes`); None where neither loads."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:
        pass
    from .nvml_ctypes import load_nvml

    return load_nvml()


def nvml_handle(device: Any) -> tuple[Any, Any, str] | None:
    """(NVML binding, handle, UUID) of the GPU torch calls ``device``; None without NVML.

    The binding is pynvml where nvidia-ml-py is installed, else ``libnvidia-ml.so.1``
    through ctypes, with pynvml's names. NVML numbers GPUs by PCI bus and ignores
    ``CUDA_VISIBLE_DEVICES``: the handle is looked up by the device's UUID (then its
    PCI bus id), never by torch's index alone.
    """
    if getattr(device, "type", None) != "cuda":
        return None
    pynvml = open_nvml()
    if pynvml is None:
        return None
    import torch

    from .clocks import normalise_uuid

    props = torch.cuda.get_device_properties(device.index or 0)
    uuid = normalise_uuid(getattr(props, "uuid", "") or "")
    if uuid:
        try:
            return pynvml, pynvml.nvmlDeviceGetHandleByUUID("GPU-" + uuid), uuid
        except Exception:
            pass
    bus = getattr(props, "pci_bus_id", None)
    if bus is not None:
        domain = getattr(props, "pci_domain_id", 0) or 0
        dev = getattr(props, "pci_device_id", 0) or 0
        try:
            handle = pynvml.nvmlDeviceGetHandleByPciBusId(f"{domain:08x}:{bus:02x}:{dev:02x}.0")
            return pynvml, handle, uuid
        except Exception:
            pass
    return None


class GpuMonitor:
    """Background thread that samples NVML and sends ``gpu_state`` events.

    Each reading is tagged with the variant and iteration of the latest
    sample, so gpu_state.csv joins samples.csv on (variant, iteration).
    """

    def __init__(self, handle: Any, pynvml: Any, sink: Any, index: int):
        self._nvml = pynvml
        self._handle = handle
        self._sink = sink
        self._index = index
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gpu-monitor", daemon=True)
        self._t0 = time.monotonic()

    @classmethod
    def start(cls, device: Any, sink: Any) -> GpuMonitor | None:
        """A running monitor for a CUDA device, or None (CPU, or no NVML at all)."""
        found = nvml_handle(device)
        if found is None:
            return None
        pynvml, handle, _ = found
        mon = cls(handle, pynvml, sink, device.index or 0)
        mon._thread.start()
        return mon

    def _read(self) -> _Reading:
        n = self._nvml
        t = time.monotonic() - self._t0

        def safe(fn: Any, *args: Any) -> Any:
            try:
                return fn(*args)
            except Exception:
                return None

        clock = safe(n.nvmlDeviceGetClockInfo, self._handle, n.NVML_CLOCK_SM)
        temp = safe(n.nvmlDeviceGetTemperature, self._handle, n.NVML_TEMPERATURE_GPU)
        power = safe(n.nvmlDeviceGetPowerUsage, self._handle)
        last = getattr(self._sink, "last_sample", None) or (None, None)
        return t, last[0], last[1], clock, temp, (power / 1000.0 if power is not None else None)

    def _loop(self) -> None:
        rows: list[_Reading] = []
        last = time.monotonic()
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            rows.append(self._read())
            if time.monotonic() - last >= SEND_INTERVAL_S:
                self._send(rows)
                rows, last = [], time.monotonic()
        self._send(rows)

    def _send(self, rows: list[_Reading]) -> None:
        if not rows:
            return
        t, variant, iteration, clock, temp, power = (list(c) for c in zip(*rows))
        self._sink.event(
            protocol.GpuStateEvent(
                gpu=self._index,
                t_s=t,
                variant=variant,
                iteration=iteration,
                sm_clock_mhz=clock,
                temperature_c=temp,
                power_w=power,
            )
        )

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)
        try:
            self._nvml.nvmlShutdown()
        except Exception:
            pass
