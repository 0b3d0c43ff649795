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


def run_mac_tx(steps, *, flow_control=False):
    """Drive EthMac's transmit side (its ``tx`` domain) through ``steps`` of (clocks,
    tx_enable) while a 70-byte frame (first byte 0x02) is offered on ``tx`` from the first
    clock. Returns the bytes the MAC took from ``tx`` by the end of each step, and the
    frames on the GMII pins as (bytes after the SFD, tx_er seen)."""

    from macdma.hdl.mac.mac import EthMac

    dut = EthMac(flow_control=flow_control)
    frame = bytes([0x02] + [n & 0xFF for n in range(1, 70)])
    taken_by_step, frames = [], []

    async def bench(ctx):
        ctx.set(dut.tx_clk_enable, 1)
        ctx.set(dut.config.ifg, 12)
        taken, wire, er, sending = 0, [], False, False
        for clocks, enable in steps:
            ctx.set(dut.config.tx_enable, enable)
            for _ in range(clocks):
                ctx.set(dut.tx.valid, taken < len(frame))
                ctx.set(dut.tx.p.data, frame[min(taken, len(frame) - 1)])
                ctx.set(dut.tx.p.last, taken == len(frame) - 1)
                if taken < len(frame) and ctx.get(dut.tx.ready):
                    taken += 1
                if ctx.get(dut.gmii_tx.tx_en):
                    sending = True
                    wire.append(ctx.get(dut.gmii_tx.txd))
                    er = er or bool(ctx.get(dut.gmii_tx.tx_er))
                elif sending:
                    frames.append((bytes(wire[8:]), er))
                    wire, er, sending = [], False, False
                await ctx.tick("tx")
            taken_by_step.append(taken)

    sim = Simulator(dut)
    sim.add_clock(8e-9, domain="tx")
    sim.add_clock(8e-9, domain="rx")
    sim.add_testbench(bench)
    sim.run()
    return taken_by_step, frames


@pytest.mark.parametrize("flow_control", [False, True])
def test_mac_takes_no_byte_of_a_frame_while_its_transmitter_is_off(flow_control):
    """Issue 17: with the transmitter off, the register slice in front of MacTx took a
    frame's first two bytes; a TX channel reset then flushed the rest of the frame from
    the FIFO (whose abort byte followed), and when the transmitter was turned on those
    bytes left as a 10..12-byte runt with tx_er. A frame's first byte now waits outside
    the MAC while it is off, where a flush takes the frame whole; once on, the frame goes
    out whole."""
    taken, frames = run_mac_tx([(40, 0), (300, 1)], flow_control=flow_control)
    assert taken[0] == 0, f"the MAC took {taken[0]} bytes of a frame while its TX was off"
    assert taken[1] == 70
    assert len(frames) == 1
    data, er = frames[0]
    assert not er and data[:70] == bytes([0x02] + [n & 0xFF for n in range(1, 70)])
    assert len(data) == 74  # the frame and its FCS


def test_a_frame_that_entered_the_mac_finishes_when_its_transmitter_turns_off():
    """Turning the transmitter off mid-frame stops the next frame, never the one the MAC
    has started: the rest of it still enters and leaves whole."""
    taken, frames = run_mac_tx([(20, 1), (300, 0)])
    assert taken[-1] == 70
    assert len(frames) == 1 and not frames[0][1] and len(frames[0][0]) == 74
