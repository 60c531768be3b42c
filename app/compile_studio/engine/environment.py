"""What this machine and the installed torch offer, read from torch itself."""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
from typing import Any

import torch

#: Dynamo backends that only work with an extra package installed.
_BACKEND_NEEDS = {"tvm": "tvm", "openxla": "torch_xla", "onnxrt": "onnxruntime"}
#: Backends shown besides the default list (debugging backends that are useful
#: to separate Dynamo/AOTAutograd cost from Inductor's).
_EXTRA_BACKENDS = ("aot_eager",)


def compile_modes() -> list[str]:
    """Inductor modes of the installed torch (``default`` first)."""
    try:
        from torch._inductor import list_mode_options

        modes = list(list_mode_options().keys())
    except Exception:  # pragma: no cover - very old torch
        modes = ["default", "reduce-overhead", "max-autotune"]
    if "default" in modes:
        modes.remove("default")
    return ["default", *modes]


def compile_backends() -> list[str]:
    """Dynamo backends other than inductor (covered by the modes) that can load here."""
    import torch._dynamo as dynamo

    listed = list(dynamo.list_backends())
    everything = set(dynamo.list_backends(exclude_tags=()))
    listed += [b for b in _EXTRA_BACKENDS if b in everything and b not in listed]
    out = []
    for name in listed:
        if name == "inductor":
            continue
        needs = _BACKEND_NEEDS.get(name)
        if needs and importlib.util.find_spec(needs) is None:
            continue
        out.append(name)
    return sorted(out)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _available_ram() -> int | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _nvidia_driver() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
            return version.decode() if isinstance(version, bytes) else str(version)
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None


def triton_version() -> str | None:
    """The installed Triton's version (read without importing it); None when it is not installed."""
    from importlib import metadata

    for name in ("triton", "pytorch-triton", "pytorch-triton-rocm", "triton-xpu"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        except Exception:  # noqa: BLE001 - a broken install is not a version
            return None
    return None


def probe() -> dict[str, Any]:
    """The environment block of the ``hello`` event."""
    devices = ["cpu"]
    device_names = {"cpu": _cpu_name()}
    device_dtypes: dict[str, list[str]] = {"cpu": ["fp32", "bf16", "fp16"]}
    device_memory: dict[str, int] = {}
    ram = _available_ram()
    if ram:
        device_memory["cpu"] = ram
    cuda_ok = torch.cuda.is_available()
    if cuda_ok:
        for i in range(torch.cuda.device_count()):
            name = f"cuda:{i}"
            props = torch.cuda.get_device_properties(i)
            devices.append(name)
            device_names[name] = props.name
            dtypes = ["fp32", "fp16"]
            if props.major >= 8:
                dtypes.insert(1, "tf32")
            if torch.cuda.is_bf16_supported():
                dtypes.append("bf16")
            device_dtypes[name] = dtypes
            device_memory[name] = int(props.total_memory)
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
        device_names["mps"] = "Apple GPU (MPS)"
        device_dtypes["mps"] = ["fp32", "fp16", "bf16"]
    hip = getattr(torch.version, "hip", None)
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "rocm": hip,
        "cudnn": torch.backends.cudnn.version() if cuda_ok else None,
        "driver": _nvidia_driver() if cuda_ok and not hip else None,
        "python": sys.version.split()[0],
        "os": f"{platform.system()} {platform.release()}",
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "devices": devices,
        "device_names": device_names,
        "device_dtypes": device_dtypes,
        "device_memory": device_memory,
        "compile_modes": compile_modes(),
        "compile_backends": compile_backends(),
        "cxx": _cxx_compiler(),
        "triton": triton_version(),
    }


def _cxx_compiler() -> str | None:
    import shutil

    for name in (os.environ.get("CXX"), "g++", "clang++", "c++"):
        if name and shutil.which(name):
            return name
    return None
