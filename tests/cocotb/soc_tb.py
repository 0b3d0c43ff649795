"""cocotb tests of ``macdma_soc``: registers, TX and RX through the DMA, on both simulators."""

import random

import cocotb
from cocotb.triggers import ClockCycles, with_timeout
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.descriptor import Descriptor
from macdma.sim.benches.soc import SocBench

TX_RING = 0x1000
RX_RING = 0x2000
TX_DATA = 0x10000
RX_DATA = 0x40000


def payload(length: int, seed: int = 0) -> bytes:
    rng = random.Random(seed * 7919 + length)
    return bytes(rng.getrandbits(8) for _ in range(length))


def on_wire(data: bytes) -> bytes:
    return data + bytes(max(0, 60 - len(data)))


async def started(dut, **kwargs) -> SocBench:
    bench = SocBench(dut, **kwargs)
    await bench.start()
    return bench


@cocotb.test()
async def test_reset_state(dut):
    """After reset: ID and FEATURES read back, irq low, and no memory access at all."""
    bench = await started(dut)
    values = await bench.read_regs("ID", "ID_FEATURES", "TX_STATUS", "RX_STATUS", "IRQ_STATUS")
    assert values["ID"] == regs.ID_RESET_VALUE
    assert values["ID_FEATURES"] & regs.ID_FEATURES_DATA_BYTES_MASK == len(dut.m_axi_wdata) // 8
    assert values["TX_STATUS"] == 0 and values["RX_STATUS"] == 0 and values["IRQ_STATUS"] == 0
    await ClockCycles(dut.clk, 200)
    assert int(dut.irq.value) == 0
    assert bench.memory.bursts == []


async def send_tx(bench, ring, fragments):
    """Place ``fragments`` ((address, bytes) pairs) in memory as one frame and post it."""
    for number, (address, data) in enumerate(fragments):
        bench.memory.write(address, data)
        ring.post(
            Descriptor.tx(address, len(data), sop=number == 0, eop=number == len(fragments) - 1)
        )


@cocotb.test()
async def test_tx_one_frame(dut):
    """One single-fragment frame goes out intact and its descriptor is written back."""
    bench = await started(dut)
    ring = await bench.open_ring("TX", TX_RING, 8)
    data = payload(100)
    await send_tx(bench, ring, [(TX_DATA + 3, data)])
    await ring.doorbell()
    frame = await with_timeout(bench.tx_sink.recv(), 100, "us")
    assert frame.check_fcs() and frame.get_payload() == on_wire(data)
    done = await ring.reap()
    assert not done.own and done.done_length == 100 and done.sop and done.eop


@cocotb.test()
async def test_rx_one_frame(dut):
    """One frame from the wire lands in a posted buffer with its length written back."""
    bench = await started(dut)
    ring = await bench.open_ring("RX", RX_RING, 8)
    for n in range(4):
        ring.post(Descriptor.rx(RX_DATA + 2048 * n, 2048))
    await ring.doorbell()
    data = payload(200, 1)
    await bench.rx_source.send(GmiiFrame.from_payload(data))
    done = await ring.reap()
    assert done.sop and done.eop and not done.error
    assert done.frame_length == 200 and done.done_length == 200
    assert bench.memory.read(RX_DATA, 200) == data
    assert bench.memory.read(RX_DATA + 200, 4) == bytes(4), "FCS must not be stored"
