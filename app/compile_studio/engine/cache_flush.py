"""Evicting the caches between timed calls (cold-cache mode).

CUDA: a buffer twice the L2 size (at least 64 MiB) is written. CPU: a buffer
the size of the last-level cache read from sysfs (Linux) is read, modified
and written back (``add_``), so every line is loaded and dirtied: a plain
write of fresh pages can stream past the cache. The CPU buffer is capped at
:data:`CPU_FLUSH_CAP` — a server's shared L3 can be hundreds of MiB, and one
core's share of it is what the benchmark's data competes for — and
defaults to 64 MiB where the size cannot be read.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

import torch

CPU_FLUSH_DEFAULT = 64 << 20
CPU_FLUSH_CAP = 512 << 20
CUDA_FLUSH_MIN = 64 << 20
CACHE_GLOB = "/sys/devices/system/cpu/cpu0/cache/index*"


def _parse_size(text: str) -> int | None:
    text = text.strip().upper()
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    try:
        if text and text[-1] in units:
            return int(text[:-1]) * units[text[-1]]
        return int(text)
    except ValueError:
        return None


def last_level_cache_bytes(pattern: str = CACHE_GLOB) -> int | None:
    """Size of the largest (last-level) data or unified CPU cache, from sysfs."""
    best: tuple[int, int] | None = None
    for folder in glob.glob(pattern):
        try:
            with open(os.path.join(folder, "level"), encoding="ascii") as fh:
                level = int(fh.read())
            with open(os.path.join(folder, "type"), encoding="ascii") as fh:
                kind = fh.read().strip()
            with open(os.path.join(folder, "size"), encoding="ascii") as fh:
                size = _parse_size(fh.read())
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or size is None:
            continue
        if best is None or level > best[0]:
            best = (level, size)
    return best[1] if best else None


@dataclass
class CacheFlush:
    """A buffer whose read-modify-write evicts the device's caches."""

    buffer: torch.Tensor

    @property
    def nbytes(self) -> int:
        return int(self.buffer.numel() * self.buffer.element_size())

    @classmethod
    def for_device(cls, device: torch.device) -> CacheFlush:
        if device.type == "cuda":
            props = torch.cuda.get_device_properties(device)
            l2 = int(getattr(props, "L2_cache_size", 0) or 0)
            size = max(2 * l2, CUDA_FLUSH_MIN)
        else:
            llc = last_level_cache_bytes()
            size = min(llc, CPU_FLUSH_CAP) if llc else CPU_FLUSH_DEFAULT
        return cls(torch.zeros(size, dtype=torch.int8, device=device))

    def evict(self) -> None:
        self.buffer.add_(1)
