"""Cache lines handed between cores (firmware/locks.py ``SharedLine``) without a
simulator: which accesses move a line, what a move costs, and the CPU-file key that
prices it (docs/cpus.md, "Cache lines between cores")."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from macdma.firmware.cache import CacheHierarchy
from macdma.firmware.costs import CpuCosts
from macdma.firmware.io import DeviceIo
from macdma.firmware.locks import SharedLine
from macdma.firmware.stats import DriverStats
from macdma.sim.model.cpus import CpuFileError, load_cpu_file

CPU_DIR = Path(__file__).parents[1] / "cpus"


def test_a_line_moves_only_when_another_cache_holds_it():
    line = SharedLine("tx_ring")
    assert line.access(0, write=True) == 0, "the first access comes from memory"
    assert line.access(0, write=False) == 0 and line.access(0, write=True) == 0
    assert line.access(1, write=False) == 1, "a read miss served by core 0's cache"
    assert line.access(1, write=False) == 0, "core 1 holds a copy now"
    assert line.access(0, write=False) == 0, "both hold it: reads are free"
    assert line.access(0, write=True) == 1, "a write invalidates core 1's copy"
    assert line.access(1, write=True) == 1, "and core 1's write takes it back"
    assert line.holders == {1} and line.transfers == 3
    frame = SharedLine("tx_frame", lines=2)
    frame.access(1, write=True)
    assert frame.access(0, write=True) == 2, "a frame's lines move together"


class _Platform:
    """Cores without a simulator: the context's cache domain is set by hand."""

    def __init__(self) -> None:
        self.domain: int | None = 0
        self.charged: list[tuple[float, str]] = []

    def cache_domain(self) -> int | None:
        return self.domain

    async def charge(self, cycles: float, what: str) -> None:
        self.charged.append((cycles, what))


def test_a_move_costs_the_cpu_files_line_transfer_per_line():
    platform = _Platform()
    io = DeviceIo(platform, CpuCosts(), DriverStats(), CacheHierarchy(line_transfer=150.0))
    frame = SharedLine("tx_frame", lines=2)

    async def body():
        await frame.touch(io, write=True)
        platform.domain = 1
        await frame.touch(io, write=True)
        await frame.touch(io, write=True)
        platform.domain = None  # outside any context: nothing known, nothing charged
        await frame.touch(io, write=True)

    asyncio.run(body())
    assert platform.charged == [(300.0, "line_transfer")]
    assert io.stats.line_transfers == 2
    free = DeviceIo(platform, CpuCosts(), DriverStats(), CacheHierarchy())
    platform.domain = 0
    asyncio.run(frame.touch(free, write=True))
    assert free.stats.line_transfers == 2 and len(platform.charged) == 1, "0 cycles: counted"


def test_the_cpu_file_prices_a_line_transfer(tmp_path):
    assert load_cpu_file(CPU_DIR / "two-cores.toml").caches.line_transfer == 150.0
    assert load_cpu_file(CPU_DIR / "tcp-sender.toml").caches.line_transfer == 0.0
    text = (
        (CPU_DIR / "two-cores.toml")
        .read_text()
        .replace("line_transfer = 150.0", "line_transfer = -5.0")
    )
    path = tmp_path / "cpu.toml"
    path.write_text(text)
    message = "caches.line_transfer = -5.0: must be a number, 0..10000 CPU cycles"
    with pytest.raises(CpuFileError, match=re.escape(message)):
        load_cpu_file(path)
