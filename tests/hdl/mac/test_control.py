"""MacControl (hdl/mac/control.py), the MAC register block's hardware, in Amaranth's
simulator: its ``regs`` port driven as the CSR bank drives it, the settings arriving in
the PHY domains, and the XOFF request's hysteresis on the RX FIFO level."""

from amaranth import *
from amaranth.sim import Simulator
from unbuilt import elaborate, rejected

from macdma.hdl.mac.control import MacControl
from macdma.hdl.mac.flow_control import PAUSE_MULTICAST_ADDRESS, PAUSE_OPCODE

FILL_WIDTH = 13


class Domains(Elaboratable):
    """``MacControl`` with the clock domains it uses."""

    def __init__(self, flow_control=True):
        self.dut = MacControl(flow_control=flow_control, fill_width=FILL_WIDTH)

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain()
        m.domains.tx = ClockDomain()
        m.domains.rx = ClockDomain()
        m.submodules.dut = self.dut
        return m


def simulate(bench, flow_control=True):
    top = Domains(flow_control)
    sim = Simulator(top)
    sim.add_clock(10e-9)
    sim.add_clock(8e-9, domain="tx")
    sim.add_clock(8e-9, domain="rx")

    async def testbench(ctx):
        await bench(ctx, top.dut)

    sim.add_testbench(testbench)
    sim.run()


async def settle(ctx):
    """Long enough for two flip-flops in every domain."""
    await ctx.tick().repeat(5)


def test_settings_reach_the_phy_domains():
    async def bench(ctx, dut):
        regs = dut.regs
        assert ctx.get(dut.config.ifg) == 0  # the synchronisers start at 0
        await settle(ctx)
        assert ctx.get(dut.config.ifg) == 12 and ctx.get(dut.config.rx_max_length) == 1518
        ctx.set(regs.ctrl.tx_enable, 1)
        ctx.set(regs.ctrl.mii_select, 1)
        ctx.set(regs.max_len, 2000)
        ctx.set(regs.addr_lo, 0xBBCCDDEE)
        ctx.set(regs.addr_hi, 0x02AA)
        ctx.set(regs.fc_ctrl.rx_pause, 1)
        ctx.set(regs.fc_ctrl.forward, 1)
        ctx.set(regs.fc_quanta.quanta, 0x1234)
        await settle(ctx)
        assert ctx.get(dut.config.tx_enable) == 1 and ctx.get(dut.config.rx_enable) == 0
        assert ctx.get(dut.tx_mii_select) == 1 and ctx.get(dut.rx_mii_select) == 1
        assert ctx.get(dut.config.rx_max_length) == 2000
        assert ctx.get(dut.mcf_rx_config.eth_dst_ucast) == 0x02AA_BBCC_DDEE
        assert ctx.get(dut.tx_lfc_config.eth_src) == 0x02AA_BBCC_DDEE
        assert ctx.get(dut.mcf_rx_config.eth_dst_mcast) == PAUSE_MULTICAST_ADDRESS
        assert ctx.get(dut.rx_lfc_config.opcode) == PAUSE_OPCODE
        assert ctx.get(dut.rx_lfc_en) and ctx.get(dut.tx_lfc_pause_en)
        assert ctx.get(dut.mcf_rx_config.enable) and ctx.get(dut.mcf_rx_config.forward)
        assert ctx.get(dut.tx_lfc_config.quanta) == 0x1234
        assert ctx.get(dut.wait_for_buffers) == 0
        ctx.set(regs.fc_ctrl.tx_pause, 1)
        assert ctx.get(dut.wait_for_buffers) == 1  # sync domain: at once

    simulate(bench)


def test_xoff_request_follows_the_fifo_level_with_hysteresis():
    async def bench(ctx, dut):
        regs = dut.regs
        await settle(ctx)  # watermarks from their reset values: high 1024, low 512

        async def level(fill):
            ctx.set(dut.rx_fifo_fill_bytes, fill)
            await settle(ctx)
            return ctx.get(dut.tx_lfc_req)

        assert await level(1023) == 0
        assert await level(1024) == 1
        assert await level(600) == 1  # between the marks: unchanged
        assert await level(511) == 0
        assert await level(600) == 0
        ctx.set(regs.fc_ctrl.xoff, 1)  # forced, whatever the level
        assert await level(0) == 1
        ctx.set(regs.fc_ctrl.xoff, 0)
        assert await level(0) == 0

    simulate(bench)


def test_status_levels_come_back_to_the_system_clock():
    async def bench(ctx, dut):
        status = dut.regs.fc_status
        ctx.set(dut.rx_paused, 1)
        await settle(ctx)
        assert (ctx.get(status.rx_paused), ctx.get(status.xoff_sent)) == (1, 0)
        ctx.set(dut.xoff_sent, 1)
        ctx.set(dut.rx_paused, 0)
        await settle(ctx)
        assert (ctx.get(status.rx_paused), ctx.get(status.xoff_sent)) == (0, 1)

    simulate(bench)


def test_without_flow_control_only_the_mac_settings():
    plain = MacControl(flow_control=False, fill_width=FILL_WIDTH)
    elaborate(plain)
    assert not hasattr(plain, "tx_lfc_req") and not hasattr(plain, "wait_for_buffers")

    async def bench(ctx, dut):
        ctx.set(dut.regs.ifg, 20)
        await settle(ctx)
        assert ctx.get(dut.config.ifg) == 20

    simulate(bench, flow_control=False)


def test_parameters_are_checked():
    with rejected(TypeError, "flow_control must be True or False, not 1"):
        MacControl(flow_control=1, fill_width=FILL_WIDTH)
    with rejected(ValueError, "fill_width must be a positive integer, not 0"):
        MacControl(flow_control=True, fill_width=0)
