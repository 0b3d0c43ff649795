"""The board design minus PLL and I/O buffers (BoardCore) in Amaranth's simulator: a host
programs the SoC through the UART bridge, a frame leaves on the RGMII DDR pairs and a
frame arriving on them lands in the on-chip RAM, read back through the bridge; the host
reads and writes a PHY model's registers through the register bank's MDIO block."""

import struct
import zlib

from amaranth import *
from amaranth.sim import Simulator
from mdio_phy import OP_READ, OP_WRITE, MdioFrame, MdioPhy
from uart_model import SimUart
from unbuilt import elaborate

from macdma.firmware import regs
from macdma.firmware.descriptor import Descriptor
from macdma.hdl.boards import top
from macdma.hdl.boards.boards import BOARDS
from macdma.hdl.boards.top import BoardConfig, BoardCore
from macdma.hdl.boards.uart_bridge import PHY_ADDR, RAM_BASE

SYS_HZ = 50e6
BIT = 8  # UART bit in system clocks: a fast baud rate keeps the simulation short
RING = 0x100
BUFFER = 0x200
RX_RING = 0x180
RX_BUFFER = 0x300
PAYLOAD = bytes(range(6, 66))  # 60 bytes: dst, src, type and data; the MAC adds FCS
RX_FRAME = bytes(range(100, 172))  # 72 bytes without FCS


def ram_image():
    ram = bytearray(1024)
    ram[RING : RING + 16] = Descriptor.tx(BUFFER, len(PAYLOAD), sop=True, eop=True).pack()
    ram[BUFFER : BUFFER + len(PAYLOAD)] = PAYLOAD
    ram[RX_RING : RX_RING + 16] = Descriptor.rx(RX_BUFFER, 256).pack()
    return list(struct.unpack(f"<{len(ram) // 4}I", ram))


def simulate_board(host, *, ram_init=(), processes=(), phy_address=1, phy_registers=None):
    """Run ``host(ctx, core, write, read)`` against a BoardCore, with ``processes(core)``
    as background testbenches and an MDIO PHY model on the management pins; return the
    PHY model. ``write``/``read`` are the bridge's commands over the simulated UART."""
    config = BoardConfig("sim", "clk", 25e6, sys_clk_hz=SYS_HZ, uart_baud=int(SYS_HZ / BIT))
    core = BoardCore(config, ram_init=ram_init)
    phy = MdioPhy(core.mdio, phy_address, dict(phy_registers or {}))
    m = Module()
    for name in ("sync", "tx", "rx"):
        m.domains += ClockDomain(name)
    m.submodules.core = core
    sim = Simulator(m)
    sim.add_clock(1 / SYS_HZ, domain="sync")
    sim.add_clock(8e-9, domain="tx")
    sim.add_clock(8e-9, domain="rx")
    uart = SimUart(core.uart_rx, core.uart_tx, BIT, reply_timeout_bytes=100)

    async def testbench(ctx):
        async def send(data):
            await uart.send(ctx, data)

        async def reply(length):
            return await uart.reply(ctx, length)

        async def write(addr, value):
            await send(b"W" + addr.to_bytes(4, "big") + value.to_bytes(4, "big"))
            assert await reply(1) == b"A", f"write to 0x{addr:x}"

        async def read(addr):
            await send(b"R" + addr.to_bytes(4, "big"))
            head = await reply(1)
            assert head == b"D", f"read of 0x{addr:x}"
            return int.from_bytes(await reply(4), "big")

        await ctx.tick().repeat(10)
        await host(ctx, core, write, read)

    sim.add_testbench(uart.receiver, background=True)
    sim.add_testbench(phy.process, background=True)
    for process in processes:
        sim.add_testbench(process(core), background=True)
    sim.add_testbench(testbench)
    sim.run()
    return phy


def test_frame_programmed_over_uart_leaves_on_rgmii():
    wire = []

    def rgmii_monitor(core):
        async def process(ctx):
            while True:
                await ctx.tick("tx")
                if ctx.get(core.tx_ctl_o[0]):
                    wire.append(ctx.get(core.txd_o[0]) | ctx.get(core.txd_o[1]) << 4)

        return process

    def rgmii_source(core):
        async def process(ctx):
            # Between frames the PHY signals link up, 1000 Mb/s, full duplex in-band.
            ctx.set(core.rxd_i[0], 0b1101)
            await ctx.tick("rx").repeat(30000)  # until the host has set the RX channel up
            fcs = zlib.crc32(RX_FRAME).to_bytes(4, "little")
            for byte in b"\x55" * 7 + b"\xd5" + RX_FRAME + fcs:
                ctx.set(core.rxd_i[0], byte & 0xF)
                ctx.set(core.rxd_i[1], byte >> 4)
                ctx.set(core.rx_ctl_i[0], 1)
                ctx.set(core.rx_ctl_i[1], 1)
                await ctx.tick("rx")
            ctx.set(core.rx_ctl_i[0], 0)
            ctx.set(core.rx_ctl_i[1], 0)
            ctx.set(core.rxd_i[0], 0b1101)

        return process

    async def host(ctx, core, write, read):
        await write(regs.RX_RING_BASE, RX_RING)
        await write(regs.RX_RING_SIZE, 4)
        await write(regs.RX_CTRL, regs.RX_CTRL_RUN_MASK)
        await write(regs.RX_TAIL, 1)
        await write(regs.TX_RING_BASE, RING)
        await write(regs.TX_RING_SIZE, 4)
        await write(regs.MAC_CTRL, regs.MAC_CTRL_TX_ENABLE_MASK | regs.MAC_CTRL_RX_ENABLE_MASK)
        await write(regs.TX_CTRL, regs.TX_CTRL_RUN_MASK)
        await write(regs.TX_TAIL, 1)
        await ctx.tick().repeat(400)
        assert await read(regs.TX_HEAD) == 1
        words = [await read(RAM_BASE + RING + 4 * i) for i in range(4)]
        assert not Descriptor.from_words(words).own  # written back by the DMA
        # The in-band status (link, 1000 Mb/s, full duplex) is readable at the PHY word.
        assert (await read(PHY_ADDR)) >> 4 == 0b1101

        await ctx.tick().repeat(2000)  # the RX frame has arrived by now
        assert await read(regs.RX_HEAD) == 1
        done = Descriptor.from_words([await read(RAM_BASE + RX_RING + 4 * i) for i in range(4)])
        assert not done.own and not done.error
        assert done.frame_length == len(RX_FRAME)
        words = [await read(RAM_BASE + RX_BUFFER + 4 * i) for i in range(len(RX_FRAME) // 4)]
        assert struct.pack(f"<{len(words)}I", *words) == RX_FRAME

    simulate_board(host, ram_init=ram_image(), processes=(rgmii_monitor, rgmii_source))

    fcs = zlib.crc32(PAYLOAD).to_bytes(4, "little")
    assert bytes(wire) == b"\x55" * 7 + b"\xd5" + PAYLOAD + fcs


def test_mdio_through_the_bridge_and_the_register_bank():
    def mdio_command(*, write, reg, data=0):
        return (
            (int(write) << regs.MDIO_CMD_WRITE_SHIFT)
            | (1 << regs.MDIO_CMD_PHY_SHIFT)
            | (reg << regs.MDIO_CMD_REG_SHIFT)
            | (data << regs.MDIO_CMD_DATA_SHIFT)
        )

    async def host(ctx, core, write, read):
        async def wait_idle():
            for _ in range(20):
                status = await read(regs.MDIO_STATUS)
                if not status & regs.MDIO_STATUS_BUSY_MASK:
                    return status
            raise AssertionError("MDIO_STATUS.busy never fell")

        await write(regs.MDIO_CTRL, 4)
        await write(regs.MDIO_CMD, mdio_command(write=True, reg=0, data=0x1140))
        await wait_idle()
        await write(regs.MDIO_CMD, mdio_command(write=False, reg=3))
        status = await wait_idle()
        assert status & regs.MDIO_STATUS_READ_DATA_MASK == 0x0C87
        assert not status & regs.MDIO_STATUS_CMD_IGNORED_MASK

    phy = simulate_board(host, phy_registers={3: 0x0C87})
    assert phy.frames == [
        MdioFrame(OP_WRITE, 1, 0, 0x1140, (1, 0)),
        MdioFrame(OP_READ, 1, 3, 0x0C87),
    ]
    assert phy.registers[0] == 0x1140 and phy.contention == 0
    for rises in (phy.rises[:64], phy.rises[64:]):
        assert {b - a for a, b in zip(rises, rises[1:], strict=False)} == {8}  # MDIO_CTRL 4


def test_the_soc_is_told_the_boards_system_clock(monkeypatch):
    """PTP_NOMINAL, the PTP clock's default increment, is the system clock's period: the
    board core builds its SoC for the board's clock, whatever its SocParams say."""
    built = []

    class RecordingSoc(top.MacDmaSoc):
        def __init__(self, params):
            built.append(params)
            super().__init__(params)

    monkeypatch.setattr(top, "MacDmaSoc", RecordingSoc)
    config = BOARDS["versa-ecp5"].config
    assert config.soc.sys_clk_hz != config.sys_clk_hz  # the default would be wrong here
    elaborate(BoardCore(config))
    assert [params.sys_clk_hz for params in built] == [config.sys_clk_hz]
