"""The modelled caches (firmware/cache.py) as the driver meets them: a coherent DMA maintains
nothing and reads its ring cached; a hierarchy no machine has is refused."""

from __future__ import annotations

import pytest
from driver_fakes import (
    TWO_LEVELS,
    make,
    run,
)

from macdma.firmware.cache import COHERENT, CacheHierarchy, CacheLevel
from macdma.firmware.driver import (
    DriverConfig,
)


def test_a_coherent_dma_maintains_nothing_and_reads_its_ring_cached():
    async def body():
        for caches, maintained in ((COHERENT, False), (TWO_LEVELS, True)):
            driver, p, device, _ = await make(caches=caches, tx_ring=8, rx_ring=8, rx_buf=256)
            await driver.xmit([b"x" * 1000])
            device.complete_tx(irq=False)
            await driver.tx_clean()
            device.receive(bytes(500), irq=False)
            await driver.rx_poll(8)
            charged = {name for name in p.cycles if name.startswith("cache_")}
            assert bool(charged) is maintained
            # The ring is dma_alloc_coherent memory: uncached on a non-coherent DMA, so
            # each descriptor word the driver reads is memory traffic; cached (and
            # snooped) on a coherent one. The descriptors it posts are write-path stores
            # (mem_write) either way, never memory traffic on top.
            reads, writes = p.traffic["descriptor_uncached"]
            assert (reads > 0) is maintained
            assert reads % 4 == 0 and writes == 0

    run(body())


def test_a_cache_hierarchy_refuses_what_no_machine_has():
    with pytest.raises(ValueError, match="power of two"):
        CacheHierarchy(line_bytes=48)
    with pytest.raises(ValueError, match="at least one cache level"):
        CacheHierarchy(coherent_dma=False)
    with pytest.raises(ValueError, match="invalidate = -1"):
        CacheLevel("L1", 1024, clean=1.0, invalidate=-1, clean_invalidate=1.0)
    with pytest.raises(ValueError, match="rx_sync"):
        DriverConfig(rx_sync="dma_sync")
    assert TWO_LEVELS.lines(31, 2) == 2 and TWO_LEVELS.lines(32, 32) == 1
    assert TWO_LEVELS.lines(0, 0) == 0
