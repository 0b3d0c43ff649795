"""``MachineTimer``: RISC-V's machine timer (privileged spec 3.2.1) as a Wishbone slave:
a 64-bit ``mtime`` counting system clocks and a 64-bit ``mtimecmp``; the core's timer
interrupt is ``mtime >= mtimecmp``. Register offsets: ``TIMER_REGISTERS`` in
:mod:`macdma.hdl.cpu.memory_map`.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .memory_map import TIMER_REGISTERS
from .wishbone import WishboneSignature

__all__ = ["MachineTimer"]


class MachineTimer(wiring.Component):
    """Members
    -------
    bus : In(WishboneSignature())
        ``adr`` bits 1..0 pick the word (``TIMER_REGISTERS``); every access is
        acknowledged the clock after it starts. Writes to MTIME_* are ignored (the count
        is the clock's), so a read of MTIME_LO then MTIME_HI needs the usual hi-lo-hi loop.
    interrupt : Out(1)
        ``mtime >= mtimecmp``. ``mtimecmp`` resets to all ones (no interrupt).
    """

    bus: In(WishboneSignature())
    interrupt: Out(1)

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        mtime = Signal(64)
        mtimecmp = Signal(64, init=(1 << 64) - 1)
        m.d.sync += mtime.eq(mtime + 1)
        m.d.comb += self.interrupt.eq(mtime >= mtimecmp)

        ack = Signal()
        request = bus.cyc & bus.stb & ~ack
        m.d.sync += ack.eq(request)
        m.d.comb += bus.ack.eq(ack)
        words = {
            TIMER_REGISTERS["MTIME_LO"]: mtime[:32],
            TIMER_REGISTERS["MTIME_HI"]: mtime[32:],
            TIMER_REGISTERS["MTIMECMP_LO"]: mtimecmp[:32],
            TIMER_REGISTERS["MTIMECMP_HI"]: mtimecmp[32:],
        }
        with m.If(request):
            with m.Switch(bus.adr[:2]):
                for offset, word in words.items():
                    with m.Case(offset // 4):
                        m.d.sync += bus.dat_r.eq(word)
                        if offset >= TIMER_REGISTERS["MTIMECMP_LO"]:
                            with m.If(bus.we):
                                for lane in range(4):
                                    with m.If(bus.sel[lane]):
                                        m.d.sync += word[8 * lane : 8 * lane + 8].eq(
                                            bus.dat_w[8 * lane : 8 * lane + 8]
                                        )
        return m
