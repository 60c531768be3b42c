"""Stage 1, environment: versions, threads and cores, the GPU against NVML, L2, the SM clock."""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

import torch

from compile_studio import __version__ as APP_VERSION
from compile_studio.core.config import format_bytes
from compile_studio.engine.cache_flush import CacheFlush, last_level_cache_bytes
from compile_studio.engine.clocks import ClockProbe, read_cpu_mhz

from .figures import cpu_list
from .nvml import NoNvml, Nvml, normalise_uuid, open_nvml
from .report import CUDA_ONLY, Report

UUID_CHECK = ("env.nvml_uuid", "NVML UUID of the device = torch's props.uuid")
L2_CHECK = ("env.l2", "L2 size known, cold-L2 flush buffer ≥ 2× L2")
CLOCK_CHECK = ("env.sm_clock", "SM clock and throttle reasons readable")


def numpy_version() -> str | None:
    """numpy's version, or None where it cannot be imported."""
    try:
        import numpy
    except ImportError:
        return None
    return str(getattr(numpy, "__version__", "?"))


def compile_threads() -> int | str:
    """Inductor's ``compile_threads`` in this process (what it decides for this core set)."""
    try:
        from torch._inductor import config

        return int(config.compile_threads)  # type: ignore[arg-type]
    except Exception as exc:  # noqa: BLE001 - a torch without the setting
        return f"unreadable: {type(exc).__name__}"


def affinity() -> str:
    """The cores this process may run on, as Linux lists them."""
    try:
        return cpu_list(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return "unknown"


def versions() -> dict[str, Any]:
    """Versions, threads and cores of this process."""
    out: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.cuda.is_available() else None,
        "compile_studio": APP_VERSION,
        "numpy": numpy_version() or "not installed",
        "torch_threads": torch.get_num_threads(),
        "inductor_compile_threads": compile_threads(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity(),
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "TORCHINDUCTOR_CACHE_DIR": os.environ.get("TORCHINDUCTOR_CACHE_DIR"),
    }
    try:
        import triton

        out["triton"] = triton.__version__
    except Exception as exc:  # noqa: BLE001
        out["triton"] = f"not importable: {type(exc).__name__}"
    return out


def uuid_of(value: object) -> str:
    text = str(value or "").strip()
    return normalise_uuid(text) if text else ""


def stage_environment(report: Report, device: torch.device, figures: dict[str, Any]) -> Nvml | None:
    """Record the environment; the NVML binding of the device measured, or None."""
    cuda = device.type == "cuda"
    env = versions()
    figures["versions"] = env
    report.data["environment"] = env
    report.say("   " + ", ".join(f"{k} {v}" for k, v in env.items() if v is not None))
    if not cuda:
        cpu_mhz = read_cpu_mhz()
        llc = last_level_cache_bytes()
        flush = CacheFlush.for_device(device)
        figures.update(cpu_mhz=cpu_mhz, last_level_cache_bytes=llc, flush_bytes=flush.nbytes)
        report.say(f"   CPU: last-level cache {format_bytes(llc) if llc else 'unknown'}, "
                   f"flush buffer {format_bytes(flush.nbytes)}, clock "
                   f"{f'{cpu_mhz:.0f} MHz' if cpu_mhz else 'not exposed in sysfs'}")
        for id_, name in (UUID_CHECK, L2_CHECK, CLOCK_CHECK):
            report.skip(id_, name, CUDA_ONLY, cuda_only=True)
        return None

    props = torch.cuda.get_device_properties(device)
    torch_uuid = uuid_of(getattr(props, "uuid", ""))
    gpu: dict[str, Any] = {
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "sm_count": props.multi_processor_count,
        "memory_bytes": int(props.total_memory),
        "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0),
        "torch_uuid": torch_uuid,
        "pci_bus_id": getattr(props, "pci_bus_id", None),
    }
    figures["gpu"] = gpu
    report.data["environment"]["gpu"] = gpu
    report.say(f"   GPU {props.name} (sm {gpu['capability']}, {gpu['sm_count']} SMs, "
               f"{format_bytes(gpu['memory_bytes'])}, L2 {format_bytes(gpu['l2_bytes'])})")

    opened = open_nvml(device)
    nvml: Nvml | None = None
    if isinstance(opened, NoNvml):
        gpu["nvml"] = opened.reason
        if opened.absent:
            report.skip(*UUID_CHECK, opened.reason, cuda_only=True)
        else:
            report.check(*UUID_CHECK, False, opened.reason, cuda_only=True)
    else:
        nvml = opened
        gpu.update(nvml_source=nvml.source, nvml_found_by=nvml.found_by, nvml_uuid=nvml.uuid)
        try:
            driver = nvml.pynvml.nvmlSystemGetDriverVersion()
            report.data["environment"]["driver"] = (
                driver.decode() if isinstance(driver, bytes) else str(driver)
            )
        except Exception:  # noqa: BLE001
            pass
        report.check(
            *UUID_CHECK, bool(torch_uuid) and nvml.uuid == torch_uuid,
            f"torch {torch_uuid or '–'}, NVML {nvml.uuid} ({nvml.source}, by {nvml.found_by})",
            cuda_only=True,
        )

    flush = CacheFlush.for_device(device)
    gpu["flush_bytes"] = flush.nbytes
    report.check(
        *L2_CHECK, gpu["l2_bytes"] > 0 and flush.nbytes >= 2 * gpu["l2_bytes"],
        f"L2 {format_bytes(gpu['l2_bytes'])}, flush buffer {format_bytes(flush.nbytes)}",
        cuda_only=True,
    )
    del flush

    if nvml is None:
        reason = gpu["nvml"]
        if isinstance(opened, NoNvml) and opened.absent:
            report.skip(*CLOCK_CHECK, reason, cuda_only=True)
        else:
            report.check(*CLOCK_CHECK, False, reason, cuda_only=True)
        return None
    reading = ClockProbe.for_device(device, nvml.handle, nvml.pynvml).read()
    clocks: dict[str, Any] = {"sm_mhz": reading.mhz, "reasons": reading.reasons}
    p = nvml.pynvml
    for key, fn, args in (
        ("sm_max_mhz", "nvmlDeviceGetMaxClockInfo", (p.NVML_CLOCK_SM,)),
        ("mem_mhz", "nvmlDeviceGetClockInfo", (p.NVML_CLOCK_MEM,)),
        ("temperature_c", "nvmlDeviceGetTemperature", (p.NVML_TEMPERATURE_GPU,)),
        ("power_w", "nvmlDeviceGetPowerUsage", ()),
        ("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", ()),
    ):
        try:
            value = getattr(p, fn)(nvml.handle, *args)
            clocks[key] = value / 1000.0 if key.startswith("power") else value
        except Exception:  # noqa: BLE001
            clocks[key] = None
    gpu["clocks_start"] = clocks
    report.check(
        *CLOCK_CHECK, reading.mhz is not None,
        f"SM {reading.mhz} MHz of max {clocks.get('sm_max_mhz')} MHz, reasons "
        f"{', '.join(reading.reasons) or 'none'}, {clocks.get('temperature_c')} °C, "
        f"{clocks.get('power_w')} W of {clocks.get('power_limit_w')} W",
        cuda_only=True,
    )
    return nvml


def clocks_at_end(report: Report, device: torch.device, nvml: Nvml) -> None:
    """The SM clock and its throttle reasons once every stage has run."""
    end = ClockProbe.for_device(device, nvml.handle, nvml.pynvml).read()
    report.data["environment"].setdefault("gpu", {})["clocks_end"] = end.to_dict()
    report.say(f"   SM clock at the end: {end.mhz} MHz, reasons {', '.join(end.reasons) or 'none'}")
