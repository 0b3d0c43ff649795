"""DeviceIo: the driver's one door to the platform's registers, CPU and memory system."""

import asyncio

import pytest

from macdma.firmware.costs import CpuCosts
from macdma.firmware.io import DeviceIo
from macdma.firmware.stats import DriverStats


class _Recorder:
    def __init__(self) -> None:
        self.traffic: list[tuple[str, int, int]] = []
        self.charged: list[tuple[float, str]] = []

    async def memory_traffic(self, what: str, read_bytes: int, write_bytes: int) -> None:
        self.traffic.append((what, read_bytes, write_bytes))

    async def charge(self, cycles: float, what: str) -> None:
        self.charged.append((cycles, what))


def _io() -> tuple[DeviceIo, _Recorder]:
    platform = _Recorder()
    return DeviceIo(platform, CpuCosts(per_byte_copy=2.0), DriverStats()), platform


def test_memory_traffic_reaches_the_platform_and_nothing_moves_nothing():
    io, platform = _io()
    asyncio.run(io.memory("per_byte_copy", read_bytes=1514, write_bytes=1514))
    asyncio.run(io.memory("per_byte_copy"))
    assert platform.traffic == [("per_byte_copy", 1514, 1514)]


def test_negative_memory_traffic_is_refused():
    io, platform = _io()
    with pytest.raises(ValueError, match="cannot be negative"):
        asyncio.run(io.memory("per_byte_copy", read_bytes=-1))
    assert platform.traffic == []


def test_a_charge_is_count_times_the_cost():
    io, platform = _io()
    asyncio.run(io.charge("per_byte_copy", 100))
    asyncio.run(io.charge("rx_per_packet"))  # costs 0 here: nothing charged
    assert platform.charged == [(200.0, "per_byte_copy")]
