"""``UartBridge``: a host on a serial port reads and writes the register bank (the PHY's
MDIO included), the on-chip RAM and the PHY control word, and is told when the SoC raises
its interrupt.

Protocol (bytes, multi-byte fields big-endian; the host waits for each reply):

=====================================  =============================================
host -> board                          board -> host
=====================================  =============================================
``'W'`` addr[4] data[4]                ``'A'`` (done) or ``'E'`` (bus error / bad address)
``'R'`` addr[4]                        ``'D'`` data[4] or ``'E'``
(nothing)                              ``'!'``: the SoC's ``irq`` line rose
=====================================  =============================================

``'!'`` is only sent between replies, never inside one, so a host reads one byte and
knows from it whether a reply or a notification follows. Bytes other than ``'W'``/``'R'``
at the start of a command are ignored, and a command left incomplete for
``TIMEOUT_BYTES`` byte times is dropped, so a host can always resynchronise.

Address map (:data:`CSR_BASE`, :data:`PHY_ADDR`, :data:`RAM_BASE`): the register bank
(docs/registers.md) at 0, the PHY control/status word at 0x4000_0004, and the on-chip RAM
at 0x8000_0000 (the DMA sees the same RAM at address 0). The PHY's MDIO is reached like
any register: MDIO_CTRL/MDIO_CMD/MDIO_STATUS in the register bank.
``PHY`` (0x4000_0004) write: bits 1:0 the RGMII speed (0 = 10, 1 = 100, 2 = 1000 Mb/s, the
reset value), bit 2 holds the PHY in reset; read: the same bits and, in bits 7:4, the
PHY's in-band status (bit 4 link, 6:5 speed, 7 full duplex).
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..bus.axi4 import BURST_INCR, RESP_OKAY, Axi4ReadSignature, Axi4WriteSignature
from ..bus.axi_lite import AxiLiteSignature

__all__ = ["UartBridge", "CSR_BASE", "PHY_ADDR", "RAM_BASE", "CMD_WRITE", "CMD_READ"]

CSR_BASE = 0x0000_0000
PHY_ADDR = 0x4000_0004
PHY_SPEED_1000 = 0b10
RAM_BASE = 0x8000_0000
CMD_WRITE = ord("W")
CMD_READ = ord("R")
REPLY_DONE = ord("A")
REPLY_DATA = ord("D")
REPLY_ERROR = ord("E")
NOTIFY_IRQ = ord("!")
TIMEOUT_BYTES = 64


class UartBridge(wiring.Component):
    """The command engine between the UART byte streams and the buses.

    Members
    -------
    rx : In(stream.Signature(8)); tx : Out(stream.Signature(8))
        Bytes from and to the host (connect :class:`~.uart.UartRx` / :class:`~.uart.UartTx`).
    csr : Out(AxiLiteSignature(csr_addr_width, 32))
        Master port to the register bank.
    mem_read, mem_write : Out(Axi4ReadSignature / Axi4WriteSignature(32, 32, 2))
        Single-beat master port to the on-chip RAM (via an arbiter with the DMA).
    irq : In(1)
        The SoC's interrupt; each rising edge sends one ``'!'``.
    phy_speed : Out(2); phy_reset : Out(1); phy_status : In(4)
        The ``PHY`` word: RGMII speed, PHY reset, the PHY's in-band status.
    """

    def __init__(
        self,
        *,
        cycles_per_byte: int,
        csr_addr_width: int = 12,
        ram_bytes: int = 16384,
    ):
        self.cycles_per_byte = cycles_per_byte
        self.csr_addr_width = csr_addr_width
        self.ram_bytes = ram_bytes
        super().__init__(
            {
                "rx": In(stream.Signature(8)),
                "tx": Out(stream.Signature(8)),
                "csr": Out(AxiLiteSignature(csr_addr_width, 32)),
                "mem_read": Out(Axi4ReadSignature(32, 32, id_width=2)),
                "mem_write": Out(Axi4WriteSignature(32, 32, id_width=2)),
                "irq": In(1),
                "phy_speed": Out(2, init=PHY_SPEED_1000),
                "phy_reset": Out(1),
                "phy_status": In(4),
            }
        )

    def elaborate(self, platform):
        m = Module()
        command = Signal(8)
        addr = Signal(32)
        data = Signal(32)
        count = Signal(range(9))  # bytes received after the command byte / bytes sent
        error = Signal()
        aw_done = Signal()
        w_done = Signal()
        timeout = Signal(range(TIMEOUT_BYTES * self.cycles_per_byte + 1))

        irq_prev = Signal()
        irq_pending = Signal()
        m.d.sync += irq_prev.eq(self.irq)
        with m.If(self.irq & ~irq_prev):
            m.d.sync += irq_pending.eq(1)

        in_csr = addr[self.csr_addr_width :] == CSR_BASE >> self.csr_addr_width
        ram_bits = exact_log2(self.ram_bytes)
        in_ram = addr[ram_bits:] == RAM_BASE >> ram_bits
        is_phy = addr == PHY_ADDR
        is_write = command == CMD_WRITE
        ram_offset = addr - RAM_BASE

        csr, rd, wr = self.csr, self.mem_read, self.mem_write
        m.d.comb += [
            csr.awaddr.eq(addr),
            csr.araddr.eq(addr),
            csr.wdata.eq(data),
            csr.wstrb.eq(0xF),
            wr.awaddr.eq(ram_offset),
            wr.awlen.eq(0),
            wr.awsize.eq(2),
            wr.awburst.eq(BURST_INCR),
            wr.wdata.eq(data),
            wr.wstrb.eq(0xF),
            wr.wlast.eq(1),
            rd.araddr.eq(ram_offset),
            rd.arlen.eq(0),
            rd.arsize.eq(2),
            rd.arburst.eq(BURST_INCR),
        ]

        def write_bus(bus, next_state):
            """AW and W (in either order), then B."""
            m.d.comb += [bus.awvalid.eq(~aw_done), bus.wvalid.eq(~w_done)]
            with m.If(bus.awvalid & bus.awready):
                m.d.sync += aw_done.eq(1)
            with m.If(bus.wvalid & bus.wready):
                m.d.sync += w_done.eq(1)
            m.d.comb += bus.bready.eq(aw_done & w_done)
            with m.If(bus.bvalid & bus.bready):
                m.d.sync += [error.eq(bus.bresp != RESP_OKAY), aw_done.eq(0), w_done.eq(0)]
                m.next = next_state

        def read_bus(bus, next_state):
            m.d.comb += [bus.arvalid.eq(~aw_done), bus.rready.eq(aw_done)]
            with m.If(bus.arvalid & bus.arready):
                m.d.sync += aw_done.eq(1)
            with m.If(bus.rvalid & bus.rready):
                m.d.sync += [
                    data.eq(bus.rdata),
                    error.eq(bus.rresp != RESP_OKAY),
                    aw_done.eq(0),
                ]
                m.next = next_state

        with m.FSM():
            with m.State("Idle"):
                m.d.comb += self.rx.ready.eq(1)
                m.d.sync += [count.eq(0), error.eq(0)]
                with m.If(irq_pending):
                    m.d.comb += [self.tx.payload.eq(NOTIFY_IRQ), self.tx.valid.eq(1)]
                    with m.If(self.tx.ready):
                        m.d.sync += irq_pending.eq(0)
                with m.If(
                    self.rx.valid & ((self.rx.payload == CMD_WRITE) | (self.rx.payload == CMD_READ))
                ):
                    m.d.sync += [
                        command.eq(self.rx.payload),
                        timeout.eq(TIMEOUT_BYTES * self.cycles_per_byte),
                    ]
                    m.next = "Arguments"
            with m.State("Arguments"):
                m.d.comb += self.rx.ready.eq(1)
                m.d.sync += timeout.eq(timeout - 1)
                with m.If(self.rx.valid):
                    m.d.sync += [
                        Cat(data, addr).eq(Cat(self.rx.payload, data, addr)),
                        count.eq(count + 1),
                    ]
                with m.If(timeout == 0):
                    m.next = "Idle"
                with m.Elif(count == Mux(is_write, 8, 4)):
                    m.d.sync += count.eq(0)
                    with m.If(~is_write):  # a read's four bytes landed in data
                        m.d.sync += addr.eq(data)
                    m.next = "Decode"
            with m.State("Decode"):
                with m.If(in_csr):
                    m.next = "CSR"
                with m.Elif(in_ram):
                    m.next = "RAM"
                with m.Elif(is_phy):
                    with m.If(is_write):
                        m.d.sync += [self.phy_speed.eq(data[:2]), self.phy_reset.eq(data[2])]
                    with m.Else():
                        m.d.sync += data.eq(
                            Cat(self.phy_speed, self.phy_reset, C(0, 1), self.phy_status)
                        )
                    m.next = "Reply"
                with m.Else():
                    m.d.sync += error.eq(1)
                    m.next = "Reply"
            with m.State("CSR"):
                with m.If(is_write):
                    write_bus(csr, "Reply")
                with m.Else():
                    read_bus(csr, "Reply")
            with m.State("RAM"):
                with m.If(is_write):
                    write_bus(wr, "Reply")
                with m.Else():
                    read_bus(rd, "Reply")
            with m.State("Reply"):
                header = Mux(error, REPLY_ERROR, Mux(is_write, REPLY_DONE, REPLY_DATA))
                last = Mux(error | is_write, 0, 4)
                m.d.comb += [
                    self.tx.valid.eq(1),
                    self.tx.payload.eq(Mux(count == 0, header, data[24:])),
                ]
                with m.If(self.tx.ready):
                    m.d.sync += count.eq(count + 1)
                    with m.If(count != 0):  # data goes out most significant byte first
                        m.d.sync += data.eq(data << 8)
                    with m.If(count == last):
                        m.next = "Idle"
        return m
