"""What the driver needs from the machine it runs on: the only door to the hardware.

A real port implements this over a kernel's MMIO, DMA API and IRQ line, or over a serial
bridge to a board; the co-simulation implements it on the cocotb test bench, with every
action charged to a modelled CPU. The driver imports nothing else that touches hardware.
"""

from __future__ import annotations

from typing import Protocol


class Platform(Protocol):
    """The machine under the driver. All methods that take time are ``async``."""

    # -- registers (AXI4-Lite MMIO): each access also stalls the CPU while it runs --------
    async def mmio_read(self, offset: int) -> int:
        """Read the 32-bit register at byte ``offset`` of the device's window."""

    async def mmio_write(self, offset: int, value: int) -> None:
        """Write the 32-bit register at byte ``offset``."""

    # -- DMA-able memory ------------------------------------------------------------------
    def dma_alloc(self, size: int, align: int = 16) -> int:
        """Reserve ``size`` bytes the device can reach; return their bus address."""

    def mem_read(self, address: int, length: int) -> bytes:
        """What the CPU reads at ``address`` (descriptors, received frames)."""

    def mem_write(self, address: int, data: bytes) -> None:
        """A store the device reads from memory (descriptors): posted, in program order,
        each taking the memory system's time to land; the write barrier before a
        doorbell waits for it. On a non-coherent DMA this is the uncached ring's store."""

    def mem_write_cached(self, address: int, data: bytes) -> None:
        """Bytes the CPU has written through its data cache (a frame the stack built):
        there for the device at once, with no memory time of their own. On a non-coherent
        DMA they reach memory by the map's clean, whose write-back is the memory traffic
        (``DeviceIo.cache_pass``); on a coherent one the device snoops them."""

    # -- time and CPU cost ----------------------------------------------------------------
    async def charge(self, cycles: float, what: str) -> None:
        """Spend ``cycles`` CPU cycles on ``what`` (a cost-table entry name, for the
        accounting); returns when the CPU has done that work."""

    async def memory_traffic(self, what: str, read_bytes: int, write_bytes: int) -> None:
        """The CPU's own traffic to host memory for ``what`` (a cost-table entry name):
        ``read_bytes`` loaded and ``write_bytes`` stored through the memory the DMA also
        uses (copies, checksums, cache-line misses and write-backs, uncached descriptor
        accesses). Returns when the memory has moved them; the CPU is stalled meanwhile."""

    def now_ns(self) -> float:
        """Current time in nanoseconds."""

    async def sleep_ns(self, ns: float) -> None:
        """Let ``ns`` nanoseconds pass without using the CPU (a timer, a poll interval)."""

    # -- interrupts -----------------------------------------------------------------------
    async def wait_irq(self) -> None:
        """Return when the device's interrupt line is high (at once if it already is)."""
