"""The driver's :class:`~macdma.firmware.platform.Platform` on the cocotb SoC bench.

- MMIO goes through the bench's real AXI4-Lite master while the CPU is held: the bus
  transaction's simulated time stalls the CPU (accounted as ``mmio_bus``). The cost
  table's fixed ``mmio_read``/``mmio_write`` overhead is charged by the driver itself
  (``MacDmaDriver._mmio_read``), so it is not added again here. Accesses are counted.
- DMA memory is the bench's ``HostMemory`` (cocotbext-axi AxiRam) with a bump allocator:
  drivers allocate rings and buffers once at open and never free them.
- ``wait_irq`` watches the SoC's level ``irq`` pin; ``now_ns``/``sleep_ns`` use cocotb
  time; ``spawn`` starts a driver context as a cocotb task.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import cocotb
from cocotb.triggers import RisingEdge, Timer
from cocotb.utils import get_sim_time

from .cpu import CpuModel

__all__ = ["CocotbPlatform", "OutOfDmaMemory"]


class OutOfDmaMemory(MemoryError):
    """The bump allocator ran past the end of host memory."""


class CocotbPlatform:
    """Platform for the driver on ``bench`` (a :class:`SocBench`) and ``cpu``.

    ``dma_base`` is the first address the allocator hands out (the low page stays unused
    so a stray zero address is never a valid buffer). Members ``mmio_reads`` and
    ``mmio_writes`` count accesses; ``allocations`` lists ``(address, size)``.
    """

    def __init__(self, bench, cpu: CpuModel, *, dma_base: int = 0x1000) -> None:
        self.bench = bench
        self.cpu = cpu
        self.memory = bench.memory
        self.memory_bytes = bench.memory_bytes
        self._next = dma_base
        self.allocations: list[tuple[int, int]] = []
        self.mmio_reads = 0
        self.mmio_writes = 0
        #: When a list, every access is appended as (time_ns, "r"/"w", offset, value).
        self.trace: list[tuple[float, str, int, int]] | None = None

    # -- registers -------------------------------------------------------------------------
    async def mmio_read(self, offset: int) -> int:
        async with self.cpu.lock:
            started = get_sim_time("ns")
            value = await self.bench.csr.read_dword(offset)
            self.cpu.account("mmio_bus", get_sim_time("ns") - started)
        if self.trace is not None:
            self.trace.append((started, "r", offset, value))
        self.mmio_reads += 1
        return value

    async def mmio_write(self, offset: int, value: int) -> None:
        async with self.cpu.lock:
            started = get_sim_time("ns")
            await self.bench.csr.write_dword(offset, value)
            self.cpu.account("mmio_bus", get_sim_time("ns") - started)
        if self.trace is not None:
            self.trace.append((started, "w", offset, value))
        self.mmio_writes += 1

    # -- DMA-able memory -------------------------------------------------------------------
    def dma_alloc(self, size: int, align: int = 16) -> int:
        if size < 1:
            raise ValueError(f"dma_alloc size must be >= 1 byte, got {size}")
        if align < 1 or align & (align - 1):
            raise ValueError(f"dma_alloc alignment must be a power of two, got {align}")
        address = (self._next + align - 1) & ~(align - 1)
        if address + size > self.memory_bytes:
            raise OutOfDmaMemory(
                f"dma_alloc({size}) needs 0x{address + size:x} bytes of host memory, "
                f"the bench has 0x{self.memory_bytes:x}"
            )
        self._next = address + size
        self.allocations.append((address, size))
        return address

    def mem_read(self, address: int, length: int) -> bytes:
        return bytes(self.memory.read(address, length))

    def mem_write(self, address: int, data: bytes) -> None:
        self.memory.write(address, data)

    # -- time and CPU cost -----------------------------------------------------------------
    async def charge(self, cycles: float, what: str) -> None:
        await self.cpu.charge(cycles, what)

    def now_ns(self) -> float:
        return get_sim_time("ns")

    async def sleep_ns(self, ns: float) -> None:
        ps = round(ns * 1000)
        if ps > 0:
            await Timer(ps, unit="ps")

    # -- interrupts ------------------------------------------------------------------------
    async def wait_irq(self) -> None:
        irq = self.bench.dut.irq
        while not int(irq.value):
            await RisingEdge(irq)

    # -- scheduling --------------------------------------------------------------------------
    def spawn(self, coroutine: Coroutine[Any, Any, Any]):
        """Run ``coroutine`` as a concurrent cocotb task (the driver's contexts)."""
        return cocotb.start_soon(coroutine)
