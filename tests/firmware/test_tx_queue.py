"""The TX queue's map (firmware/tx_queue.py ``xmit``, firmware/io.py ``cache_pass``)
against the scripted fake device of tests/firmware/test_driver.py: on a non-coherent DMA
the map cleans every line of the frame and writes back to memory only the lines the CPU
holds dirty."""

from __future__ import annotations

import pytest
from test_driver import make, run

from macdma.firmware.cache import CacheHierarchy, CacheLevel

#: A MIPS 34Kc-like cache: 32-byte lines, one level, 6 cycles per line operation.
ONE_LEVEL = CacheHierarchy(
    line_bytes=32,
    levels=(CacheLevel("L1", 32 * 1024, clean=6.0, invalidate=6.0, clean_invalidate=6.0),),
    coherent_dma=False,
    post_dma_invalidate=False,
)


@pytest.mark.parametrize(
    ("dirty_bytes", "tx_bounce", "written_lines"),
    [
        (None, False, 48),  # a frame the stack built: every line dirty
        (54, False, 2),  # a forwarded frame: the router rewrote its 54 bytes of headers
        (0, False, 0),  # a bridged frame nobody wrote
        (54, True, 48),  # the bounce copy wrote every byte of its buffer
    ],
)
def test_the_map_writes_back_only_the_lines_the_cpu_has_dirty(
    dirty_bytes, tx_bounce, written_lines
):
    """A 1514-byte frame spans 48 lines: the clean's operation runs on each of them
    (``CACHE Hit_Writeback_D`` in blast_dcache_range's loop), but a line that is clean or
    not in the cache writes nothing back. lantiq-nat's forwarded frames were charged 48
    lines of write-back where the router had written two."""

    async def body():
        driver, p, _, _ = await make(caches=ONE_LEVEL, tx_ring=16, rx_ring=4, tx_bounce=tx_bounce)
        p.cycles.clear()
        p.traffic.clear()
        assert await driver.xmit([bytes(1514)], dirty_bytes=dirty_bytes)
        assert p.cycles["cache_clean"] == 48 * 6
        assert p.traffic["cache_clean"] == [0, written_lines * 32]

    run(body())


def test_dirty_bytes_count_from_the_frame_start_across_fragments():
    """100 dirty bytes over fragments of 64 and 200: all of the first (2 lines), the
    second's first 36 bytes (2 of its 7 lines)."""

    async def body():
        driver, p, _, _ = await make(caches=ONE_LEVEL, tx_ring=16, rx_ring=4)
        p.traffic.clear()
        assert await driver.xmit([bytes(64), bytes(200)], dirty_bytes=100)
        assert p.traffic["cache_clean"] == [0, (2 + 2) * 32]

    run(body())


def test_negative_dirty_bytes_are_refused():
    async def body():
        driver, _, _, _ = await make(caches=ONE_LEVEL, tx_ring=16, rx_ring=4)
        with pytest.raises(ValueError, match="dirty_bytes = -1"):
            await driver.xmit([bytes(100)], dirty_bytes=-1)
        assert driver.stats.tx_descriptors == 0

    run(body())
