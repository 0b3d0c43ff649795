"""RgmiiAdapter (the logic between the SoC's GMII/MII port and the DDR pins) in Amaranth's
simulator: byte pairing at 1000 Mb/s, nibble timing and TXC at 10/100, in-band status."""

from itertools import pairwise

import pytest
from amaranth import *
from amaranth.sim import Simulator

from macdma.hdl.boards.rgmii import SPEED_10, SPEED_100, SPEED_1000, RgmiiAdapter


def tx_trace(speed, tx_clk_hz=125e6, cycles=200):
    """Per tx clock: (enable, txd rise, txd fall, tx_ctl pair, txc pair). The stand-in MAC
    puts a new nibble/byte on txd at every enabled clock, as the MAC does."""
    dut = RgmiiAdapter(tx_clk_hz)
    m = Module()
    m.domains.tx = ClockDomain("tx")
    m.domains.rx = ClockDomain("rx")
    m.submodules.dut = dut
    counter = Signal(8)
    with m.If(dut.tx_clk_enable):
        m.d.tx += counter.eq(counter + 1)
    m.d.comb += [dut.gmii_tx.txd.eq(counter), dut.gmii_tx.tx_en.eq(1), dut.speed.eq(speed)]
    sim = Simulator(m)
    sim.add_clock(8e-9, domain="tx")
    sim.add_clock(8e-9, domain="rx")
    trace = []

    async def bench(ctx):
        for _ in range(cycles):
            await ctx.tick("tx")
            trace.append(
                (
                    ctx.get(dut.tx_clk_enable),
                    ctx.get(dut.txd_o[0]),
                    ctx.get(dut.txd_o[1]),
                    (ctx.get(dut.tx_ctl_o[0]), ctx.get(dut.tx_ctl_o[1])),
                    (ctx.get(dut.txc_o[0]), ctx.get(dut.txc_o[1])),
                )
            )

    sim.add_testbench(bench)
    sim.run()
    return trace[20:]


def test_gigabit_sends_a_byte_per_clock_low_nibble_on_the_rising_edge():
    trace = tx_trace(SPEED_1000)
    assert all(enable for enable, *_ in trace)
    bytes_sent = [rise | fall << 4 for _, rise, fall, _, _ in trace]
    assert all((b - a) % 256 == 1 for a, b in pairwise(bytes_sent))
    assert {ctl for *_, ctl, _ in trace} == {(1, 1)}  # tx_en, no error
    assert {txc for *_, txc in trace} == {(1, 0)}


@pytest.mark.parametrize(
    "speed, tx_clk_hz, period",
    [(SPEED_100, 125e6, 5), (SPEED_10, 125e6, 50), (SPEED_100, 25e6, 1), (SPEED_10, 25e6, 10)],
)
def test_mii_speeds_hold_each_nibble_one_txc_period_with_the_edge_mid_nibble(
    speed, tx_clk_hz, period
):
    trace = tx_trace(speed, tx_clk_hz, cycles=40 + 6 * period)
    enables = [index for index, (enable, *_) in enumerate(trace) if enable]
    assert all(b - a == period for a, b in pairwise(enables))
    # TXC in half-cycles: 50 % duty, one period per nibble.
    halves = [level for *_, txc in trace for level in txc]
    rises = [i for i in range(1, len(halves)) if halves[i] and not halves[i - 1]]
    assert all(b - a == 2 * period for a, b in pairwise(rises))
    assert sum(halves[rises[0] : rises[0] + 2 * period]) == period
    nibbles = [rise for _, rise, _, _, _ in trace]
    for edge in rises:  # the nibble is stable around each rising TXC edge ...
        cycle = edge // 2
        assert nibbles[cycle] == nibbles[cycle - 1] or period == 1
        assert trace[cycle][1] == trace[cycle][2]  # ... and the same on both edges
    assert len(set(nibbles)) > 3


def test_receive_pairs_nibbles_and_decodes_inband_status():
    dut = RgmiiAdapter()
    m = Module()
    m.domains.tx = ClockDomain("tx")
    m.domains.rx = ClockDomain("rx")
    m.submodules.dut = dut
    sim = Simulator(m)
    sim.add_clock(8e-9, domain="rx")
    sim.add_clock(8e-9, domain="tx")

    async def bench(ctx):
        # Between frames: link up, 1000 Mb/s, full duplex = 0b1101.
        ctx.set(dut.rxd_i[0], 0b1101)
        await ctx.tick("rx").repeat(2)
        assert ctx.get(dut.inband_link) and ctx.get(dut.inband_full_duplex)
        assert ctx.get(dut.inband_speed) == SPEED_1000
        ctx.set(dut.rxd_i[0], 0x5)
        ctx.set(dut.rxd_i[1], 0xD)
        ctx.set(dut.rx_ctl_i[0], 1)
        ctx.set(dut.rx_ctl_i[1], 1)
        await ctx.tick("rx")
        assert ctx.get(dut.gmii_rx.rxd) == 0xD5
        assert ctx.get(dut.gmii_rx.rx_dv) and not ctx.get(dut.gmii_rx.rx_er)
        assert ctx.get(dut.inband_speed) == SPEED_1000  # frame data is not status
        ctx.set(dut.rx_ctl_i[1], 0)  # falling-edge RX_CTL = DV xor ER
        await ctx.tick("rx")
        assert ctx.get(dut.gmii_rx.rx_er)
        assert ctx.get(dut.rx_clk_enable)

    sim.add_testbench(bench)
    sim.run()
