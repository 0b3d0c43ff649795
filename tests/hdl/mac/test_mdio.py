"""MdioMaster in Amaranth's simulator against a clause 22 PHY model (tests/models/mdio_phy.py):
the run-time MDC divider, the exact bits of read and write frames, read data from the PHY,
and ``start`` ignored while busy. Then MdioController, the MDIO register block around it,
with its ``regs`` port driven as the CSR bank drives it."""

import pytest
from amaranth.sim import Simulator
from mdio_phy import OP_READ, OP_WRITE, MdioFrame, MdioPhy
from unbuilt import rejected

from macdma.hdl.mac.mdio import FRAME_BITS, MdioController, MdioMaster

TIMEOUT_CYCLES = 100_000


def bits(value: int, width: int) -> str:
    return format(value, f"0{width}b")


def simulate(bench, phy_address=1, registers=None, delay_cycles=0):
    """Run ``bench(ctx, dut, phy)`` on a fresh MdioMaster with a PHY model on its pins."""
    dut = MdioMaster()
    phy = MdioPhy(dut.mdio, phy_address, dict(registers or {}), delay_cycles)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(phy.process, background=True)

    async def testbench(ctx):
        await bench(ctx, dut, phy)

    sim.add_testbench(testbench)
    sim.run()
    return phy


async def frame(ctx, dut, *, clk_div, write, phy, reg, data=0):
    """Start one frame and wait for it to end; return how many cycles busy was high."""
    ctx.set(dut.clk_div, clk_div)
    ctx.set(dut.write, write)
    ctx.set(dut.phy, phy)
    ctx.set(dut.reg, reg)
    ctx.set(dut.write_data, data)
    ctx.set(dut.start, 1)
    await ctx.tick()
    ctx.set(dut.start, 0)
    assert ctx.get(dut.busy), "busy did not rise the cycle after start"
    for cycles in range(1, TIMEOUT_CYCLES):
        await ctx.tick()
        if not ctx.get(dut.busy):
            return cycles
    raise AssertionError("the frame never ended")


@pytest.mark.parametrize("clk_div", [2, 3, 7, 32])
def test_write_frame_bits_and_mdc_period(clk_div):
    async def bench(ctx, dut, phy):
        cycles = await frame(ctx, dut, clk_div=clk_div, write=1, phy=3, reg=0x1F, data=0x1234)
        assert cycles == FRAME_BITS * 2 * clk_div
        assert ctx.get(dut.mdio.mdc) == 0 and ctx.get(dut.mdio.oe) == 0, "pins idle after the frame"

    phy = simulate(bench, phy_address=3)
    expected = "1" * 32 + "01" + "01" + bits(3, 5) + bits(0x1F, 5) + "10" + bits(0x1234, 16)
    assert len(phy.sampled) == FRAME_BITS
    assert all(oe for oe, _ in phy.sampled), "the master drives every bit of a write"
    assert "".join(str(bit) for _, bit in phy.sampled) == expected
    assert phy.frames == [MdioFrame(OP_WRITE, 3, 0x1F, 0x1234, (1, 0))]
    assert phy.registers == {0x1F: 0x1234}
    # MDC: period 2 * clk_div system clocks, high for clk_div of them.
    periods = {b - a for a, b in zip(phy.rises, phy.rises[1:], strict=False)}
    highs = {fall - rise for rise, fall in zip(phy.rises, phy.falls, strict=False)}
    assert periods == {2 * clk_div} and highs == {clk_div}


@pytest.mark.parametrize(("clk_div", "delay_cycles"), [(2, 0), (5, 2), (20, 30)])
def test_read_frame_returns_the_phy_data(clk_div, delay_cycles):
    # (20, 30): 2.5 MHz MDC at 100 MHz with the slowest PHY the standard allows (300 ns).
    async def bench(ctx, dut, phy):
        await frame(ctx, dut, clk_div=clk_div, write=0, phy=0b00101, reg=0b10010)
        assert ctx.get(dut.read_data) == 0xA5C3

    phy = simulate(bench, 0b00101, {0b10010: 0xA5C3}, delay_cycles)
    header = "1" * 32 + "01" + "10" + "00101" + "10010"
    driven = [bit for oe, bit in phy.sampled if oe]
    assert "".join(map(str, driven)) == header, "the master drives only up to the register"
    assert [oe for oe, _ in phy.sampled] == [1] * len(header) + [0] * (64 - len(header))
    assert phy.frames == [MdioFrame(OP_READ, 0b00101, 0b10010, 0xA5C3)]
    assert phy.contention == 0


def test_read_of_an_absent_phy_returns_the_pull_up():
    async def bench(ctx, dut, phy):
        await frame(ctx, dut, clk_div=2, write=0, phy=7, reg=1)
        assert ctx.get(dut.read_data) == 0xFFFF

    phy = simulate(bench, phy_address=1, registers={1: 0x1234})
    assert phy.frames == [MdioFrame(OP_READ, 7, 1)]


def test_start_is_ignored_while_busy_and_clk_div_is_sampled_at_start():
    async def bench(ctx, dut, phy):
        ctx.set(dut.clk_div, 2)
        ctx.set(dut.write, 1)
        ctx.set(dut.phy, 1)
        ctx.set(dut.reg, 4)
        ctx.set(dut.write_data, 0x1111)
        ctx.set(dut.start, 1)
        await ctx.tick()
        # A second start and a new divider while the frame runs change nothing.
        ctx.set(dut.reg, 5)
        ctx.set(dut.write_data, 0x2222)
        ctx.set(dut.clk_div, 9)
        await ctx.tick().repeat(20)
        ctx.set(dut.start, 0)
        while ctx.get(dut.busy):
            await ctx.tick()
        await ctx.tick().repeat(50)
        assert not ctx.get(dut.busy)

    phy = simulate(bench, phy_address=1)
    assert phy.frames == [MdioFrame(OP_WRITE, 1, 4, 0x1111, (1, 0))]
    assert {b - a for a, b in zip(phy.rises, phy.rises[1:], strict=False)} == {4}


def test_clk_div_bits_is_checked():
    with rejected(ValueError, "clk_div_bits must be an integer in 1..16, not 0"):
        MdioMaster(0)


def test_controller_starts_a_frame_per_command_write_and_flags_one_while_busy():
    dut = MdioController()
    phy = MdioPhy(dut.mdio, 2, {0x03: 0xBEEF})
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(phy.process, background=True)
    regs = dut.regs
    ignored_sets = []

    async def command(ctx, *, write, reg, data=0):
        ctx.set(regs.cmd.write, write)
        ctx.set(regs.cmd.phy, 2)
        ctx.set(regs.cmd.reg, reg)
        ctx.set(regs.cmd.data, data)
        ctx.set(regs.cmd.written, 1)
        ignored_sets.append(ctx.get(regs.status.cmd_ignored_set))
        await ctx.tick()
        ctx.set(regs.cmd.written, 0)

    async def bench(ctx):
        ctx.set(regs.ctrl.clk_div, 3)
        await command(ctx, write=0, reg=0x03)
        assert ctx.get(regs.status.busy)
        await ctx.tick().repeat(10)
        await command(ctx, write=1, reg=0x04, data=0x1111)  # while busy: ignored, flagged
        while ctx.get(regs.status.busy):
            await ctx.tick()
        assert ctx.get(regs.status.read_data) == 0xBEEF
        await command(ctx, write=1, reg=0x04, data=0x2222)
        while ctx.get(regs.status.busy):
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert ignored_sets == [0, 1, 0]
    assert [(f.op, f.reg) for f in phy.frames] == [(OP_READ, 0x03), (OP_WRITE, 0x04)]
    assert phy.registers[0x04] == 0x2222
