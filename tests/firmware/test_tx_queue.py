"""The TX queue of the driver model (firmware/tx_queue.py) on the scripted fake device: xmit
(one descriptor per fragment, one doorbell, refusals), the queue's stop and wake, TX clean's
budget, the cache maintenance of a mapped frame, and software TSO."""

from __future__ import annotations

import asyncio

import pytest
from driver_fakes import (
    TWO_LEVELS,
    assert_own_written_last,
    make,
    ring_desc,
    run,
)

from macdma.firmware import regs
from macdma.firmware.cache import CacheHierarchy, CacheLevel
from macdma.firmware.costs import CpuCosts
from macdma.firmware.driver import (
    WAKE_POLL_NS,
    DriverConfig,
    IrqStrategy,
)


@pytest.mark.parametrize("strategy", ["eop", "per-desc"])
@pytest.mark.parametrize("nfrags", list(range(1, 18)))
def test_xmit_writes_one_descriptor_per_fragment_and_rings_once(nfrags, strategy):
    async def body():
        driver, p, device, _ = await make(strategy=IrqStrategy(strategy), tx_ring=64, rx_ring=4)
        fragments = [bytes([i + 1]) * (10 + 7 * i) for i in range(nfrags)]
        tails_before = len(p.writes_to(regs.TX_TAIL))
        assert await driver.xmit(fragments) is True
        assert p.writes_to(regs.TX_TAIL)[tails_before:] == [nfrags]
        base = p.regs[regs.TX_RING_BASE]
        for i, frag in enumerate(fragments):
            d = ring_desc(p, regs.TX_RING_BASE, i)
            assert d.own and d.length == len(frag)
            assert (d.sop, d.eop) == (i == 0, i == nfrags - 1)
            assert d.ioc == (strategy == "per-desc")
            assert p.mem_read(d.addr, d.length) == frag
            assert_own_written_last(p, base + 16 * i)
        assert not ring_desc(p, regs.TX_RING_BASE, nfrags).own
        assert driver.stats.tx_descriptors == nfrags
        # The device sees exactly the concatenated frame.
        assert device.complete_tx() == nfrags
        assert device.sent == [b"".join(fragments)]

    run(body())


def test_a_descriptor_handed_over_twice_is_refused_and_counted():
    """`own` handed over twice (the soak's driver/tx-own-twice): the ring refuses a post at
    a slot the DMA owns (posted, not reaped), counts it, and leaves the slot alone, so the
    frame goes out once; once reaped, the slot is the driver's again."""

    async def body():
        driver, p, device, _ = await make(tx_ring=8, rx_ring=4)
        assert await driver.xmit([b"\x11" * 60]) is True
        tx = driver.tx
        posted = ring_desc(p, regs.TX_RING_BASE, 0)
        writes = len(p.mem_writes)
        tx.post(0, posted)  # the same descriptor again, while the DMA owns it
        assert tx.double_posts == 1 and len(p.mem_writes) == writes
        assert device.complete_tx() == 1 and device.sent == [b"\x11" * 60]
        await driver.tx_clean()
        assert driver.stats.tx_packets == 1 and not tx.handed_over(0)
        tx.post(0, posted)  # reaped: the slot is the driver's, the post goes through
        assert tx.double_posts == 1 and ring_desc(p, regs.TX_RING_BASE, 0).own

    run(body())


def test_xmit_rejects_empty_fragments_and_oversized_frames():
    async def body():
        driver, *_ = await make(tx_ring=8, rx_ring=4, max_frags=3)
        with pytest.raises(ValueError, match="Fragment length 0"):
            await driver.xmit([b"a", b""])
        with pytest.raises(ValueError, match="8 fragments"):
            await driver.xmit([b"a"] * 8)

    run(body())


def test_queue_stops_below_max_frags_and_wakes_with_hysteresis():
    async def body():
        driver, p, device, _ = await make(tx_ring=64, rx_ring=4, max_frags=17)
        assert driver.config.wake_threshold == 34
        sent = 0
        while not driver.queue_stopped:
            assert await driver.xmit([b"x" * 60])
            sent += 1
        # Stopped once fewer than 17 of the 63 usable descriptors were free.
        assert sent == 63 - 16
        assert driver.stats.queue_stops == 1
        tails = len(p.writes_to(regs.TX_TAIL))
        assert await driver.xmit([b"y" * 60]) is False  # NETDEV_TX_BUSY
        assert len(p.writes_to(regs.TX_TAIL)) == tails
        assert not ring_desc(p, regs.TX_RING_BASE, sent).own

        waiter = asyncio.ensure_future(driver.wait_for_wake())
        device.complete_tx(10)
        assert await driver.tx_clean() == 10
        assert driver.queue_stopped  # 26 free < 34: hysteresis keeps it stopped
        await p.advance(WAKE_POLL_NS)
        assert not waiter.done()
        device.complete_tx(8)
        assert await driver.tx_clean() == 8
        assert not driver.queue_stopped  # 34 free
        assert driver.stats.queue_wakes == 1
        await p.advance(WAKE_POLL_NS)
        assert waiter.done()
        assert await driver.xmit([b"z" * 60])

    run(body())


def test_tx_clean_honours_budget_and_waits_for_the_whole_frame():
    async def body():
        driver, _, device, _ = await make(tx_ring=64, rx_ring=4)
        for i in range(10):
            assert await driver.xmit([bytes(100 + i)])
        device.complete_tx()
        assert [await driver.tx_clean(4) for _ in range(4)] == [4, 4, 2, 0]
        assert driver.stats.tx_packets == 10
        assert driver.stats.tx_bytes == sum(100 + i for i in range(10))
        # A three-fragment frame is reaped only when its EOP descriptor is written back.
        assert await driver.xmit([b"a" * 10, b"b" * 10, b"c" * 10])
        device.complete_tx(2)
        assert await driver.tx_clean() == 0
        device.complete_tx(1)
        assert await driver.tx_clean() == 1
        assert driver.tx.unused() == 63

    run(body())


def test_tx_map_cleans_every_line_of_each_fragment_at_every_level_and_writes_it_back():
    async def body():
        driver, p, device, _ = await make(caches=TWO_LEVELS, tx_ring=32, rx_ring=4)
        p.cycles.clear()
        p.traffic.clear()
        # Each fragment lands at a 64-byte aligned slot buffer: 100 bytes span 4 lines,
        # 50 span 2, 7 one: 7 lines, cleaned at L1 (2) and L2 (20) once (the map).
        await driver.xmit([b"a" * 100, b"b" * 50, b"c" * 7])
        assert p.cycles["cache_clean"] == 7 * (2 + 20)
        assert "cache_invalidate" not in p.cycles
        assert p.traffic["cache_clean"] == [0, 7 * 32]  # the dirty lines written back
        # The fragments were in the cache: the clean's write-back is their only way to
        # memory, never a store of the write path as well (counted once)
        assert sorted(n for _, n in p.cached_writes) == [7, 50, 100]
        assert not {n for _, n in p.mem_writes} & {7, 50, 100}
        device.complete_tx(irq=False)
        await driver.tx_clean()
        assert p.cycles["cache_clean"] == 7 * (2 + 20)  # unmap (to device): no pass

    run(body())


def test_the_tx_napi_weight_caps_a_polls_tx_clean_and_keeps_napi_scheduled():
    async def body():
        for weight, cleaned, still_scheduled in ((None, 5, False), (2, 2, True)):
            driver, p, device, _ = await make(
                strategy=IrqStrategy("napi"), tx_napi_weight=weight, tx_ring=64, rx_ring=4
            )
            for _ in range(5):
                await driver.xmit([b"x" * 100])
            device.complete_tx()
            await driver.isr()  # TX done: NAPI scheduled
            assert driver.napi_scheduled
            work = await driver.napi_poll()
            assert driver.stats.tx_packets == cleaned
            assert driver.napi_scheduled is still_scheduled
            assert work == (64 if still_scheduled else 0)

    run(body())
    with pytest.raises(ValueError, match="needs rx_sync = 'sync'"):
        DriverConfig(rx_buffers="page_pool")
    with pytest.raises(ValueError, match="tx_napi_weight = 0"):
        DriverConfig(tx_napi_weight=0)


def test_software_tso_cuts_a_super_segment_into_frames_with_copied_headers():
    """A 54-byte header and 10,000 bytes in three page fragments, MSS 1448: seven frames,
    each the header (copied into the header buffer, posted uncached) and descriptors into
    the fragments; each piece of a page mapped and cleaned on its own (fec maps per
    piece), the stack's xmit paid once."""

    async def body():
        costs = CpuCosts(
            tx_per_packet=1000.0, tx_per_fragment_map=100.0, tx_per_descriptor=10.0,
            per_byte_memcpy=1.0,
        )  # fmt: skip
        driver, p, device, _ = await make(costs, caches=TWO_LEVELS, tx_ring=64, rx_ring=4)
        p.cycles.clear()
        p.traffic.clear()
        header = bytes(range(54))
        payload = [b"a" * 4096, b"b" * 4096, b"c" * 1808]
        assert await driver.xmit_tso(header, payload, 1448)
        device.complete_tx(irq=False)
        await driver.tx_clean()
        # 10,000 / 1,448: six full segments and one of 1,312; two cross a page boundary
        assert len(device.sent) == 7 and driver.stats.tso_segments == 7
        assert all(frame[:54] == header for frame in device.sent)
        assert b"".join(frame[54:] for frame in device.sent) == b"".join(payload)
        assert [len(frame) - 54 for frame in device.sent] == [1448] * 6 + [1312]
        assert driver.stats.tx_packets == 7 and driver.stats.tx_descriptors == 7 + 9
        assert p.cycles["tx_per_packet"] == 1000.0  # once per super-segment
        assert p.cycles["tx_per_fragment_map"] == 9 * 100.0  # each piece mapped
        assert p.cycles["tx_per_descriptor"] == 16 * 10.0
        assert p.cycles["per_byte_memcpy"] == 7 * 54.0  # a header copy per segment
        # The pieces (offset in their page, bytes), each cleaned over its own lines
        pieces = [(0, 1448), (1448, 1448), (2896, 1200), (0, 248), (248, 1448),
                  (1696, 1448), (3144, 952), (0, 496), (496, 1312)]  # fmt: skip
        lines = sum(TWO_LEVELS.lines(offset, length) for offset, length in pieces)
        assert p.cycles["cache_clean"] == lines * (2 + 20)
        # the header copies' and the descriptors' stores are write-path stores (uncached
        # on this non-coherent DMA), each once: none is memory traffic on top
        assert p.traffic["descriptor_uncached"][1] == 0
        header_buffer = driver.tx.tso_headers
        headers = [(a, n) for a, n in p.mem_writes if n == 54 and a >= header_buffer]
        assert len(headers) == 7

    run(body())


def test_software_tso_advances_each_segments_tcp_sequence_number():
    """tso_build_hdr: segment k's header carries the super-segment's sequence number plus
    the payload bytes of the segments before it (mod 2**32); the rest of the header is
    copied as is."""

    async def body():
        driver, _, device, _ = await make(tx_ring=64, rx_ring=4)
        start = (1 << 32) - 2000  # wraps inside the super-segment
        header = bytes(14) + start.to_bytes(4, "big") + bytes(range(36))
        assert await driver.xmit_tso(header, [bytes(5000)], 1448, seq_offset=14)
        device.complete_tx(irq=False)
        seqs = [int.from_bytes(frame[14:18], "big") for frame in device.sent]
        assert seqs == [(start + n * 1448) % (1 << 32) for n in range(4)]
        assert all(frame[:14] + frame[18:54] == header[:14] + header[18:] for frame in device.sent)
        with pytest.raises(ValueError, match="no 32-bit sequence number at 52"):
            await driver.xmit_tso(header, [bytes(100)], 1448, seq_offset=52)

    run(body())


def test_software_tso_bounces_only_pieces_off_the_dma_alignment():
    """With tx_bounce (a TX DMA reading only 4-byte-aligned buffers), a TSO payload piece
    that starts off 4 bytes is copied into a bounce buffer first; aligned ones are not."""

    async def body():
        driver, p, device, _ = await make(
            CpuCosts(per_byte_memcpy=1.0), tx_ring=64, rx_ring=4, tx_bounce=True
        )
        p.cycles.clear()
        # MSS 1446: pieces start at 0, 1446 (off 4), 2892 (aligned), 4338 (off 4)
        assert await driver.xmit_tso(bytes(54), [bytes(5000)], 1446)
        assert driver.stats.tx_bounced == 2
        assert p.cycles["per_byte_memcpy"] == 4 * 54 + 1446 + (5000 - 3 * 1446)

    run(body())


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
