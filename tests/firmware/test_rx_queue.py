"""The RX queue of the driver model (firmware/rx_queue.py) on the scripted fake device: poll
(multi-buffer frames, bad frames, the budget, a frame split across polls), refill, the cache
maintenance of received buffers and its cost, and GRO."""

from __future__ import annotations

import dataclasses
import functools

import pytest
from driver_fakes import (
    TWO_LEVELS,
    make,
    ring_desc,
    run,
)

from macdma.firmware import regs
from macdma.firmware.config import GRO_MAX_SEGMENTS
from macdma.firmware.costs import CpuCosts
from macdma.firmware.descriptor import RxErrorCause


def test_an_rx_descriptor_handed_over_twice_is_refused_and_counted():
    """The RX mirror (the soak's driver/rx-own-twice), with the one refusal of the rings'
    base class: a post at a slot the DMA owns (handed over by the last doorbell) or has
    written back unreaped is refused and counted, and the slot left alone, so the frame
    in it is delivered once and its reap does not stall on ``own``; once reaped and
    refilled, the ring posts as usual."""

    async def body():
        driver, p, device, received = await make(tx_ring=8, rx_ring=8, rx_buf=64)
        rx = driver.rx
        last = ring_desc(p, regs.RX_RING_BASE, 6)  # the doorbell handed over slots 0..6
        writes = len(p.mem_writes)
        rx.post(6, last)
        assert rx.double_posts == 1 and len(p.mem_writes) == writes
        first = ring_desc(p, regs.RX_RING_BASE, 0)
        frame = bytes(range(60))
        assert device.receive(frame) == 1  # written back into slot 0, not reaped yet
        rx.post(0, first)
        assert rx.double_posts == 2 and not ring_desc(p, regs.RX_RING_BASE, 0).own
        assert await driver.rx_poll(64) == 1
        assert [(data, ok) for data, ok, _ in received] == [(frame, True)]
        assert not rx.handed_over(0) and ring_desc(p, regs.RX_RING_BASE, 7).own
        assert rx.double_posts == 2 and driver.stats.rx_packets == 1

    run(body())


def test_rx_poll_reassembles_a_three_buffer_frame_and_refills():
    async def body():
        driver, p, device, received = await make(tx_ring=8, rx_ring=8, rx_buf=64)
        frame = bytes(range(150))
        assert device.receive(frame) == 3
        tails = len(p.writes_to(regs.RX_TAIL))
        assert await driver.rx_poll(64) == 1
        [(data, ok, meta)] = received
        assert data == frame and ok
        assert (meta.buffers, meta.frame_length, meta.rx_error) == (3, 150, RxErrorCause.NONE)
        # Refilled: 3 buffers re-posted behind the old tail, doorbell rung once.
        assert p.writes_to(regs.RX_TAIL)[tails:] == [(7 + 3) % 8]
        for i in (7, 0, 1):
            d = ring_desc(p, regs.RX_RING_BASE, i)
            assert d.own and d.length == 64 and d.done_length == 0 and not d.eop
        assert not ring_desc(p, regs.RX_RING_BASE, 2).own
        assert driver.stats.rx_packets == 1 and driver.stats.rx_bytes == 150

    run(body())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rx_error": int(RxErrorCause.FCS)},
        {"rx_error": int(RxErrorCause.RUNT)},
        {"truncated": True},
        # Each cause alone marks the frame bad, even without the summary error bit.
        {"rx_error": int(RxErrorCause.PHY), "error_bit": False},
        {"truncated": True, "error_bit": False},
    ],
)
def test_rx_poll_delivers_bad_frames_with_ok_false(kwargs):
    async def body():
        driver, _, device, received = await make(tx_ring=8, rx_ring=8, rx_buf=64)
        device.receive(bytes(100), **kwargs)
        device.receive(bytes(80))
        assert await driver.rx_poll(64) == 2
        (bad, bad_ok, meta), (_, good_ok, _) = received
        assert not bad_ok and good_ok
        assert meta.error == kwargs.get("error_bit", True)
        assert meta.rx_error == RxErrorCause(kwargs.get("rx_error", 0))
        assert meta.rx_truncated == kwargs.get("truncated", False)
        assert driver.stats.rx_errors == 1 and driver.stats.rx_packets == 1

    run(body())


def test_rx_poll_budget_counts_frames_and_rings_once():
    async def body():
        driver, p, device, received = await make(tx_ring=8, rx_ring=16, rx_buf=64)
        for n in range(5):
            device.receive(bytes([n]) * 100)  # two buffers each
        tails = len(p.writes_to(regs.RX_TAIL))
        assert await driver.rx_poll(2) == 2
        assert len(p.writes_to(regs.RX_TAIL)) == tails + 1
        assert await driver.rx_poll(2) == 2
        assert await driver.rx_poll(2) == 1
        assert await driver.rx_poll(2) == 0
        assert [f[0][0] for f in received] == [0, 1, 2, 3, 4]

    run(body())


def test_rx_frame_split_across_polls_is_kept_until_its_eop():
    async def body():
        driver, _, device, received = await make(tx_ring=8, rx_ring=8, rx_buf=64)
        frame = bytes(range(150))
        # The DMA has written two buffers of the frame; the EOP is not there yet.
        device.receive(frame, complete=False)
        assert await driver.rx_poll(64) == 0 and received == []
        # It finishes the frame (the device restarts the same frame from buffer 3 here).
        device.rx_head = 2
        address, desc = device._desc("rx", 2)
        device.p.mem[desc.addr : desc.addr + 22] = frame[128:]
        device._write_back(
            address,
            dataclasses.replace(desc, done_length=22, eop=True, frame_length=150, own=False),
        )
        assert await driver.rx_poll(64) == 1
        assert received[0][0] == frame and received[0][1]

    run(body())


@pytest.mark.parametrize(
    ("rx_sync", "post_dma", "lines_per_frame"),
    [
        ("unmap", True, 8 + 8),  # unmap the whole 256-byte buffer, map its replacement
        ("unmap", False, 8),  # a core that never speculates: the map only
        ("sync", True, 4 + 4),  # 100 bytes (4 lines) for the CPU, then for the device
        ("sync", False, 4),  # for the device only
    ],
)
def test_rx_invalidates_the_bytes_the_driver_really_maintains(rx_sync, post_dma, lines_per_frame):
    """unmap (dma_unmap_single + dma_map_single) pays for the whole posted buffer per frame,
    sync (dma_sync_single_for_cpu/for_device) only for the bytes received; every buffer is
    mapped whole once at open."""

    async def body():
        caches = dataclasses.replace(TWO_LEVELS, post_dma_invalidate=post_dma)
        driver, p, device, received = await make(
            caches=caches, rx_sync=rx_sync, tx_ring=8, rx_ring=8, rx_buf=256
        )
        assert p.cycles["cache_invalidate"] == 7 * 8 * (3 + 30)  # the map at open
        for _ in range(8):  # a lap: the slot left empty at open gets its buffer mapped
            device.receive(bytes(100), irq=False)
            await driver.rx_poll(8)
        p.cycles.clear()
        p.traffic.clear()
        maintained = driver.stats.cache_lines_maintained
        for _ in range(3):
            device.receive(bytes(100), irq=False)
            await driver.rx_poll(8)
        assert len(received) == 8 + 3
        assert p.cycles["cache_invalidate"] == 3 * lines_per_frame * (3 + 30)
        assert "cache_invalidate" not in p.traffic  # an invalidate moves no data
        assert driver.stats.cache_lines_maintained - maintained == 3 * lines_per_frame

    run(body())


@pytest.mark.parametrize(
    ("rx_buffers", "rx_sync", "per_frame"),
    [
        # unmap + alloc + map, the skb allocated before reception
        ("alloc_map", "unmap", {"rx_skb_alloc": 1, "rx_map_call": 2}),
        # a page fragment instead, the skb built around the filled buffer
        ("build_skb", "unmap", {"rx_frag_alloc": 1, "rx_map_call": 2, "rx_build_skb": 1}),
        # the page stays mapped: no map call, a recycled page, the skb built
        ("page_pool", "sync", {"rx_page_recycle": 1, "rx_build_skb": 1}),
    ],
)
def test_rx_buffer_handling_charges_what_its_code_does(rx_buffers, rx_sync, per_frame):
    async def body():
        names = ("rx_map_call", "rx_skb_alloc", "rx_frag_alloc", "rx_build_skb", "rx_page_recycle")
        costs = CpuCosts(**{name: float(10**i) for i, name in enumerate(names)})
        driver, p, device, received = await make(
            costs, caches=TWO_LEVELS, rx_buffers=rx_buffers, rx_sync=rx_sync, tx_ring=8,
            rx_ring=8, rx_buf=1536,
        )  # fmt: skip
        for _ in range(8):  # a lap, so every slot has had its first map
            device.receive(bytes(200), irq=False)
            await driver.rx_poll(8)
        p.cycles.clear()
        for _ in range(4):
            device.receive(bytes(200), irq=False)
            await driver.rx_poll(8)
        assert len(received) == 12
        charged = {name: p.cycles[name] / getattr(costs, name) / 4 for name in names}
        assert charged == {name: per_frame.get(name, 0) for name in names}
        # Mapped once (page pool): only the 200 received bytes (7 lines) are invalidated,
        # for the CPU and for the device; otherwise the whole 1536-byte buffer (48 lines),
        # at unmap and at the next map.
        lines = 2 * 7 if rx_sync == "sync" else 2 * 48
        assert p.cycles["cache_invalidate"] == 4 * lines * (3 + 30)

    run(body())


def test_gro_pays_the_protocol_work_once_per_merged_batch():
    """Four frames in one poll: GRO's per-segment work four times, the stack's protocol
    work once, one flush to the stack; without GRO the protocol work four times."""

    async def body():
        costs = CpuCosts(rx_per_packet=1000.0, gro_per_segment=10.0)
        for gro, protocol, merging, flushes in ((True, 1, 4, 1), (False, 4, 0, 0)):
            driver, p, device, received = await make(costs, gro=gro, tx_ring=8, rx_ring=16)
            heard: list[int] = []
            driver.on_gro_flush = functools.partial(
                lambda heard, received: heard.append(len(received)), heard, received
            )
            for _ in range(4):
                device.receive(bytes(200), irq=False)
            await driver.rx_poll(16)
            assert len(received) == 4
            assert p.cycles["rx_per_packet"] == protocol * 1000.0
            assert p.cycles["gro_per_segment"] == merging * 10.0
            assert heard == [4] * flushes and driver.stats.gro_flushes == flushes

    run(body())


def test_gro_flushes_a_full_batch_before_the_poll_ends():
    async def body():
        driver, p, device, received = await make(
            CpuCosts(rx_per_packet=1.0), gro=True, tx_ring=8, rx_ring=64, rx_buf=256
        )
        for _ in range(GRO_MAX_SEGMENTS + 3):
            device.receive(bytes(100), irq=False)
        await driver.rx_poll(None)
        assert driver.stats.gro_flushes == 2  # 45, then the 3 left at the poll's end
        assert p.cycles["rx_per_packet"] == 2.0

    run(body())
