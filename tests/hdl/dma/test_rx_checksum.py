"""FrameChecksum (hdl/dma/rx_checksum.py) in Amaranth's simulator against RFC 1071's sum
computed here: start offsets, odd lengths, frames back to back and with gaps."""

import random
import sys
from pathlib import Path

import pytest
from amaranth.sim import Simulator

from macdma.hdl.dma.rx_checksum import FrameChecksum

# The reference is shared with the SoC test benches, which run with tests/cocotb on their path.
sys.path.insert(0, str(Path(__file__).parents[2] / "cocotb"))
from tx_csum_reference import ones_complement_sum  # noqa: E402


def folded(partial: int) -> int:
    return ((partial & 0xFFFF) + (partial >> 16)) & 0xFFFF


@pytest.mark.parametrize("start_bytes", [0, 1, 14])
def test_each_frame_sums_from_its_start_offset(start_bytes):
    rng = random.Random(start_bytes)
    frames = [bytes(rng.randrange(256) for _ in range(n)) for n in (1, 2, 15, 16, 61, 64, 99)]
    frames.append(b"\xff" * 1501)
    dut = FrameChecksum(start_bytes)
    sums = []

    async def bench(ctx):
        for index, frame in enumerate(frames):
            for position, byte in enumerate(frame):
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.p.data, byte)
                ctx.set(dut.i.p.last, position == len(frame) - 1)
                await ctx.tick()
                ctx.set(dut.i.valid, 0)
                if index % 2 and position % 3 == 0:
                    await ctx.tick()  # gaps inside every other frame
            sums.append(folded(ctx.get(dut.partial)))  # the cycle after the last beat

    sim = Simulator(dut)
    sim.add_clock(8e-9)
    sim.add_testbench(bench)
    sim.run()
    assert sums == [ones_complement_sum(frame[start_bytes:]) for frame in frames]
