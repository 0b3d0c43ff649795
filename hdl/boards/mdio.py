"""``MdioMaster``: IEEE 802.3 clause 22 management frames for configuring the PHY.

A frame is 32 preamble ones, start ``01``, opcode (``01`` write, ``10`` read), 5-bit PHY
address, 5-bit register, turnaround and 16 data bits, MSB first. MDIO changes after the
falling edge of MDC and the PHY samples (or drives, for read data) around the rising edge.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["MdioMaster", "OP_READ", "OP_WRITE"]

OP_WRITE = 0b01
OP_READ = 0b10
FRAME_BITS = 64
# On a read the MAC drives bits 0..45 (preamble .. register address); the PHY the rest.
READ_DRIVEN_BITS = 46


class MdioMaster(wiring.Component):
    """Members
    -------
    start : In(1)
        Pulse to start a frame with ``write``, ``phy``, ``reg`` and ``write_data``.
    busy : Out(1)
        A frame is being clocked out; ``start`` is ignored meanwhile.
    read_data : Out(16)
        The data of the last read frame, valid once ``busy`` falls.
    mdc, mdio_o, mdio_oe : Out(1); mdio_i : In(1)
        The pins (``mdio`` is bidirectional; the top adds the tristate buffer).

    ``mdc_hz`` is at most 2.5 MHz (802.3 22.2.2.11); ``sys_clk_hz`` sets the divider.
    """

    start: In(1)
    write: In(1)
    phy: In(5)
    reg: In(5)
    write_data: In(16)
    busy: Out(1)
    read_data: Out(16)
    mdc: Out(1)
    mdio_o: Out(1)
    mdio_oe: Out(1)
    mdio_i: In(1)

    def __init__(self, sys_clk_hz: int, mdc_hz: int = 2_500_000):
        if not 0 < mdc_hz <= 2_500_000:
            raise ValueError(f"mdc_hz must be in (0, 2.5 MHz], not {mdc_hz!r}")
        # Half an MDC period in system clocks, rounded up so MDC never exceeds mdc_hz.
        self.half_period = max(1, -(-sys_clk_hz // (2 * mdc_hz)))
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self.half_period))
        bit = Signal(range(FRAME_BITS + 1), init=FRAME_BITS)  # FRAME_BITS: idle
        shift = Signal(FRAME_BITS)
        reading = Signal()
        mdio_i = Signal()
        m.d.sync += mdio_i.eq(self.mdio_i)
        m.d.comb += [
            self.busy.eq(bit != FRAME_BITS),
            self.mdio_o.eq(shift[-1]),
            self.mdio_oe.eq(self.busy & (~reading | (bit < READ_DRIVEN_BITS))),
        ]
        with m.If(~self.busy):
            m.d.sync += self.mdc.eq(0)
            with m.If(self.start):
                op = Mux(self.write, OP_WRITE, OP_READ)
                turnaround = Mux(self.write, 0b10, 0b11)
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
                    timer.eq(self.half_period - 1),
                ]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Else():
            m.d.sync += [timer.eq(self.half_period - 1), self.mdc.eq(~self.mdc)]
            with m.If(self.mdc):  # falling edge: next bit
                m.d.sync += [shift.eq(shift << 1), bit.eq(bit + 1)]
            with m.Else():  # rising edge: sample (read data is bits 48..63)
                with m.If(reading & (bit >= FRAME_BITS - 16)):
                    m.d.sync += self.read_data.eq(Cat(mdio_i, self.read_data[:-1]))
        return m
