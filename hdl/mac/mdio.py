"""``MdioMaster``: IEEE 802.3 clause 22 management frames for configuring the PHY.

A frame is 32 preamble ones, start ``01``, opcode (``01`` write, ``10`` read), 5-bit PHY
address, 5-bit register, turnaround and 16 data bits, MSB first. MDIO changes after the
falling edge of MDC and the PHY samples (or drives, for read data) around the rising edge.

The MDC frequency is a run-time value, as on the MACs Linux drives (macb's MDC clock
division, stmmac's CSR clock range): ``clk_div`` is half an MDC period in system clocks,
so MDC = sys_clk / (2 * clk_div). In the SoC it is the register MDIO_CTRL.clk_div
(docs/registers.md); software keeps MDC at or below 2.5 MHz (802.3 22.2.2.11).

Read data goes through a two-flip-flop synchroniser and is sampled in the cycle that
decides the MDC rising edge, i.e. it is the pin's value 3 system clocks before MDC rises.
The PHY changes MDIO up to 300 ns after the previous rising edge (22.3.4), so that delay
must be under ``2 * clk_div - 3`` system clocks; ``clk_div`` 1 cannot read at all (the
register bank only accepts 2..255).

``MdioController`` is the hardware behind the register map's MDIO block: its ``regs`` port
takes the CSR bank's ``bank.mdio`` (MDIO_CTRL, MDIO_CMD, MDIO_STATUS) and drives an
``MdioMaster``.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from ..bus.csr_bank import block_signature
from ..regmap import REGISTER_MAP

__all__ = [
    "FRAME_BITS",
    "MDIO_PIN_NAMES",
    "MdioController",
    "MdioMaster",
    "MdioPinsSignature",
    "OP_READ",
    "OP_WRITE",
]

OP_WRITE = 0b01
OP_READ = 0b10
FRAME_BITS = 64
# On a read the MAC drives bits 0..45 (preamble .. register address); the PHY the rest.
READ_DRIVEN_BITS = 46
READ_DATA_BITS = 16


class MdioPinsSignature(wiring.Signature):
    """The PHY management pins, from the side of the master that drives them: ``mdc``, and
    the bidirectional MDIO line split for the tristate buffer a top adds (``o`` driven
    onto the line while ``oe``, the line read back on ``i``)."""

    def __init__(self):
        super().__init__({"mdc": Out(1), "o": Out(1), "oe": Out(1), "i": In(1)})


#: The pins' names as flat ports of the exported tops and the boards (``mdc``, ``mdio_o``,
#: ``mdio_oe``, ``mdio_i``), by member of :class:`MdioPinsSignature`.
MDIO_PIN_NAMES = {"mdc": "mdc", "o": "mdio_o", "oe": "mdio_oe", "i": "mdio_i"}


class MdioMaster(wiring.Component):
    """One clause 22 frame at a time, MDC divided from the system clock at run time.

    Parameters:
        clk_div_bits: width of ``clk_div`` (1..16; 8 gives up to 255 clocks per half).

    Members
    -------
    clk_div : In(clk_div_bits)
        Half an MDC period in system clocks, sampled when a frame starts; 0 counts as 1.
    start : In(1)
        Pulse to start a frame with ``write``, ``phy``, ``reg`` and ``write_data`` (all
        sampled in that cycle). Ignored while ``busy``.
    busy : Out(1)
        A frame is being clocked out; high from the cycle after ``start``.
    read_data : Out(16)
        The data of the last read frame, valid once ``busy`` falls.
    mdio : Out(MdioPinsSignature())
        The pins (the top adds the tristate buffer). ``mdio.i`` is synchronised here (two
        flip-flops), so it may come straight from a pin.
    """

    def __init__(self, clk_div_bits: int = 8):
        if not isinstance(clk_div_bits, int) or not 1 <= clk_div_bits <= 16:
            raise ValueError(f"clk_div_bits must be an integer in 1..16, not {clk_div_bits!r}")
        self.clk_div_bits = clk_div_bits
        super().__init__(
            {
                "clk_div": In(clk_div_bits),
                "start": In(1),
                "write": In(1),
                "phy": In(5),
                "reg": In(5),
                "write_data": In(16),
                "busy": Out(1),
                "read_data": Out(READ_DATA_BITS),
                "mdio": Out(MdioPinsSignature()),
            }
        )

    def elaborate(self, platform):
        m = Module()
        half_period = Signal(self.clk_div_bits)  # clk_div of the running frame
        timer = Signal(self.clk_div_bits)
        bit = Signal(range(FRAME_BITS + 1), init=FRAME_BITS)  # FRAME_BITS: idle
        shift = Signal(FRAME_BITS)
        reading = Signal()
        mdio_i = Signal()
        m.submodules.mdio_i_sync = FFSynchronizer(self.mdio.i, mdio_i)
        m.d.comb += [
            self.busy.eq(bit != FRAME_BITS),
            self.mdio.o.eq(shift[-1]),
            self.mdio.oe.eq(self.busy & (~reading | (bit < READ_DRIVEN_BITS))),
        ]
        with m.If(~self.busy):
            m.d.sync += self.mdio.mdc.eq(0)
            with m.If(self.start):
                op = Mux(self.write, OP_WRITE, OP_READ)
                turnaround = Mux(self.write, 0b10, 0b11)
                div = Mux(self.clk_div == 0, 1, self.clk_div)
                m.d.sync += [
                    shift.eq(
                        Cat(
                            self.write_data,
                            turnaround,
                            self.reg,
                            self.phy,
                            op,
                            C(0b01, 2),
                            C(0xFFFFFFFF, 32),
                        )
                    ),
                    reading.eq(~self.write),
                    bit.eq(0),
                    half_period.eq(div),
                    timer.eq(div - 1),
                ]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Else():
            m.d.sync += [timer.eq(half_period - 1), self.mdio.mdc.eq(~self.mdio.mdc)]
            with m.If(self.mdio.mdc):  # falling edge: next bit
                m.d.sync += [shift.eq(shift << 1), bit.eq(bit + 1)]
            with m.Else():  # rising edge: sample (read data is bits 48..63)
                with m.If(reading & (bit >= FRAME_BITS - READ_DATA_BITS)):
                    m.d.sync += self.read_data.eq(Cat(mdio_i, self.read_data[:-1]))
        return m


class MdioController(wiring.Component):
    """The MDIO register block: an :class:`MdioMaster` behind MDIO_CTRL, MDIO_CMD and
    MDIO_STATUS. Every MDIO_CMD write starts a frame with the fields just written; one
    arriving while a frame runs starts nothing and sets the sticky
    MDIO_STATUS.cmd_ignored instead.

    Members
    -------
    regs : In(block_signature(MDIO block))
        The CSR bank's ``bank.mdio``: ``ctrl.clk_div``, ``cmd`` (``data``, ``reg``,
        ``phy``, ``write`` and its write strobe ``written``) in; ``status.read_data``,
        ``status.busy`` and ``status.cmd_ignored_set`` out.
    mdio : Out(MdioPinsSignature())
        The pins, as on :class:`MdioMaster`.
    """

    def __init__(self):
        super().__init__(
            {
                "regs": In(block_signature(REGISTER_MAP.block("MDIO"))),
                "mdio": Out(MdioPinsSignature()),
            }
        )

    def elaborate(self, platform):
        m = Module()
        regs = self.regs
        m.submodules.master = master = MdioMaster(len(regs.ctrl.clk_div))
        m.d.comb += [
            master.clk_div.eq(regs.ctrl.clk_div),
            master.start.eq(regs.cmd.written),
            master.write.eq(regs.cmd.write),
            master.phy.eq(regs.cmd.phy),
            master.reg.eq(regs.cmd.reg),
            master.write_data.eq(regs.cmd.data),
            regs.status.busy.eq(master.busy),
            regs.status.read_data.eq(master.read_data),
            regs.status.cmd_ignored_set.eq(regs.cmd.written & master.busy),
        ]
        wiring.connect(m, wiring.flipped(self.mdio), master.mdio)
        return m
