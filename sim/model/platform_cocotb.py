"""The driver's :class:`~macdma.firmware.platform.Platform` on the cocotb SoC bench.

- MMIO goes through the bench's real AXI4-Lite master as one non-preemptible step of the
  caller's CPU context: the bus transaction's simulated time stalls the CPU (accounted as
  ``mmio_bus``). The cost table's fixed ``mmio_read``/``mmio_write`` overhead is charged
  by the driver itself (``MacDmaDriver._mmio_read``), so it is not added again here. A
  register write is a ``writel``: it first waits, spinning (``store_drain``), until every
  earlier store to host memory has landed -- the write barrier before a doorbell.
- DMA memory is the bench's ``HostMemory`` with a bump allocator (drivers allocate rings
  and buffers once at open and never free them). The CPU's stores to it go through
  :class:`CpuWritePath`: posted, in program order, each taking simulated time, so the DMA
  can observe a descriptor whose first store landed and whose second did not.
- ``charge``/``spin_ns``/``sleep_ns``/``context`` go to the :class:`CpuModel` scheduler:
  charges run in the caller's context, spinning holds the CPU, sleeping gives it up.
- ``wait_irq`` watches the SoC's level ``irq`` pin (a sleeping wait); ``spawn`` starts a
  driver context as a cocotb task.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Coroutine
from typing import Any

import cocotb
from cocotb.triggers import Event, First, RisingEdge, Timer
from cocotb.utils import get_sim_time

from .cpu import CpuModel

__all__ = ["CocotbPlatform", "CpuWritePath", "OutOfDmaMemory"]

#: Bytes one store beat carries to host memory: the SoC's 32-bit memory bus.
STORE_BEAT_BYTES = 4


class OutOfDmaMemory(MemoryError):
    """The bump allocator ran past the end of host memory."""


class CpuWritePath:
    """The CPU's posted stores to host memory, drained in program order.

    Each :meth:`store` (one ``mem_write`` of the driver: a descriptor's words, a frame's
    bytes) is one write burst: it lands in ``memory`` all at once after
    ``memory.latency_cycles`` + one cycle per :data:`STORE_BEAT_BYTES` bytes of
    ``clock_ns``, and only after every earlier store landed. :meth:`read` is what the CPU
    sees: memory with its own pending stores on top (store-to-load forwarding).

    Members: ``stores`` and ``bytes`` (totals), ``pending`` (stores not landed yet).
    """

    def __init__(self, memory, clock_ns: float) -> None:
        if not clock_ns > 0:
            raise ValueError(f"store clock period must be > 0 ns, got {clock_ns!r}")
        self.memory = memory
        self.clock_ns = float(clock_ns)
        self.pending: deque[tuple[int, bytes]] = deque()
        self.idle = Event()
        self.idle.set()
        self.stores = 0
        self.bytes = 0
        self._drainer = None

    def store_ns(self, length: int) -> float:
        beats = -(-length // STORE_BEAT_BYTES)
        return (self.memory.latency_cycles + beats) * self.clock_ns

    def store(self, address: int, data: bytes) -> None:
        self.pending.append((address, bytes(data)))
        self.stores += 1
        self.bytes += len(data)
        self.idle.clear()
        if self._drainer is None:
            self._drainer = cocotb.start_soon(self._drain())

    async def _drain(self) -> None:
        while self.pending:
            address, data = self.pending[0]
            await Timer(round(self.store_ns(len(data)) * 1000), unit="ps")
            self.memory.write(address, data)
            self.pending.popleft()
        self._drainer = None
        self.idle.set()

    def read(self, address: int, length: int) -> bytes:
        data = bytearray(self.memory.read(address, length))
        for start, stored in self.pending:
            low, high = max(start, address), min(start + len(stored), address + length)
            if low < high:
                data[low - address : high - address] = stored[low - start : high - start]
        return bytes(data)


class CocotbPlatform:
    """Platform for the driver on ``bench`` (a :class:`SocBench`) and ``cpu``.

    ``dma_base`` is the first address the allocator hands out (the low page stays unused
    so a stray zero address is never a valid buffer). Members ``mmio_reads`` and
    ``mmio_writes`` count accesses; ``allocations`` lists ``(address, size)``;
    ``write_path`` is the :class:`CpuWritePath` of the CPU's stores.
    """

    def __init__(self, bench, cpu: CpuModel, *, dma_base: int = 0x1000) -> None:
        self.bench = bench
        self.cpu = cpu
        self.memory = bench.memory
        self.memory_bytes = bench.memory_bytes
        self.write_path = CpuWritePath(bench.memory, bench.sys_clk_ns)
        self._next = dma_base
        self.allocations: list[tuple[int, int]] = []
        self.mmio_reads = 0
        self.mmio_writes = 0
        #: When a list, every access is appended as (time_ns, "r"/"w", offset, value).
        self.trace: list[tuple[float, str, int, int]] | None = None

    # -- registers -------------------------------------------------------------------------
    async def mmio_read(self, offset: int) -> int:
        async with self.cpu.step("mmio_bus"):
            started = get_sim_time("ns")
            value = await self.bench.csr.read_dword(offset)
        if self.trace is not None:
            self.trace.append((started, "r", offset, value))
        self.mmio_reads += 1
        return value

    async def mmio_write(self, offset: int, value: int) -> None:
        await self.store_barrier()
        async with self.cpu.step("mmio_bus"):
            started = get_sim_time("ns")
            await self.bench.csr.write_dword(offset, value)
        if self.trace is not None:
            self.trace.append((started, "w", offset, value))
        self.mmio_writes += 1

    async def store_barrier(self) -> None:
        """wmb(): spin until every earlier store reached host memory; the CPU is held
        (``store_drain``) but preemptible every slice."""
        while not self.write_path.idle.is_set():
            started = get_sim_time("ns")
            async with self.cpu.step("store_drain"):
                await First(
                    self.write_path.idle.wait(), Timer(round(self.cpu.slice_ns * 1000), "ps")
                )
            if get_sim_time("ns") == started:
                break

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
        return self.write_path.read(address, length)

    def mem_write(self, address: int, data: bytes) -> None:
        self.write_path.store(address, data)

    # -- time and CPU cost -----------------------------------------------------------------
    async def charge(self, cycles: float, what: str) -> None:
        await self.cpu.charge(cycles, what)

    async def memory_traffic(self, what: str, read_bytes: int, write_bytes: int) -> None:
        """The CPU's own memory traffic: for now the write path's timing per direction
        (the memory's per-burst latency, then one :data:`STORE_BEAT_BYTES` beat per
        clock), the CPU held meanwhile and the time accounted to ``what``. Not yet shared
        with the DMA (issue 40: a master port of the simulated memory)."""
        ns = sum(self.write_path.store_ns(length) for length in (read_bytes, write_bytes) if length)
        await self.cpu.spin(ns, what)

    async def spin_ns(self, ns: float, what: str) -> None:
        """Busy-wait ``ns`` (the CPU is held and the time accounted to ``what``)."""
        await self.cpu.spin(ns, what)

    def context(self, level: str, core: int | None = None):
        """``async with platform.context("hardirq"|"softirq"|"process", core=N)``: see
        CpuModel (``core`` places a new context; default core 0)."""
        return self.cpu.context(level, core)

    def now_ns(self) -> float:
        return get_sim_time("ns")

    async def sleep_ns(self, ns: float) -> None:
        await self.cpu.sleep(ns)

    # -- interrupts ------------------------------------------------------------------------
    async def wait_irq(self) -> None:
        irq = self.bench.dut.irq
        while not int(irq.value):
            await RisingEdge(irq)

    # -- scheduling --------------------------------------------------------------------------
    def spawn(self, coroutine: Coroutine[Any, Any, Any]):
        """Run ``coroutine`` as a concurrent cocotb task (the driver's contexts)."""
        return cocotb.start_soon(coroutine)
