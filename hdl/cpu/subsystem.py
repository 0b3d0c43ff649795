"""``CpuSubsystem``: the soft core and what it needs to run a driver beside the SoC.

::

    VexRiscvCore ─ ibus ─> ibus decoder ─> CpuRam.ibus            (RAM only)
                 ─ dbus ─> dbus decoder ─┬> CpuRam.dbus           RAM
                                         ├> WishboneToAxi4  ─> axi   HOST_MEMORY, HOST_MEMORY_IO
                                         ├> WishboneToAxiLite ─> csr  CSR
                                         ├> MachineTimer ─> timer interrupt
                                         └> FirmwarePort ─> console, exit, command
    irq ─> external interrupt line 0

Addresses: :mod:`macdma.hdl.cpu.memory_map`. ``axi`` is meant for an arbiter in front of
the host memory that the DMA shares, so the core's refills and stores contend with the
DMA's bursts (:class:`~macdma.hdl.cpu.top.CpuSocTop`).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from ..bus.axi4 import Axi4Signature
from ..bus.axi_lite import AxiLiteSignature
from .firmware_port import FirmwarePort
from .interconnect import WishboneDecoder, WishboneToAxi4, WishboneToAxiLite
from .memory_map import CSR, FIRMWARE_PORT, HOST_MEMORY, HOST_MEMORY_IO, RAM, TIMER
from .ram import CpuRam
from .timer import MachineTimer
from .vexriscv import VexRiscvCore

__all__ = ["CSR_ADDR_WIDTH", "CpuSubsystem", "EXTERNAL_IRQ_SOC"]

CSR_ADDR_WIDTH = 12
#: The SoC's ``irq`` is LiteX interrupt line 0 (bit 0 of CSR 0xBC0 / 0xFC0).
EXTERNAL_IRQ_SOC = 0


class CpuSubsystem(wiring.Component):
    """VexRiscv_Full with ``ram_bytes`` of on-chip RAM at ``RAM.base`` (its reset vector).

    Members
    -------
    csr : Out(AxiLiteSignature(12, 32))
        To the SoC's register bank (CPU addresses ``CSR``).
    axi : Out(Axi4Signature(32, 32, id_width))
        To the host memory (CPU addresses ``HOST_MEMORY``, cached, and ``HOST_MEMORY_IO``,
        uncached; both reach AXI address = offset in the region).
    irq : In(1)
        The SoC's level interrupt.
    console_valid, console_data, exit_valid, exit_code, command
        The :class:`FirmwarePort`'s.
    """

    def __init__(self, ram_bytes: int = 65536, *, id_width: int = 2, ram_init_file: str = ""):
        self.ram = CpuRam(ram_bytes, init_file=ram_init_file)
        self.id_width = id_width
        super().__init__(
            {
                "csr": Out(AxiLiteSignature(CSR_ADDR_WIDTH, 32)),
                "axi": Out(Axi4Signature(32, 32, id_width)),
                "irq": In(1),
                "console_valid": Out(1),
                "console_data": Out(8),
                "exit_valid": Out(1),
                "exit_code": Out(32),
                "command": In(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = VexRiscvCore(reset_vector=RAM.base)
        m.submodules.ram = ram = self.ram
        m.submodules.ibus_decoder = ibus_decoder = WishboneDecoder({"ram": (RAM,)})
        m.submodules.dbus_decoder = dbus_decoder = WishboneDecoder(
            {
                "ram": (RAM,),
                "host": (HOST_MEMORY, HOST_MEMORY_IO),
                "csr": (CSR,),
                "timer": (TIMER,),
                "firmware_port": (FIRMWARE_PORT,),
            }
        )
        m.submodules.host_bridge = host_bridge = WishboneToAxi4(self.id_width)
        m.submodules.csr_bridge = csr_bridge = WishboneToAxiLite(CSR_ADDR_WIDTH)
        m.submodules.timer = timer = MachineTimer()
        m.submodules.firmware_port = firmware_port = FirmwarePort()

        connect(m, core.ibus, ibus_decoder.bus)
        connect(m, ibus_decoder.ram, ram.ibus)
        connect(m, core.dbus, dbus_decoder.bus)
        connect(m, dbus_decoder.ram, ram.dbus)
        connect(m, dbus_decoder.host, host_bridge.wb)
        connect(m, dbus_decoder.csr, csr_bridge.wb)
        connect(m, dbus_decoder.timer, timer.bus)
        connect(m, dbus_decoder.firmware_port, firmware_port.bus)
        connect(m, host_bridge.axi, flipped(self.axi))
        connect(m, csr_bridge.axil, flipped(self.csr))

        m.d.comb += [
            core.timer_interrupt.eq(timer.interrupt),
            core.software_interrupt.eq(0),
            core.external_interrupts[EXTERNAL_IRQ_SOC].eq(self.irq),
            self.console_valid.eq(firmware_port.console_valid),
            self.console_data.eq(firmware_port.console_data),
            self.exit_valid.eq(firmware_port.exit_valid),
            self.exit_code.eq(firmware_port.exit_code),
            firmware_port.command.eq(self.command),
        ]
        return m
