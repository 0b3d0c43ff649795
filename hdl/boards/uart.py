"""8N1 UART receiver and transmitter in the ``sync`` domain (for the host bridge)."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["UartRx", "UartTx", "bit_cycles"]


def bit_cycles(sys_clk_hz: int, baud: int) -> int:
    """System clocks per UART bit; raises ValueError if the rate is off by more than 2 %."""
    if baud <= 0 or sys_clk_hz < 8 * baud:
        raise ValueError(f"baud {baud!r} is not usable with a {sys_clk_hz} Hz system clock")
    cycles = round(sys_clk_hz / baud)
    if abs(sys_clk_hz / cycles - baud) > 0.02 * baud:
        raise ValueError(f"baud {baud} is more than 2 % off at {sys_clk_hz} Hz")
    return cycles


class UartRx(wiring.Component):
    """Receiver. ``rx`` is the pin (asynchronous); ``o`` a stream of received bytes (no
    back-pressure: a byte not taken before the next one arrives is overwritten).
    ``framing_error`` pulses when a stop bit reads 0."""

    rx: In(1, init=1)
    o: Out(stream.Signature(8))
    framing_error: Out(1)

    def __init__(self, cycles_per_bit: int):
        self.cycles_per_bit = cycles_per_bit
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        rx = Signal(init=1)
        m.submodules.rx_sync = FFSynchronizer(self.rx, rx, init=1)
        timer = Signal(range(self.cycles_per_bit * 3 // 2 + 1))
        bits = Signal(range(9))
        shift = Signal(8)
        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        m.d.sync += self.framing_error.eq(0)
        with m.FSM():
            with m.State("Idle"):
                with m.If(~rx):  # start bit: sample the data bits in their middles
                    m.d.sync += [timer.eq(self.cycles_per_bit * 3 // 2 - 1), bits.eq(0)]
                    m.next = "Data"
            with m.State("Data"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():
                    m.d.sync += [
                        shift.eq(Cat(shift[1:], rx)),
                        bits.eq(bits + 1),
                        timer.eq(self.cycles_per_bit - 1),
                    ]
                    with m.If(bits == 7):
                        m.next = "Stop"
            with m.State("Stop"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():
                    with m.If(rx):
                        m.d.sync += [self.o.payload.eq(shift), self.o.valid.eq(1)]
                    with m.Else():
                        m.d.sync += self.framing_error.eq(1)
                    m.next = "Wait Idle"
            with m.State("Wait Idle"):
                with m.If(rx):
                    m.next = "Idle"
        return m


class UartTx(wiring.Component):
    """Transmitter: takes one byte from ``i`` at a time; ``tx`` is the pin (idle high)."""

    i: In(stream.Signature(8))
    tx: Out(1, init=1)

    def __init__(self, cycles_per_bit: int):
        self.cycles_per_bit = cycles_per_bit
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self.cycles_per_bit))
        shift = Signal(10, init=0x3FF)
        bits_left = Signal(range(11))
        m.d.comb += [self.tx.eq(shift[0]), self.i.ready.eq(bits_left == 0)]
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [
                shift.eq(Cat(C(0, 1), self.i.payload, C(1, 1))),
                bits_left.eq(10),
                timer.eq(self.cycles_per_bit - 1),
            ]
        with m.Elif(bits_left != 0):
            with m.If(timer != 0):
                m.d.sync += timer.eq(timer - 1)
            with m.Else():
                m.d.sync += [
                    shift.eq(Cat(shift[1:], C(1, 1))),
                    bits_left.eq(bits_left - 1),
                    timer.eq(self.cycles_per_bit - 1),
                ]
        return m
