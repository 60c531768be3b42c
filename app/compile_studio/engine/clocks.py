"""Clock readings at the edges of a timed window: did the processor change speed inside it?

CUDA: the SM clock and the clock-event (throttle) reasons from NVML (nvidia-ml-py,
else the driver's library through ctypes), for the GPU whose UUID matches the
torch device (NVML ignores CUDA_VISIBLE_DEVICES); a slowdown reason (power cap,
thermal, hardware) at a timed window's edge is a warning.
CPU: the current frequency of each core from sysfs, where the kernel exposes
it (many virtual machines do not: then there is no reading, and it says so).
A CUDA device without NVML has no clock reading at all, and its source says
why (never the CPU's clock in the GPU's place).
"""

from __future__ import annotations

import glob
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: A window whose clock changed by more than this fraction gets a warning.
CLOCK_CHANGE_WARN = 0.05

#: The clock source of a CUDA device without an NVML reading.
NO_GPU_CLOCK = "none: no GPU clock (install the nvml extra: pip install nvidia-ml-py)"
NO_GPU_CLOCK_HANDLE = "none: no GPU clock (NVML is installed but gave no handle for this GPU)"

CPU_FREQ_GLOB = "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq"

#: NVML clock-event reason bits, by name (nvmlClocksEventReason*).
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


#: Clock-event reasons that slow the GPU below what it would run at (not idle, not settings).
SLOWDOWN_REASONS = (
    "sw_power_cap",
    "hw_slowdown",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
)


def slowdowns(*readings: dict[str, Any] | None) -> list[str]:
    """The slowdown reasons (power cap, thermal, hardware) in clock readings, each once."""
    out: list[str] = []
    for reading in readings:
        for reason in (reading or {}).get("reasons") or []:
            if reason in SLOWDOWN_REASONS and reason not in out:
                out.append(reason)
    return out


def decode_reasons(mask: int | None) -> list[str]:
    if not mask:
        return []
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


def read_cpu_mhz(pattern: str = CPU_FREQ_GLOB) -> float | None:
    """Mean current core frequency in MHz from sysfs; None where none is exposed."""
    values = []
    for path in glob.glob(pattern):
        try:
            with open(path, encoding="ascii") as fh:
                values.append(int(fh.read().strip()) / 1000.0)  # kHz → MHz
        except (OSError, ValueError):
            continue
    return sum(values) / len(values) if values else None


def nvml_installed() -> bool:
    """Whether ``pynvml`` (the nvidia-ml-py package) can be imported."""
    try:
        return importlib.util.find_spec("pynvml") is not None
    except (ImportError, ValueError):
        return False


def normalise_uuid(uuid: object) -> str:
    """``GPU-1234…`` (NVML) and ``1234…`` (torch) name the same GPU."""
    text = str(uuid).strip().lower()
    return text[4:] if text.startswith("gpu-") else text


@dataclass
class ClockReading:
    """One reading: the clock in MHz (None when unreadable) and throttle reasons."""

    mhz: float | None
    reasons: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"mhz": self.mhz, "reasons": list(self.reasons)}


class ClockProbe:
    """Reads the clock of the device a run measures on."""

    def __init__(self, read: Callable[[], ClockReading], source: str):
        self.read = read
        self.source = source

    @classmethod
    def for_device(cls, device: Any, nvml_handle: Any = None, nvml: Any = None) -> ClockProbe:
        """NVML's SM clock for a CUDA device, sysfs for the CPU; for CUDA without NVML, no reading."""
        is_cuda = getattr(device, "type", None) == "cuda"
        if is_cuda and nvml is not None and nvml_handle is not None:

            def read_gpu() -> ClockReading:
                try:
                    mhz = float(nvml.nvmlDeviceGetClockInfo(nvml_handle, nvml.NVML_CLOCK_SM))
                except Exception:  # noqa: BLE001 - a reading NVML refuses is no reading
                    mhz = None
                getter = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
                    nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
                )
                try:
                    mask = int(getter(nvml_handle)) if getter else None
                except Exception:  # noqa: BLE001
                    mask = None
                return ClockReading(mhz, decode_reasons(mask))

            return cls(read_gpu, "nvml_sm_clock")
        if is_cuda:
            source = NO_GPU_CLOCK_HANDLE if nvml is not None or nvml_installed() else NO_GPU_CLOCK
            return cls(lambda: ClockReading(None, []), source)
        return cls(lambda: ClockReading(read_cpu_mhz(), []), "sysfs_cpu_freq")


def clock_change(start: ClockReading, end: ClockReading) -> float | None:
    """Relative change of the clock across a window; None without two readings."""
    if not start.mhz or end.mhz is None:
        return None
    return (end.mhz - start.mhz) / start.mhz
