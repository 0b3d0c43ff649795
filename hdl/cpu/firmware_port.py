"""``FirmwarePort``: what the firmware says to whoever runs it, and hears back: a console
byte, an exit code, and a command word, as a Wishbone slave (``FIRMWARE_PORT_REGISTERS``
in :mod:`macdma.hdl.cpu.memory_map`). In simulation the bench watches the console and
exit ports and drives the command; on a board they would be a UART and a few pins.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .memory_map import FIRMWARE_PORT_ALIVE, FIRMWARE_PORT_REGISTERS
from .wishbone import WishboneSignature

__all__ = ["FirmwarePort"]


class FirmwarePort(wiring.Component):
    """Members
    -------
    bus : In(WishboneSignature())
        Acknowledged the clock after each access.
    console_valid : Out(1), console_data : Out(8)
        One clock per byte written to CONSOLE.
    exit_valid : Out(1), exit_code : Out(32)
        Set (and held) by a write to EXIT: the firmware is done, with that code.
    command : In(32)
        Read by the firmware at COMMAND.
    """

    bus: In(WishboneSignature())
    console_valid: Out(1)
    console_data: Out(8)
    exit_valid: Out(1)
    exit_code: Out(32)
    command: In(32)

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        ack = Signal()
        request = bus.cyc & bus.stb & ~ack
        m.d.sync += [ack.eq(request), self.console_valid.eq(0)]
        m.d.comb += bus.ack.eq(ack)
        registers = FIRMWARE_PORT_REGISTERS
        with m.If(request):
            with m.Switch(bus.adr[:2]):
                with m.Case(registers["CONSOLE"] // 4):
                    with m.If(bus.we):
                        m.d.sync += [
                            self.console_valid.eq(1),
                            self.console_data.eq(bus.dat_w[:8]),
                        ]
                with m.Case(registers["EXIT"] // 4):
                    m.d.sync += bus.dat_r.eq(self.exit_code)
                    with m.If(bus.we):
                        m.d.sync += [self.exit_valid.eq(1), self.exit_code.eq(bus.dat_w)]
                with m.Case(registers["COMMAND"] // 4):
                    m.d.sync += bus.dat_r.eq(self.command)
                with m.Case(registers["ALIVE"] // 4):
                    m.d.sync += bus.dat_r.eq(FIRMWARE_PORT_ALIVE)
        return m
