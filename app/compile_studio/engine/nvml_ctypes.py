"""NVML through ctypes: ``libnvidia-ml.so.1`` (the NVIDIA driver's), where nvidia-ml-py is not installed.

:class:`CtypesNvml` offers the few calls the app makes under pynvml's names
(so :class:`~.clocks.ClockProbe` and :class:`~.gpu_monitor.GpuMonitor` read it
as they read pynvml): init, device count, handle by index / UUID / PCI bus id,
UUID, current and maximum clocks, temperature, power, clock-event (throttle)
reasons and the driver version. It touches no torch; every call is guarded and
raises :class:`NvmlError`.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

LIBRARY = "libnvidia-ml.so.1"

NVML_SUCCESS = 0
NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1, 2
NVML_TEMPERATURE_GPU = 0
UUID_CHARS = 96
VERSION_CHARS = 80


class NvmlError(RuntimeError):
    """An NVML call that returned an error code (or could not be made)."""

    def __init__(self, code: int, text: str):
        super().__init__(f"NVML error {code}: {text}")
        self.code = code


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("ascii", "replace")


class CtypesNvml:
    """The NVML calls the checks make, with pynvml's names, on a loaded ``libnvidia-ml``."""

    NVML_CLOCK_GRAPHICS = NVML_CLOCK_GRAPHICS
    NVML_CLOCK_SM = NVML_CLOCK_SM
    NVML_CLOCK_MEM = NVML_CLOCK_MEM
    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
    source = f"ctypes {LIBRARY}"

    def __init__(self, lib: Any):
        self._lib = lib
        self._lock = threading.Lock()

    @classmethod
    def load(cls, name: str = LIBRARY) -> CtypesNvml:
        """The library opened (OSError where it is absent)."""
        return cls(ctypes.CDLL(name))

    # -- plumbing --------------------------------------------------------------------------
    def _function(self, *names: str) -> Any:
        for name in names:
            fn = getattr(self._lib, name, None)
            if fn is not None:
                return fn
        raise NvmlError(-1, f"the library has no {' or '.join(names)}")

    def _error_text(self, code: int) -> str:
        try:
            fn = self._lib.nvmlErrorString
            fn.restype = ctypes.c_char_p
            raw = fn(ctypes.c_int(code))
            return raw.decode("ascii", "replace") if isinstance(raw, bytes) else str(raw)
        except Exception:  # noqa: BLE001 - an unknown code is still an error
            return "unknown error"

    def _call(self, names: tuple[str, ...], *args: Any) -> None:
        fn = self._function(*names)
        with self._lock:
            code = int(fn(*args))
        if code != NVML_SUCCESS:
            raise NvmlError(code, self._error_text(code))

    def _uint(self, names: tuple[str, ...], *args: Any) -> int:
        value = ctypes.c_uint(0)
        self._call(names, *args, ctypes.byref(value))
        return int(value.value)

    # -- the calls -------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self._call(("nvmlInit_v2", "nvmlInit"))

    def nvmlShutdown(self) -> None:
        self._call(("nvmlShutdown",))

    def nvmlDeviceGetCount(self) -> int:
        return self._uint(("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"))

    def nvmlDeviceGetHandleByIndex(self, index: int) -> ctypes.c_void_p:
        handle = ctypes.c_void_p()
        self._call(("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
                   ctypes.c_uint(index), ctypes.byref(handle))
        return handle

    def nvmlDeviceGetHandleByUUID(self, uuid: str | bytes) -> ctypes.c_void_p:
        handle = ctypes.c_void_p()
        raw = uuid.encode("ascii") if isinstance(uuid, str) else uuid
        self._call(("nvmlDeviceGetHandleByUUID",), ctypes.c_char_p(raw), ctypes.byref(handle))
        return handle

    def nvmlDeviceGetHandleByPciBusId(self, bus_id: str | bytes) -> ctypes.c_void_p:
        handle = ctypes.c_void_p()
        raw = bus_id.encode("ascii") if isinstance(bus_id, str) else bus_id
        self._call(("nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"),
                   ctypes.c_char_p(raw), ctypes.byref(handle))
        return handle

    def nvmlDeviceGetUUID(self, handle: Any) -> str:
        buf = ctypes.create_string_buffer(UUID_CHARS)
        self._call(("nvmlDeviceGetUUID",), handle, buf, ctypes.c_uint(UUID_CHARS))
        return _text(buf.raw)

    def nvmlDeviceGetClockInfo(self, handle: Any, kind: int) -> int:
        return self._uint(("nvmlDeviceGetClockInfo",), handle, ctypes.c_int(kind))

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, kind: int) -> int:
        return self._uint(("nvmlDeviceGetMaxClockInfo",), handle, ctypes.c_int(kind))

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int:
        return self._uint(("nvmlDeviceGetTemperature",), handle, ctypes.c_int(sensor))

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        """Milliwatts."""
        return self._uint(("nvmlDeviceGetPowerUsage",), handle)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int:
        """Milliwatts."""
        return self._uint(("nvmlDeviceGetEnforcedPowerLimit",), handle)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int:
        value = ctypes.c_ulonglong(0)
        self._call(("nvmlDeviceGetCurrentClocksEventReasons",
                    "nvmlDeviceGetCurrentClocksThrottleReasons"), handle, ctypes.byref(value))
        return int(value.value)

    nvmlDeviceGetCurrentClocksThrottleReasons = nvmlDeviceGetCurrentClocksEventReasons

    def nvmlSystemGetDriverVersion(self) -> str:
        buf = ctypes.create_string_buffer(VERSION_CHARS)
        self._call(("nvmlSystemGetDriverVersion",), buf, ctypes.c_uint(VERSION_CHARS))
        return _text(buf.raw)


def load_nvml() -> CtypesNvml | None:
    """The driver's NVML opened and initialised through ctypes; None where it cannot be."""
    try:
        binding = CtypesNvml.load()
        binding.nvmlInit()
    except (OSError, NvmlError):
        return None
    return binding
