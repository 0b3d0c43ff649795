"""The driver's door to the platform: register accesses counted in the statistics and
charged to the CPU (``readl``/``writel``), and the CPU work it charges by cost name."""

from __future__ import annotations

from .cache import COHERENT, CacheHierarchy, CacheOp
from .costs import CpuCosts
from .platform import Platform
from .stats import DriverStats

__all__ = ["DeviceIo"]


class DeviceIo:
    """MMIO and CPU charges of one device, shared by the netdev and its queues.

    ``charge(what, count)`` spends ``count`` times the ``what`` entry of ``costs`` (a
    :class:`~.costs.CpuCosts` field name) through ``platform.charge``; ``readl`` and
    ``writel`` charge ``mmio_read``/``mmio_write`` and count in ``stats``; ``memory``
    moves the CPU's own bytes through the platform's memory system; ``cache_pass`` is one
    pass of DMA cache maintenance priced by ``caches`` (none on a coherent DMA).
    """

    def __init__(
        self,
        platform: Platform,
        costs: CpuCosts,
        stats: DriverStats,
        caches: CacheHierarchy = COHERENT,
    ) -> None:
        self.platform = platform
        self.costs = costs
        self.stats = stats
        self.caches = caches

    async def charge(self, what: str, count: float = 1) -> None:
        """Spend ``count`` times the cost of ``what`` (nothing when it costs 0)."""
        cycles = getattr(self.costs, what) * count
        if cycles:
            await self.platform.charge(cycles, what)

    async def memory(self, what: str, read_bytes: int = 0, write_bytes: int = 0) -> None:
        """Move the CPU's own ``read_bytes``/``write_bytes`` for ``what`` through the host
        memory (the platform's memory system, shared with the DMA); nothing when both are 0."""
        if read_bytes < 0 or write_bytes < 0:
            raise ValueError(f"memory traffic for {what!r} cannot be negative")
        if read_bytes or write_bytes:
            await self.platform.memory_traffic(what, read_bytes, write_bytes)

    async def cache_pass(
        self, op: CacheOp, address: int, length: int, dirty_bytes: int | None = None
    ) -> None:
        """One pass of ``op`` over ``length`` bytes at ``address`` (a dma_map, dma_unmap or
        dma_sync): per line and per level, charged as ``cache_<op>``. A clean also writes
        back to memory the lines the CPU has dirty: those its first ``dirty_bytes`` bytes
        touch (None: all of them, a buffer the CPU just wrote). The operation on a line
        that is clean or not in the cache writes nothing back (a MIPS ``CACHE
        Hit_Writeback``, an ARM clean by MVA): a forwarded frame came in by DMA and the
        CPU rewrote only its headers. Nothing on a coherent DMA."""
        op = CacheOp(op)
        lines = self.caches.lines(address, length)
        if self.caches.coherent_dma or not lines:
            return
        if dirty_bytes is not None and dirty_bytes < 0:
            raise ValueError(f"dirty_bytes = {dirty_bytes} cannot be negative")
        self.stats.cache_lines_maintained += lines
        cycles = self.caches.maintenance_cycles(op, address, length)
        if cycles:
            await self.platform.charge(cycles, f"cache_{op.value}")
        if op is not CacheOp.INVALIDATE:
            dirty = lines
            if dirty_bytes is not None:
                dirty = self.caches.lines(address, min(dirty_bytes, length))
            await self.memory(f"cache_{op.value}", write_bytes=dirty * self.caches.line_bytes)

    async def uncached(self, read_words: int) -> None:
        """Descriptor loads on a non-coherent DMA: the ring is dma_alloc_coherent memory,
        which such a CPU maps uncached, so each 32-bit load is its own round trip to memory
        (``read_words`` of them). Nothing on a coherent DMA (the ring is cached and
        snooped). The ring's stores need nothing here: each is a posted store of the
        platform's write path (``mem_write``), which is their memory traffic."""
        if self.caches.coherent_dma:
            return
        for _ in range(read_words):
            await self.memory("descriptor_uncached", read_bytes=4)

    async def readl(self, offset: int) -> int:
        """Read the register at ``offset``, counted and charged."""
        self.stats.mmio_reads += 1
        await self.charge("mmio_read")
        return await self.platform.mmio_read(offset)

    async def writel(self, offset: int, value: int) -> None:
        """Write the register at ``offset``, counted and charged."""
        self.stats.mmio_writes += 1
        await self.charge("mmio_write")
        await self.platform.mmio_write(offset, value)
