"""What this machine and the installed torch offer, read from torch itself."""

from __future__ import annotations

import importlib.util
import os
import platform
import re
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
    from .gpu_monitor import open_nvml

    try:
        pynvml = open_nvml()
        if pynvml is None:
            return None
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
            return version.decode() if isinstance(version, bytes) else str(version)
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None


#: The distributions that ship Triton, in the order they are looked for.
TRITON_DISTRIBUTIONS = ("triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu")


def triton_installed() -> tuple[str, str] | None:
    """(distribution, version) of the Triton installed here; None where none is."""
    from importlib import metadata

    for name in TRITON_DISTRIBUTIONS:
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        except Exception:  # noqa: BLE001 - a broken distribution is none
            continue
    return None


def _marker_holds(marker: str) -> bool:
    """Whether a requirement's environment marker holds here (True where it cannot be read)."""
    if "extra" in marker:
        return False  # an optional extra's requirement
    try:
        from packaging.markers import Marker

        return bool(Marker(marker).evaluate())
    except Exception:  # noqa: BLE001 - no packaging, or a marker it cannot read
        return True


def triton_required(requires: list[str] | None = None) -> tuple[str, str] | None:
    """(distribution, version) of the Triton torch requires, from its metadata's ``Requires-Dist``.

    A CUDA wheel lists ``triton==X`` (or a nightly ``pytorch-triton==X+git…``) with a
    platform marker; a CPU wheel lists none (None). ``requires``: the lines to read
    (default: the installed torch's).
    """
    if requires is None:
        from importlib import metadata

        try:
            requires = metadata.requires("torch") or []
        except Exception:  # noqa: BLE001 - torch installed without metadata
            return None
    for line in requires:
        spec, _, marker = str(line).partition(";")
        match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[[^\]]*\])?\s*==\s*([^\s,;]+)", spec)
        if match is None:
            continue
        name = match.group(1).lower().replace("_", "-")
        if name in TRITON_DISTRIBUTIONS and (not marker.strip() or _marker_holds(marker.strip())):
            return name, match.group(2)
    return None


def _release(version: str) -> str:
    """``3.6.0+git5261b273`` and ``3.6.0`` are the same release."""
    return version.split("+", 1)[0].strip()


def triton_mismatch(
    installed: tuple[str, str] | None, required: tuple[str, str] | None, torch_version: str
) -> str | None:
    """In words, why Inductor on a GPU may fail here (the Triton torch needs is not installed);
    None where it matches or torch names none."""
    if required is None:
        return None
    name, want = required
    if installed is None:
        return (
            f"torch {torch_version} needs {name} {want}, and no Triton is installed: "
            "Inductor cannot compile for the GPU (torch.compile will fail)"
        )
    have_name, have = installed
    if _release(have) == _release(want):
        return None
    return (
        f"torch {torch_version} was built for {name} {want}, but {have_name} {have} is installed: "
        "a Triton other than torch's own can make every Inductor compile fail "
        f"('torch.compile failed'); install {name}=={want}"
    )


def triton_warning(device_type: str, variants: list[str]) -> str | None:
    """What to say before compiling where Inductor will compile for a GPU with the wrong Triton."""
    if device_type not in ("cuda", "xpu") or not any(v in compile_modes() for v in variants):
        return None
    return triton_mismatch(triton_installed(), triton_required(), torch.__version__)


def triton_version() -> str | None:
    """The installed Triton as the environment records it (``triton 3.6.0``); None without one."""
    return _version_text(triton_installed())


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
        "triton": _version_text(triton_installed()),
        "triton_required": _version_text(triton_required()),
    }


def _version_text(found: tuple[str, str] | None) -> str | None:
    return f"{found[0]} {found[1]}" if found else None


def _cxx_compiler() -> str | None:
    import shutil

    for name in (os.environ.get("CXX"), "g++", "clang++", "c++"):
        if name and shutil.which(name):
            return name
    return None
