"""NVML for the checks: nvidia-ml-py where it is installed, else ``libnvidia-ml.so.1`` through ctypes.

:class:`CtypesNvml` offers the few calls the checks make under pynvml's names
(so the app's :class:`~compile_studio.engine.clocks.ClockProbe` reads it as it
reads pynvml): init, device count, handle by index / UUID, UUID, current and
maximum clocks, temperature, power, throttle reasons and the driver version.
It touches no torch; every call is guarded and raises :class:`NvmlError`.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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
