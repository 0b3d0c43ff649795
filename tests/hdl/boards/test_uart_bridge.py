"""The board's UART host bridge in Amaranth's simulator: a UART model on the pins, the real
register bank and an Axi4Ram behind it, and the PHY control word. (MDIO is a register
bank block: through the bridge in tests/hdl/boards/test_top.py.)"""

from amaranth import *
from amaranth.lib.wiring import connect
from amaranth.sim import Simulator
from uart_model import SimUart

from macdma.hdl.boards.uart import UartRx, UartTx
from macdma.hdl.boards.uart_bridge import PHY_ADDR, RAM_BASE, UartBridge
from macdma.hdl.bus.axi4 import connect_read_write
from macdma.hdl.bus.axi4_ram import Axi4Ram
from macdma.hdl.bus.csr_bank import CsrBank
from macdma.hdl.regmap import REGISTER_MAP

BIT = 8  # system clocks per UART bit in the test


class Harness(Elaboratable):
    def __init__(self):
        self.rx_pin = Signal(init=1)
        self.tx_pin = Signal()
        self.irq = Signal()
        self.bank = CsrBank(REGISTER_MAP)
        self.ram = Axi4Ram(4096, id_width=2)
        self.bridge = UartBridge(cycles_per_byte=10 * BIT, ram_bytes=4096)

    def elaborate(self, platform):
        m = Module()
        m.submodules.uart_rx = uart_rx = UartRx(BIT)
        m.submodules.uart_tx = uart_tx = UartTx(BIT)
        m.submodules.bridge = bridge = self.bridge
        m.submodules.bank = self.bank
        m.submodules.ram = self.ram
        m.d.comb += [uart_rx.rx.eq(self.rx_pin), self.tx_pin.eq(uart_tx.tx)]
        connect(m, uart_rx.o, bridge.rx)
        connect(m, bridge.tx, uart_tx.i)
        connect(m, bridge.csr, self.bank.bus)
        connect_read_write(m, bus=self.ram.axi, read=bridge.mem_read, write=bridge.mem_write)
        m.d.comb += bridge.irq.eq(self.irq)
        return m


def run(host):
    dut = Harness()
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    uart = SimUart(dut.rx_pin, dut.tx_pin, BIT)
    send, reply = uart.send, uart.reply

    async def bench(ctx):
        async def write(addr, value):
            await send(ctx, b"W" + addr.to_bytes(4, "big") + value.to_bytes(4, "big"))
            return await reply(ctx, 1)

        async def read(addr):
            await send(ctx, b"R" + addr.to_bytes(4, "big"))
            head = await reply(ctx, 1)
            return head + (await reply(ctx, 4) if head == b"D" else b"")

        await host(ctx, dut, write, read, reply, send)

    sim.add_testbench(uart.receiver, background=True)
    sim.add_testbench(bench)
    sim.run()


def register_offset(name):
    return REGISTER_MAP.address(name)


def test_register_write_and_read_back():
    offset = register_offset("TX_RING_BASE")

    async def host(ctx, dut, write, read, reply, send):
        assert await write(offset, 0x0000_1240) == b"A"
        assert await read(offset) == b"D" + (0x0000_1240).to_bytes(4, "big")
        assert await read(0x0000_0FFC) == b"E"  # no register there: SLVERR

    run(host)


def test_ram_write_and_read_back_and_bad_address():
    async def host(ctx, dut, write, read, reply, send):
        assert await write(RAM_BASE + 0x10, 0xDEADBEEF) == b"A"
        assert await write(RAM_BASE + 0x14, 0x01020304) == b"A"
        assert await read(RAM_BASE + 0x10) == b"D\xde\xad\xbe\xef"
        assert await read(RAM_BASE + 0x14) == b"D\x01\x02\x03\x04"
        assert await read(0x2000_0000) == b"E"

    run(host)


def test_irq_rising_edge_sends_one_notification():
    async def host(ctx, dut, write, read, reply, send):
        ctx.set(dut.irq, 1)
        assert await reply(ctx, 1) == b"!"
        await ctx.tick().repeat(40 * BIT)
        ctx.set(dut.irq, 0)
        await ctx.tick().repeat(40 * BIT)
        assert await read(RAM_BASE) == b"D\x00\x00\x00\x00"  # nothing else was sent

    run(host)


def test_garbage_and_a_truncated_command_are_dropped():
    async def host(ctx, dut, write, read, reply, send):
        await send(ctx, b"xyW\x80")  # junk, then a write cut short: times out
        await ctx.tick().repeat(70 * 10 * BIT)
        assert await write(RAM_BASE + 4, 7) == b"A"
        assert await read(RAM_BASE + 4) == b"D\x00\x00\x00\x07"

    run(host)


def test_phy_word_and_no_mdio_word():
    # MDIO lives in the register bank now (MDIO_* at CSR_BASE); 0x4000_0000 is unmapped.
    async def host(ctx, dut, write, read, reply, send):
        assert await read(0x4000_0000) == b"E"
        assert await write(0x4000_0000, 1 << 26) == b"E"
        ctx.set(dut.bridge.phy_status, 0b1101)
        assert await write(PHY_ADDR, 0b101) == b"A"  # 100 Mb/s, PHY held in reset
        assert ctx.get(dut.bridge.phy_speed) == 0b01 and ctx.get(dut.bridge.phy_reset) == 1
        assert await read(PHY_ADDR) == b"D" + (0b1101_0101).to_bytes(4, "big")

    run(host)
