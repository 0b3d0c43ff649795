"""Jumbo frames through ``macdma_soc``: 9,216-byte frames both ways at 1 Gb/s line rate.

TX frames come from host memory in one or three fragments; RX frames are written into a
chain of 1,536-byte buffers (six per frame) and reassembled from their descriptors. The
host is ideal: it keeps both rings topped up by polling, with no CPU cost.
"""

import random

import cocotb
from cocotb.triggers import Timer, with_timeout
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.descriptor import Descriptor
from macdma.hdl.mac.frame import FCS_LENGTH, MAX_JUMBO_FRAME_BYTES
from macdma.sim.benches.gmii import GMII_1000, tx_rate
from macdma.sim.benches.soc import SocBench

TX_RING, RX_RING = 0x1000, 0x2000
RING_SIZE = 64
TX_DATA, RX_DATA = 0x10000, 0x80000
TX_SLOT = 0x2800  # one jumbo frame and alignment slack per TX slot
RX_BUFFER = 1536
FRAMES = 6


def payload(length: int, seed: int) -> bytes:
    rng = random.Random(seed * 7919 + length)
    return bytes(rng.getrandbits(8) for _ in range(length))


def fragments(data: bytes, count: int) -> list[bytes]:
    share = -(-len(data) // count)
    return [data[n : n + share] for n in range(0, len(data), share)]


async def transmit_all(bench, ring, frames, fragment_count: int):
    """Post every frame (as ``fragment_count`` fragments) while there is room; reap."""
    pending = list(enumerate(frames))
    in_flight = []  # descriptors posted and not reaped, as (ring index, length)
    reaped = 0
    while reaped < sum(len(fragments(data, fragment_count)) for data in frames):
        posted = False
        while pending and ring.room() >= fragment_count:
            number, data = pending.pop(0)
            address = TX_DATA + (number % 8) * TX_SLOT + 3  # odd: byte-aligned DMA
            parts = fragments(data, fragment_count)
            for part_number, part in enumerate(parts):
                bench.memory.write(address, part)
                first, last = part_number == 0, part_number == len(parts) - 1
                descriptor = Descriptor.tx(address, len(part), sop=first, eop=last)
                in_flight.append((ring.post(descriptor), len(part)))
                address += len(part)
            posted = True
        if posted:
            await ring.doorbell()
        while in_flight and not ring.read(in_flight[0][0]).own:
            index, length = in_flight.pop(0)
            assert ring.read(index).done_length == length, f"TX write-back {ring.read(index)}"
            ring.head = (ring.head + 1) % ring.size
            reaped += 1
        await Timer(500, "ns")


async def receive_all(bench, ring, count):
    """Reassemble ``count`` frames from chains of RX buffers, re-posting each at once."""
    received, chain = [], []
    while len(received) < count:
        repost = 0
        while ring.head != ring.tail and not ring.read(ring.head).own:
            done = ring.read(ring.head)
            assert done.sop == (not chain), f"RX descriptor {ring.head}: sop {done}"
            assert not done.error, f"RX descriptor {ring.head}: {done}"
            chain.append(bench.memory.read(done.addr, done.done_length))
            if done.eop:
                data = b"".join(chain)
                assert done.frame_length == len(data), f"frame_length {done}"
                received.append((data, len(chain)))
                chain = []
            else:
                assert done.done_length == RX_BUFFER, f"a non-EOP buffer not full: {done}"
            ring.head = (ring.head + 1) % ring.size
            ring.post(Descriptor.rx(done.addr, RX_BUFFER))
            repost += 1
        if repost:
            await ring.doorbell()
        await Timer(500, "ns")
    return received


@cocotb.test()
@cocotb.parametrize(tx_fragments=[1, 3])
async def test_jumbo_line_rate_both_ways(dut, tx_fragments):
    """9,216-byte frames back to back both ways: every TX gap is the IFG (store-and-forward
    in the default 16 KiB TX FIFO), every RX frame lands intact in six 1,536-byte buffers,
    nothing dropped, cut or underrun."""
    size = MAX_JUMBO_FRAME_BYTES
    bench = SocBench(dut, GMII_1000)
    await bench.start()
    await bench.write_reg(regs.MAC_MAX_LEN, size + FCS_LENGTH)
    tx_ring = await bench.open_ring("TX", TX_RING, RING_SIZE, burst_beats=16, prefetch=4)
    rx_ring = await bench.open_ring("RX", RX_RING, RING_SIZE, burst_beats=16, prefetch=4)
    for index in range(RING_SIZE - 1):
        rx_ring.post(Descriptor.rx(RX_DATA + index * RX_BUFFER, RX_BUFFER))
    await rx_ring.doorbell()

    frames = [payload(size, tx_fragments * 100 + n) for n in range(FRAMES)]
    for data in frames:
        bench.rx_source.send_nowait(GmiiFrame.from_payload(data))
    tx = cocotb.start_soon(transmit_all(bench, tx_ring, frames, tx_fragments))
    received = await with_timeout(receive_all(bench, rx_ring, FRAMES), 5, "ms")
    await with_timeout(tx, 5, "ms")
    wire = [await with_timeout(bench.tx_sink.recv(), 1, "ms") for _ in range(FRAMES)]

    for frame, data in zip(wire, frames, strict=True):
        assert frame.error is None and frame.check_fcs(), "TX jumbo frame damaged"
        assert frame.get_payload() == data, "TX jumbo frame changed"
    assert [data for data, _ in received] == frames, "RX jumbo frames damaged or reordered"
    assert {buffers for _, buffers in received} == {size // RX_BUFFER}
    rate = tx_rate(wire, GMII_1000, bench.ifg)
    assert set(rate.gaps_bytes) == {bench.ifg}, f"TX gaps {sorted(set(rate.gaps_bytes))}"
    counters = await bench.read_regs(
        "RX_DROPS",
        "RX_FIFO_OVERFLOWS",
        "STATS_TX_UNDERRUNS",
        "STATS_RX_OVERSIZE",
        "STATS_RX_FRAMES_GOOD",
        "STATS_TX_FRAMES_GOOD",
    )
    assert counters == {
        "RX_DROPS": 0,
        "RX_FIFO_OVERFLOWS": 0,
        "STATS_TX_UNDERRUNS": 0,
        "STATS_RX_OVERSIZE": 0,
        "STATS_RX_FRAMES_GOOD": FRAMES,
        "STATS_TX_FRAMES_GOOD": FRAMES,
    }, counters
    dut._log.info(
        "9216-byte frames, %d TX fragment(s): TX %.2f%% of line rate, %.1f Mb/s",
        tx_fragments,
        rate.percent_of_line_rate,
        rate.mbps,
    )


@cocotb.test()
async def test_jumbo_longer_than_max_len_is_oversize(dut):
    """With MAC_MAX_LEN at 9220, a frame one byte longer than 9,216 is flagged oversize."""
    bench = SocBench(dut, GMII_1000)
    await bench.start()
    await bench.write_reg(regs.MAC_MAX_LEN, MAX_JUMBO_FRAME_BYTES + FCS_LENGTH)
    rx_ring = await bench.open_ring("RX", RX_RING, RING_SIZE, burst_beats=16, prefetch=4)
    for index in range(RING_SIZE - 1):
        rx_ring.post(Descriptor.rx(RX_DATA + index * RX_BUFFER, RX_BUFFER))
    await rx_ring.doorbell()
    bench.rx_source.send_nowait(GmiiFrame.from_payload(payload(MAX_JUMBO_FRAME_BYTES + 1, 9)))
    await bench.rx_source.wait()
    await Timer(5, "us")
    counters = await bench.read_regs("STATS_RX_OVERSIZE", "STATS_RX_FRAMES_GOOD")
    assert counters == {"STATS_RX_OVERSIZE": 1, "STATS_RX_FRAMES_GOOD": 0}, counters
