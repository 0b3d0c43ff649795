"""The driver's :class:`~macdma.firmware.platform.Platform` on the cocotb SoC bench.

- MMIO goes through the bench's real AXI4-Lite master as one non-preemptible step of the
  caller's CPU context: the bus transaction's simulated time stalls the CPU (accounted as
  ``mmio_bus``). The cost table's fixed ``mmio_read``/``mmio_write`` overhead is charged
  by the driver itself (``MacDmaDriver._mmio_read``), so it is not added again here. A
  register write is a ``writel``: it first waits, spinning (``store_drain``), until every
  earlier store to host memory has landed -- the write barrier before a doorbell.
- DMA memory is the bench's ``HostMemory`` with a bump allocator (drivers allocate rings
  and buffers once at open and never free them). The CPU's stores to it (descriptors) go
  through :class:`CpuWritePath`: posted, in program order, each taking simulated time, so
  the DMA can observe a descriptor whose first store landed and whose second did not. A
  frame to send is in the CPU's cache (``mem_write_cached``): it takes no memory time of
  its own, its way to memory is the map's clean write-back (``memory_traffic``) or the
  DMA's snoop, so its bytes are never counted twice.
- The memory system: with a CPU file's ``[memory]`` (``memory=`` a
  :class:`~macdma.sim.model.cpus.memory.MemorySpec`; the HDL host memory only), the host
  memory takes its shared timing and the CPU's own traffic flows as real bursts through
  its CPU port (sim/benches/cpu_port.py), contending with the DMA: each store of the write
  path lands when its write command completes, and ``memory_traffic`` holds the calling
  context until its commands complete. Without it (and always on cocotbext-axi's AxiRam,
  which has no second port), the write path and ``memory_traffic`` take the flat time
  of :meth:`CpuWritePath.store_ns`, contending with nothing.
- ``charge``/``spin_ns``/``sleep_ns``/``context`` go to the :class:`CpuModel` scheduler:
  charges run in the caller's context, spinning holds the CPU, sleeping gives it up.
- ``wait_irq`` watches the SoC's level ``irq`` pin (a sleeping wait), sampled as a
  level-triggered interrupt controller does: only once the last register write has taken
  effect on it (:data:`IRQ_SETTLE_CYCLES`), so the ISR's own W1C ack is never taken for a
  new interrupt; ``spawn`` starts a driver context as a cocotb task.
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
#: Most bytes ``memory_traffic`` moves in one non-preemptible step: between steps a
#: pending preemption is taken, as between the slices of a charge.
MEMORY_STEP_BYTES = 1024
#: The CPU's own memory for traffic that names no address (a stack's buffers, its
#: skbs): reads walk its first half, writes its second, each wrapping, so consecutive
#: lines share DRAM pages as a copy's do.
SCRATCH_BYTES = 16 * 1024
#: SoC clocks from a register write's response until the ``irq`` output shows it: the CSR
#: bank applies the write (a W1C ack clears IRQ_STATUS) and ``irq`` is a register behind
#: the causes (hdl/dma/irq.py). An interrupt controller sees the line only after the
#: write reached the device and the device's output settled; sampled sooner, the line
#: still shows the interrupt just acknowledged and the ISR would run again for nothing.
#: One clock is enough on this RTL (with 0 every ack was followed by an ISR finding no
#: cause: tests/sim/model/test_platform_cocotb_accounting.py); two keep a clock of margin.
IRQ_SETTLE_CYCLES = 2


class OutOfDmaMemory(MemoryError):
    """The bump allocator ran past the end of host memory."""


class CpuWritePath:
    """The CPU's posted stores to host memory, drained in program order.

    Each :meth:`store` (one ``mem_write`` of the driver: a descriptor's words, a frame's
    bytes) lands in ``memory`` all at once, and only after every earlier store landed:
    with a ``port`` (a :class:`~macdma.sim.benches.cpu_port.CpuMemoryPort`) when its write
    command through the memory system completes; without, after :meth:`store_ns`
    (``memory.latency_cycles`` + one cycle per :data:`STORE_BEAT_BYTES` bytes of
    ``clock_ns``). :meth:`read` is what the CPU sees: memory with its own pending stores
    on top (store-to-load forwarding).

    Members: ``stores`` and ``bytes`` (totals), ``pending`` (stores not landed yet).
    """

    def __init__(self, memory, clock_ns: float, port=None) -> None:
        if not clock_ns > 0:
            raise ValueError(f"store clock period must be > 0 ns, got {clock_ns!r}")
        self.memory = memory
        self.clock_ns = float(clock_ns)
        self.port = port
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
            if self.port is None:
                await Timer(round(self.store_ns(len(data)) * 1000), unit="ps")
            else:
                await self.port.move(address, len(data), write=True)
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
    ``write_path`` is the :class:`CpuWritePath` of the CPU's stores; ``memory_port`` the
    :class:`~macdma.sim.benches.cpu_port.CpuMemoryPort` when ``memory_system`` (a CPU
    file's :class:`~macdma.sim.model.cpus.memory.MemorySpec`) is given, else None.
    """

    def __init__(self, bench, cpu: CpuModel, *, dma_base: int = 0x1000, memory_system=None) -> None:
        self.bench = bench
        self.cpu = cpu
        self.memory = bench.memory
        self.memory_bytes = bench.memory_bytes
        self._next = dma_base
        self.allocations: list[tuple[int, int]] = []
        self.memory_port = None
        if memory_system is not None:
            if not hasattr(bench.dut, "mem_cpu_cmd_seq"):
                raise ValueError(
                    'a CPU file\'s [memory] needs the HDL host memory (memory = "hdl"): '
                    "this top has no CPU port into its host memory"
                )
            # Imported here: only a bench on macdma_soc_hostmem has the port, and its
            # module loads Amaranth for the RTL's constants.
            from macdma.sim.benches.cpu_port import CpuMemoryPort, configure_memory_system

            self.memory_port = CpuMemoryPort(bench.dut)
            configure_memory_system(bench.dut, memory_system.timing(bench.sys_clk_ns))
            scratch = self.dma_alloc(SCRATCH_BYTES, align=4096)
            half = SCRATCH_BYTES // 2
            self._cursors = {False: [scratch, scratch], True: [scratch + half, scratch + half]}
        self.write_path = CpuWritePath(bench.memory, bench.sys_clk_ns, self.memory_port)
        self.mmio_reads = 0
        self.mmio_writes = 0
        self._irq_settled_ns = 0.0  # when the irq line shows the last register write
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
        self._irq_settled_ns = get_sim_time("ns") + IRQ_SETTLE_CYCLES * self.bench.sys_clk_ns
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

    def mem_write_cached(self, address: int, data: bytes) -> None:
        """Bytes in the CPU's cache (a frame to send): in memory at once, no time of their
        own (the map's clean writes them back, or the DMA snoops them). Refused over a
        store still pending, which would land later and overwrite them."""
        end = address + len(data)
        for start, stored in self.write_path.pending:
            if start < end and address < start + len(stored):
                raise RuntimeError(
                    f"cached bytes at {address:#x}..{end:#x} overlap a pending store at "
                    f"{start:#x}: the store would land after them"
                )
        self.memory.write(address, bytes(data))

    # -- time and CPU cost -----------------------------------------------------------------
    async def charge(self, cycles: float, what: str) -> None:
        await self.cpu.charge(cycles, what)

    async def memory_traffic(
        self,
        what: str,
        read_bytes: int,
        write_bytes: int,
        *,
        read_address: int | None = None,
        write_address: int | None = None,
    ) -> None:
        """The CPU's own memory traffic, the calling context held meanwhile and the time
        accounted to ``what``.

        With the memory system: through the CPU port, in steps of at most
        :data:`MEMORY_STEP_BYTES` each way (a step's reads, then its writes: a copy's
        order), each step non-preemptible and lasting until the RTL completed it. The
        bytes are read from ``read_address`` and written to ``write_address`` when given
        (the buffers the driver names), else in the CPU's scratch memory. Without it:
        :meth:`CpuWritePath.store_ns` per direction, contending with nothing."""
        if self.memory_port is None:
            ns = sum(
                self.write_path.store_ns(length) for length in (read_bytes, write_bytes) if length
            )
            await self.cpu.spin(ns, what)
            return
        reads = self._addresses(False, read_bytes, read_address)
        writes = self._addresses(True, write_bytes, write_address)
        while reads or writes:
            async with self.cpu.step(what, stall=True):
                for pending, write in ((reads, False), (writes, True)):
                    if pending:
                        address, length = pending.pop(0)
                        await self.memory_port.move(address, length, write=write)

    def _addresses(self, write: bool, length: int, address: int | None) -> list:
        """``length`` bytes from ``address`` (or the scratch cursor of the direction) as
        (address, bytes) steps of at most :data:`MEMORY_STEP_BYTES`."""
        steps = []
        if address is None:
            base, cursor = self._cursors[write]
            half = SCRATCH_BYTES // 2
            while length > 0:
                part = min(length, MEMORY_STEP_BYTES, base + half - cursor)
                steps.append((cursor, part))
                length -= part
                cursor = base if cursor + part == base + half else cursor + part
            self._cursors[write][1] = cursor
            return steps
        while length > 0:
            part = min(length, MEMORY_STEP_BYTES)
            steps.append((address, part))
            address += part
            length -= part
        return steps

    async def spin_ns(self, ns: float, what: str) -> None:
        """Busy-wait ``ns`` (the CPU is held and the time accounted to ``what``)."""
        await self.cpu.spin(ns, what)

    def context(self, level: str, core: int | None = None):
        """``async with platform.context("hardirq"|"softirq"|"process", core=N)``: see
        CpuModel (``core`` places a new context; default core 0)."""
        return self.cpu.context(level, core)

    def cache_domain(self) -> int | None:
        """The L1 cache the calling context works against (its core's, or the pipeline's
        its hardware thread shares); None outside any context."""
        core = self.cpu.current_core()
        return None if core is None else self.cpu.cache_domain(core)

    def now_ns(self) -> float:
        return get_sim_time("ns")

    async def sleep_ns(self, ns: float) -> None:
        await self.cpu.sleep(ns)

    # -- interrupts ------------------------------------------------------------------------
    async def wait_irq(self) -> None:
        """Return when the level ``irq`` line is high, sampled no sooner than
        :data:`IRQ_SETTLE_CYCLES` after the last register write's response."""
        settle_ns = self._irq_settled_ns - get_sim_time("ns")
        if settle_ns > 0:
            await Timer(round(settle_ns * 1000), unit="ps")
        irq = self.bench.dut.irq
        while not int(irq.value):
            await RisingEdge(irq)

    # -- scheduling --------------------------------------------------------------------------
    def spawn(self, coroutine: Coroutine[Any, Any, Any]):
        """Run ``coroutine`` as a concurrent cocotb task (the driver's contexts)."""
        return cocotb.start_soon(coroutine)
