"""The CPU's caches as the DMA API sees them: lines, levels and what one maintenance
operation costs per line at each level.

A non-coherent DMA needs the driver to keep memory and the caches in step: before the
device reads a buffer the CPU *cleans* it (dirty lines written back), before the CPU reads
what the device wrote it *invalidates* it (stale lines dropped). Linux does this per cache
line, at every level the line may live in (ARMv7: the L1 by MVA, then the outer PL310
range operation), once per pass: ``dma_map_*`` is one pass, ``dma_unmap_*`` or
``dma_sync_*`` another. :meth:`CacheHierarchy.maintenance_cycles` prices such a pass over
the lines a byte range touches; a coherent DMA needs none. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["COHERENT", "CacheHierarchy", "CacheLevel", "CacheOp"]


class CacheOp(StrEnum):
    """One maintenance operation per line (the names of :class:`CacheLevel`'s costs)."""

    CLEAN = "clean"  # write a dirty line back, keep it (DMA_TO_DEVICE map)
    INVALIDATE = "invalidate"  # drop the line (DMA_FROM_DEVICE map, unmap, sync)
    CLEAN_INVALIDATE = "clean_invalidate"  # both (DMA_BIDIRECTIONAL)


@dataclass(frozen=True)
class CacheLevel:
    """One level of data cache: its name, size and the CPU cycles of one maintenance
    operation on one line at this level (the instruction or register write and the wait
    for it to finish; the data a clean writes back is memory traffic, priced apart)."""

    name: str
    size_bytes: int
    clean: float
    invalidate: float
    clean_invalidate: float

    def __post_init__(self) -> None:
        if isinstance(self.size_bytes, bool) or not isinstance(self.size_bytes, int):
            raise ValueError(f"cache level {self.name!r}: size_bytes must be a whole number")
        if self.size_bytes < 1:
            raise ValueError(f"cache level {self.name!r}: size_bytes must be >= 1")
        for op in CacheOp:
            value = getattr(self, op.value)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"cache level {self.name!r}: {op.value} = {value!r} must be >= 0")

    def cost(self, op: CacheOp) -> float:
        """Cycles of ``op`` on one line at this level."""
        return float(getattr(self, CacheOp(op).value))


@dataclass(frozen=True)
class CacheHierarchy:
    """The data caches between the CPU and the memory the DMA uses.

    Members:
        line_bytes: the line size (a power of two; every level of the shipped CPUs has
            the same one, so the hierarchy states it once).
        levels: from the core outwards (L1 first).
        coherent_dma: True when the DMA snoops the caches (no maintenance at all).
        post_dma_invalidate: the CPU may fetch lines speculatively, so a buffer the DMA
            filled is invalidated again when it is handed to the CPU (dma_unmap,
            dma_sync_*_for_cpu); False for a core that never speculates (MIPS 34K:
            Linux's cpu_needs_post_dma_flush), whose unmap does nothing.
        line_transfer: CPU cycles a core waits for a line another core's cache holds
            (firmware/locks.py ``SharedLine``); 0: no cost.
    """

    line_bytes: int = 64
    levels: tuple[CacheLevel, ...] = ()
    coherent_dma: bool = True
    post_dma_invalidate: bool = True
    line_transfer: float = 0.0

    def __post_init__(self) -> None:
        line = self.line_bytes
        if isinstance(line, bool) or not isinstance(line, int) or line < 4 or line & (line - 1):
            raise ValueError(f"line_bytes = {line!r} must be a power of two >= 4")
        if not isinstance(self.coherent_dma, bool):
            raise ValueError(f"coherent_dma = {self.coherent_dma!r} must be true or false")
        if not isinstance(self.post_dma_invalidate, bool):
            raise ValueError(
                f"post_dma_invalidate = {self.post_dma_invalidate!r} must be true or false"
            )
        value = self.line_transfer
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"line_transfer = {value!r} must be a number >= 0")
        if not self.coherent_dma and not self.levels:
            raise ValueError("a non-coherent DMA needs at least one cache level to maintain")

    def lines(self, address: int, length: int) -> int:
        """Cache lines the bytes ``address .. address + length - 1`` touch (0 for none)."""
        if length <= 0:
            return 0
        first = address // self.line_bytes
        last = (address + length - 1) // self.line_bytes
        return last - first + 1

    def maintenance_cycles(self, op: CacheOp, address: int, length: int) -> float:
        """CPU cycles of one pass of ``op`` over ``length`` bytes at ``address``: per
        line, per level; 0 on a coherent DMA."""
        if self.coherent_dma:
            return 0.0
        return self.lines(address, length) * sum(level.cost(op) for level in self.levels)


#: The default: a DMA that snoops the caches, so the driver maintains nothing.
COHERENT = CacheHierarchy()
