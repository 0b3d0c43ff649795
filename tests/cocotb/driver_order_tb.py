"""The driver's descriptor stores reach host memory in order and take time: a driver that
hands a descriptor over (``own``) before its buffer address is caught.

The driver model runs on the SoC with the ideal CPU, but its stores go through the
platform's :class:`~macdma.sim.model.platform_cocotb.CpuWritePath` (posted, in order, each
taking memory latency + a cycle per word). The TX DMA re-reads the descriptor at HEAD
every microsecond (``TX_POLL_US`` = 1), and host memory answers a store or a burst after
150 cycles (1.5 us), so the DMA polls at least once between two stores of one descriptor.
With ``own`` stored last (the driver's order) every frame leaves intact; with ``own``
stored first (a missing write barrier, planted through the driver's queue hooks) the DMA
takes the descriptor with the previous lap's words -- address 0 on a fresh ring -- and
sends the wrong bytes.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import with_timeout

from macdma.firmware.costs import CpuCosts
from macdma.firmware.descriptor import Descriptor
from macdma.firmware.driver import DriverConfig, DriverHooks, MacDmaDriver, QueueHooks
from macdma.sim.benches.gmii import GMII_1000
from macdma.sim.benches.soc import SocBench
from macdma.sim.model.cpu import CpuModel
from macdma.sim.model.platform_cocotb import CocotbPlatform
from macdma.sim.run.frames import TX_SOURCE, make_frame

FRAMES = 6
FRAME_BYTES = 200
STORE_LATENCY_CYCLES = 150  # 1.5 us at 100 MHz: longer than the DMA's 1 us poll
WORD3 = 12  # byte offset of the descriptor word holding own


#: Stores of word 3 the planted bug makes before the address: the window in which the DMA
#: can see own with a stale address lasts that many store times (1.5 us each), longer
#: than one DMA poll (1 us + its read's 1.5 us), so a poll always falls inside it.
OWN_FIRST_STORES = 3


class OwnFirst(QueueHooks):
    """The planted bug: word 3 (own, length) stored before words 0..2 (the address), as
    a driver without the write barrier does; the driver's own ordered stores follow."""

    def post(self, queue, index: int, desc: Descriptor) -> Descriptor:
        for _ in range(OWN_FIRST_STORES):
            queue.platform.mem_write(queue.desc_addr(index) + WORD3, desc.pack()[WORD3:])
        return desc


async def send_frames(dut, *, own_first: bool) -> tuple[list[bytes], list[bytes], MacDmaDriver]:
    """Open the driver, send FRAMES frames, return (sent, seen on the wire, driver)."""
    bench = SocBench(dut, GMII_1000, memory_bytes=1 << 20)
    await bench.start()
    bench.memory.latency_cycles = STORE_LATENCY_CYCLES
    cpu = CpuModel(1000.0, CpuCosts())
    platform = CocotbPlatform(bench, cpu)
    config = DriverConfig(tx_ring=16, rx_ring=4, strategy="eop", max_frags=1, dma_poll_us=1)
    hooks = DriverHooks(tx=OwnFirst()) if own_first else None
    driver = MacDmaDriver(platform, config, costs=cpu.costs, hooks=hooks)
    await driver.open()
    cocotb.start_soon(driver.run(platform.spawn))
    sent = [make_frame(TX_SOURCE, seq, FRAME_BYTES) for seq in range(FRAMES)]
    for frame in sent:
        while not await driver.xmit([frame]):
            await driver.wait_for_wake()
    seen = []
    for _ in range(FRAMES):
        frame = await with_timeout(bench.tx_sink.recv(), 2, "ms")
        seen.append(bytes(frame.get_payload())[:FRAME_BYTES])
    return sent, seen, driver


@cocotb.test()
async def test_own_stored_last_every_frame_leaves_intact(dut):
    """The driver's order (words 0..2, barrier, word 3): nothing the DMA can see is stale."""
    sent, seen, driver = await send_frames(dut, own_first=False)
    assert seen == sent, "a frame left damaged although own was stored last"
    assert not driver.errors, f"DMA errors: {driver.errors}"


@cocotb.test()
async def test_own_stored_first_is_caught(dut):
    """The planted bug: the DMA finds own with a stale address and sends the wrong bytes."""
    sent, seen, _ = await send_frames(dut, own_first=True)
    damaged = [n for n, (a, b) in enumerate(zip(sent, seen, strict=True)) if a != b]
    assert damaged, "own stored before the address went unnoticed: the write path is not ordered"
    assert damaged[0] == 0, f"the first descriptor (stale address 0) must be hit, got {damaged}"
