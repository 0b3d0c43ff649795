"""StreamRegisterSlice in Amaranth's simulator: order, full throughput, registered ready."""

import random

import pytest
from amaranth.sim import Simulator

from macdma.hdl.mac.frame import ByteBeat
from macdma.hdl.mac.slice import StreamRegisterSlice


def run_slice(*, cycles, offer, take, seed=1):
    """Drive the slice for ``cycles`` clocks; ``offer``/``take`` give each clock's
    probability of ``i.valid``/``o.ready``. Returns (bytes in, bytes out, a list of
    (i.ready, o.valid) before and after each clock edge where the slice had to hold)."""
    dut = StreamRegisterSlice(ByteBeat)
    sent, received = [], []

    async def bench(ctx):
        rng = random.Random(seed)
        for _ in range(cycles):
            ctx.set(dut.i.valid, rng.random() < offer)
            ctx.set(dut.i.p.data, len(sent) & 0xFF)
            ctx.set(dut.i.p.last, len(sent) % 7 == 6)
            ctx.set(dut.o.ready, rng.random() < take)
            if ctx.get(dut.i.valid) and ctx.get(dut.i.ready):
                sent.append((len(sent) & 0xFF, len(sent) % 7 == 6))
            if ctx.get(dut.o.valid) and ctx.get(dut.o.ready):
                assert ctx.get(dut.occupied), "a beat left while occupied was low"
                received.append((ctx.get(dut.o.p.data), bool(ctx.get(dut.o.p.last))))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(8e-9)
    sim.add_testbench(bench)
    sim.run()
    return sent, received


@pytest.mark.parametrize(("offer", "take"), [(0.7, 0.6), (0.3, 0.9), (1.0, 0.5), (0.9, 0.2)])
def test_beats_leave_in_order_and_none_is_lost(offer, take):
    sent, received = run_slice(cycles=3000, offer=offer, take=take)
    assert len(received) > 100
    assert received == sent[: len(received)], "a beat was dropped, duplicated or reordered"
    # At most the two registers' worth is still inside.
    assert len(sent) - len(received) <= 2


def test_one_beat_per_clock_when_neither_side_stalls():
    sent, received = run_slice(cycles=1000, offer=1.0, take=1.0)
    # One clock of latency, then a beat on every clock.
    assert len(received) == 999
    assert len(sent) == 1000
    assert received == sent[:999]


def test_ready_and_valid_are_registers():
    """No combinational path through the slice: its outputs do not move between clocks
    when its inputs do."""
    dut = StreamRegisterSlice(ByteBeat)
    changes = []

    async def bench(ctx):
        rng = random.Random(3)
        for _ in range(500):
            await ctx.tick()
            before = (ctx.get(dut.i.ready), ctx.get(dut.o.valid), ctx.get(dut.o.p.data))
            for _ in range(3):
                ctx.set(dut.i.valid, rng.random() < 0.5)
                ctx.set(dut.i.p.data, rng.getrandbits(8))
                ctx.set(dut.o.ready, rng.random() < 0.5)
                after = (ctx.get(dut.i.ready), ctx.get(dut.o.valid), ctx.get(dut.o.p.data))
                changes.append(after != before)

    sim = Simulator(dut)
    sim.add_clock(8e-9)
    sim.add_testbench(bench)
    sim.run()
    assert not any(changes), "i.ready, o.valid or o.payload followed an input within a clock"
