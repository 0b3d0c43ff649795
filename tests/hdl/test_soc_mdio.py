"""The SoC's MDIO registers (MDIO_CTRL, MDIO_CMD, MDIO_STATUS) in Amaranth's simulator:
AXI4-Lite writes on ``csr`` start clause 22 frames on the ``mdc``/``mdio_*`` pins, checked
by a PHY model (tests/models/mdio_phy.py); reads return the PHY's data in MDIO_STATUS; a command
while busy is ignored and flagged; an invalid divider is rejected with CFG_ERROR."""

import gc
import warnings

from amaranth import *
from amaranth.hdl import UnusedElaboratable
from amaranth.lib import wiring
from amaranth.sim import Simulator
from axi_lite_master import AxiLiteMaster
from mdio_phy import OP_READ, OP_WRITE, MdioFrame, MdioPhy

from macdma.firmware import regs
from macdma.hdl.soc import MacDmaSoc, SocTop

PHY_ADDRESS = 0x05
TIMEOUT_POLLS = 500
POLL_GAP_CYCLES = 16


def command(*, write: bool, phy: int, reg: int, data: int = 0) -> int:
    """An MDIO_CMD word, from the generated driver constants."""
    return (
        (int(write) << regs.MDIO_CMD_WRITE_SHIFT)
        | (phy << regs.MDIO_CMD_PHY_SHIFT)
        | (reg << regs.MDIO_CMD_REG_SHIFT)
        | (data << regs.MDIO_CMD_DATA_SHIFT)
    )


async def wait_idle(ctx, csr) -> int:
    """Poll MDIO_STATUS until busy is 0; return the last status word."""
    for _ in range(TIMEOUT_POLLS):
        status = await csr.read_ok(regs.MDIO_STATUS)
        if not status & regs.MDIO_STATUS_BUSY_MASK:
            return status
        await ctx.tick().repeat(POLL_GAP_CYCLES)
    raise AssertionError("MDIO_STATUS.busy never fell")


def simulate(bench, registers=None):
    """Run ``bench(ctx, soc, csr, phy)`` on a MacDmaSoc with a PHY model on its MDIO pins."""
    soc = MacDmaSoc()
    phy = MdioPhy(soc.mdio, PHY_ADDRESS, dict(registers or {}))
    m = Module()
    for name in ("sync", "tx", "rx"):
        m.domains += ClockDomain(name)
    m.submodules.soc = soc
    sim = Simulator(m)
    sim.add_clock(1e-8, domain="sync")
    sim.add_clock(8e-9, domain="tx")
    sim.add_clock(8e-9, domain="rx")
    sim.add_testbench(phy.process, background=True)

    async def testbench(ctx):
        await ctx.tick().repeat(4)
        await bench(ctx, soc, AxiLiteMaster(ctx, soc.csr), phy)

    sim.add_testbench(testbench)
    sim.run()
    return phy


def test_write_and_read_frames_through_the_registers():
    async def bench(ctx, soc, csr, phy):
        assert await csr.read_ok(regs.MDIO_CTRL) == regs.MDIO_CTRL_CLK_DIV_RESET_VALUE == 32
        await csr.write_ok(regs.MDIO_CTRL, 3)
        await csr.write_ok(regs.MDIO_CMD, command(write=True, phy=PHY_ADDRESS, reg=4, data=0x01E1))
        status = await csr.read_ok(regs.MDIO_STATUS)
        assert status & regs.MDIO_STATUS_BUSY_MASK, "busy not set right after the command"
        await wait_idle(ctx, csr)
        assert phy.registers[4] == 0x01E1

        await csr.write_ok(regs.MDIO_CMD, command(write=False, phy=PHY_ADDRESS, reg=2))
        status = await wait_idle(ctx, csr)
        assert status & regs.MDIO_STATUS_READ_DATA_MASK == 0x0141
        assert not status & regs.MDIO_STATUS_CMD_IGNORED_MASK
        assert ctx.get(soc.mdio.mdc) == 0 and ctx.get(soc.mdio.oe) == 0

    phy = simulate(bench, registers={2: 0x0141})
    assert phy.frames == [
        MdioFrame(OP_WRITE, PHY_ADDRESS, 4, 0x01E1, (1, 0)),
        MdioFrame(OP_READ, PHY_ADDRESS, 2, 0x0141),
    ]
    assert phy.contention == 0
    # MDC from MDIO_CTRL.clk_div = 3: a 6-cycle period, 3 high.
    for rises in (phy.rises[:64], phy.rises[64:]):
        assert {b - a for a, b in zip(rises, rises[1:], strict=False)} == {6}
    assert {fall - rise for rise, fall in zip(phy.rises, phy.falls, strict=False)} == {3}
    # The write frame bit for bit: preamble, ST, OP, PHYAD, REGAD, TA, data.
    expected = "1" * 32 + "0101" + "00101" + "00100" + "10" + format(0x01E1, "016b")
    assert "".join(str(bit) for _, bit in phy.sampled[:64]) == expected


def test_reset_divider_gives_mdc_of_sys_clk_over_64():
    async def bench(ctx, soc, csr, phy):
        await csr.write_ok(regs.MDIO_CMD, command(write=True, phy=PHY_ADDRESS, reg=0, data=1))
        await wait_idle(ctx, csr)

    phy = simulate(bench)
    assert {b - a for a, b in zip(phy.rises, phy.rises[1:], strict=False)} == {64}
    assert len(phy.rises) == 64


def test_command_while_busy_is_ignored_and_flagged():
    async def bench(ctx, soc, csr, phy):
        await csr.write_ok(regs.MDIO_CTRL, 4)
        first = command(write=True, phy=PHY_ADDRESS, reg=9, data=0x0300)
        second = command(write=True, phy=PHY_ADDRESS, reg=9, data=0x0200)
        await csr.write_ok(regs.MDIO_CMD, first)
        await csr.write_ok(regs.MDIO_CMD, second)  # still OKAY on the bus
        status = await csr.read_ok(regs.MDIO_STATUS)
        assert status & regs.MDIO_STATUS_BUSY_MASK
        assert status & regs.MDIO_STATUS_CMD_IGNORED_MASK
        assert await csr.read_ok(regs.MDIO_CMD) == second  # the fields are only a record
        status = await wait_idle(ctx, csr)
        await ctx.tick().repeat(200)
        assert status & regs.MDIO_STATUS_CMD_IGNORED_MASK, "cmd_ignored must be sticky"
        assert phy.frames == [MdioFrame(OP_WRITE, PHY_ADDRESS, 9, 0x0300, (1, 0))]
        assert phy.registers == {9: 0x0300}

        # W1C: writing 0 keeps it, writing the bit clears it.
        await csr.write_ok(regs.MDIO_STATUS, 0)
        assert await csr.read_ok(regs.MDIO_STATUS) & regs.MDIO_STATUS_CMD_IGNORED_MASK
        await csr.write_ok(regs.MDIO_STATUS, regs.MDIO_STATUS_CMD_IGNORED_MASK)
        assert await csr.read_ok(regs.MDIO_STATUS) == 0
        # Once idle, the same command goes out.
        await csr.write_ok(regs.MDIO_CMD, second)
        await wait_idle(ctx, csr)
        assert phy.registers == {9: 0x0200}
        assert not await csr.read_ok(regs.MDIO_STATUS) & regs.MDIO_STATUS_CMD_IGNORED_MASK

    simulate(bench)


def test_invalid_clk_div_is_rejected_with_cfg_error():
    async def bench(ctx, soc, csr, phy):
        await csr.write_ok(regs.MDIO_CTRL, 10)
        for bad in (0, 1):
            await csr.write_ok(regs.MDIO_CTRL, bad)  # OKAY, but not taken
            assert await csr.read_ok(regs.MDIO_CTRL) == 10
            assert await csr.read_ok(regs.ID_CFG_ERROR) == regs.ID_CFG_ERROR_MDIO_CTRL_CLK_DIV_MASK
            assert await csr.read_ok(regs.IRQ_STATUS) & regs.IRQ_STATUS_CFG_ERROR_MASK
            await csr.write_ok(regs.ID_CFG_ERROR, regs.ID_CFG_ERROR_MDIO_CTRL_CLK_DIV_MASK)
            await csr.write_ok(regs.IRQ_STATUS, regs.IRQ_STATUS_CFG_ERROR_MASK)
        await csr.write_ok(regs.MDIO_CTRL, 255)
        assert await csr.read_ok(regs.MDIO_CTRL) == 255
        assert await csr.read_ok(regs.ID_CFG_ERROR) == 0
        # The divider still in force is the last valid one.
        await csr.write_ok(regs.MDIO_CTRL, 2)
        await csr.write_ok(regs.MDIO_CTRL, 0)
        await csr.write_ok(regs.MDIO_CMD, command(write=False, phy=PHY_ADDRESS, reg=1))
        await wait_idle(ctx, csr)

    phy = simulate(bench, registers={1: 0x796D})
    assert {b - a for a, b in zip(phy.rises, phy.rises[1:], strict=False)} == {4}
    assert phy.frames == [MdioFrame(OP_READ, PHY_ADDRESS, 1, 0x796D)]


def test_soc_top_has_the_mdio_pins():
    with warnings.catch_warnings():
        # The top is never elaborated here; Amaranth would warn about it and its core.
        warnings.simplefilter("ignore", UnusedElaboratable)
        members = SocTop().signature.members
        gc.collect()
    for name in ("mdc", "mdio_o", "mdio_oe"):
        assert members[name].flow == wiring.Out and Shape.cast(members[name].shape) == unsigned(1)
    assert members["mdio_i"].flow == wiring.In and Shape.cast(members["mdio_i"].shape) == unsigned(
        1
    )
