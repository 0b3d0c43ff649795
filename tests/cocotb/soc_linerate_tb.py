"""Full-duplex line rate through ``macdma_soc``: frames read from host memory go out
back to back while frames from the wire are written into host memory, and the host keeps
both rings topped up as a driver would (polling, no CPU cost).

Parameters from the environment: SOC_SYS_CLK_NS (system clock period, default 10 ns =
100 MHz), SOC_LINERATE_FRAMES (frames per direction and size, default 40),
SOC_LINERATE_SIZES (comma-separated payload sizes, default "60,1514"),
SOC_LINERATE_JSON (write the measurements there).
"""

import json
import os
import random
from pathlib import Path

import cocotb
from cocotb.triggers import Timer, with_timeout
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.descriptor import DESCRIPTOR_BYTES, Descriptor
from macdma.sim.benches.gmii import GMII_1000, tx_rate
from macdma.sim.benches.soc import SocBench

TX_RING, RX_RING = 0x1000, 0x2000
RING_SIZE = 64
TX_DATA, RX_DATA = 0x10000, 0x80000
RX_BUFFER = 2048


def payload(length: int, seed: int) -> bytes:
    rng = random.Random(seed * 7919 + length)
    return bytes(rng.getrandbits(8) for _ in range(length))


def ring_bytes(bursts, base: int, lanes: int, write: bool) -> int:
    """Bus bytes moved by bursts inside one descriptor ring."""
    end = base + RING_SIZE * DESCRIPTOR_BYTES
    return sum(b.beats * lanes for b in bursts if b.write == write and base <= b.addr < end)


async def transmit_all(bench, ring, frames):
    """Keep the TX ring full until every frame is posted; reap as the DMA finishes."""
    pending = list(enumerate(frames))
    reaped = 0
    while reaped < len(frames):
        posted = False
        while pending and ring.room() >= 1:
            number, data = pending.pop(0)
            address = TX_DATA + (number % RING_SIZE) * 2048 + 1  # odd: byte-aligned DMA
            bench.memory.write(address, data)
            ring.post(Descriptor.tx(address, len(data), sop=True, eop=True))
            posted = True
        if posted:
            await ring.doorbell()
        while reaped < len(frames) and not ring.read(ring.head).own and ring.head != ring.tail:
            done = ring.read(ring.head)
            assert done.done_length == len(frames[reaped]), f"TX write-back {done}"
            ring.head = (ring.head + 1) % ring.size
            reaped += 1
        await Timer(200, "ns")


async def post_rx_buffers(ring):
    for index in range(RING_SIZE - 1):
        ring.post(Descriptor.rx(RX_DATA + index * RX_BUFFER, RX_BUFFER))
    await ring.doorbell()


async def receive_all(bench, ring, count):
    """Collect ``count`` frames from the RX ring, re-posting each buffer at once."""
    received = []
    while len(received) < count:
        repost = 0
        while ring.head != ring.tail and not ring.read(ring.head).own:
            done = ring.read(ring.head)
            assert done.sop and done.eop and not done.error, f"RX write-back {done}"
            received.append(bench.memory.read(done.addr, done.frame_length))
            ring.head = (ring.head + 1) % ring.size
            ring.post(Descriptor.rx(done.addr, RX_BUFFER))
            repost += 1
        if repost:
            await ring.doorbell()
        await Timer(200, "ns")
    return received


@cocotb.test()
async def test_full_duplex_line_rate(dut):
    """Back-to-back frames both ways at 1 Gb/s: every TX gap equals the IFG, every RX
    frame lands intact, nothing is dropped or cut, and the bus traffic is recorded."""
    sys_clk_ns = float(os.environ.get("SOC_SYS_CLK_NS", "10"))
    count = int(os.environ.get("SOC_LINERATE_FRAMES", "40"))
    sizes = [int(n) for n in os.environ.get("SOC_LINERATE_SIZES", "60,1514").split(",")]
    bench = SocBench(dut, GMII_1000, sys_clk_ns=sys_clk_ns)
    await bench.start()
    tx_ring = await bench.open_ring("TX", TX_RING, RING_SIZE, burst_beats=16, prefetch=4)
    rx_ring = await bench.open_ring("RX", RX_RING, RING_SIZE, burst_beats=16, prefetch=4)
    await post_rx_buffers(rx_ring)
    lanes = len(dut.m_axi_wdata) // 8
    results = {"sys_clk_mhz": 1000 / sys_clk_ns, "data_bytes": lanes, "sizes": {}}
    for seed, size in enumerate(sizes):
        frames = [payload(size, seed * 1000 + n) for n in range(count)]
        bench.memory.bursts.clear()
        for data in frames:
            bench.rx_source.send_nowait(GmiiFrame.from_payload(data))
        tx = cocotb.start_soon(transmit_all(bench, tx_ring, frames))
        received = await with_timeout(receive_all(bench, rx_ring, count), 5, "ms")
        await with_timeout(tx, 5, "ms")
        wire = [await bench.tx_sink.recv() for _ in range(count)]

        for frame, data in zip(wire, frames, strict=True):
            assert frame.error is None and frame.check_fcs(), "TX frame damaged"
            assert frame.get_payload() == data + bytes(max(0, 60 - size))
        assert received == [data for data in frames], "RX frames damaged or reordered"
        rate = tx_rate(wire, GMII_1000, bench.ifg)
        assert set(rate.gaps_bytes) == {bench.ifg}, f"TX gaps {sorted(set(rate.gaps_bytes))}"
        counters = await bench.read_regs("RX_DROPS", "RX_FIFO_OVERFLOWS", "STATS_TX_UNDERRUNS")
        assert counters == {"RX_DROPS": 0, "RX_FIFO_OVERFLOWS": 0, "STATS_TX_UNDERRUNS": 0}

        payload_bytes = size * count
        bursts = bench.memory.bursts
        tx_bus = sum(b.beats * lanes for b in bursts if not b.write and not _in_ring(b, RX_RING))
        tx_bus += ring_bytes(bursts, TX_RING, lanes, write=True)
        rx_bus = sum(b.beats * lanes for b in bursts if b.write and not _in_ring(b, TX_RING))
        rx_bus += ring_bytes(bursts, RX_RING, lanes, write=False)
        results["sizes"][size] = {
            "frames": count,
            "tx_percent_of_line_rate": rate.percent_of_line_rate,
            "tx_mbps": rate.mbps,
            "tx_bus_bytes_per_payload_byte": tx_bus / payload_bytes,
            "rx_bus_bytes_per_payload_byte": rx_bus / payload_bytes,
        }
        dut._log.info("%d-byte payloads: %s", size, results["sizes"][size])
    path = os.environ.get("SOC_LINERATE_JSON")
    if path:
        Path(path).write_text(json.dumps(results, indent=2))
    assert regs.ID_RESET_VALUE == await bench.read_reg(regs.ID)


def _in_ring(burst, base: int) -> bool:
    return base <= burst.addr < base + RING_SIZE * DESCRIPTOR_BYTES
