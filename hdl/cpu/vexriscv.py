"""``VexRiscvCore``: the prebuilt ``VexRiscv_Full`` of the pythondata-cpu-vexriscv package,
instantiated from Amaranth.

VexRiscv_Full (SpinalHDL's VexRiscv as LiteX builds it): RV32IM, 4 KiB instruction and data
caches with 32-byte lines, a write-through data cache, ``mcycle``/``minstret``, Wishbone
instruction and data ports. It caches addresses with bit 31 clear and sends those with bit
31 set straight to the bus; the custom instruction ``0x500F`` invalidates the whole data
cache, ``fence.i`` the instruction cache. Its external interrupts are LiteX's: 32 lines
(``externalInterruptArray``), masked by the custom CSR 0xBC0 and read as pending at 0xFC0,
whose OR is the machine external interrupt.

The package's Verilog (:func:`vexriscv_verilog`) goes beside the design in the exported file;
every variant in the package names its module ``VexRiscv``, so one design holds one.
"""

from pathlib import Path

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .wishbone import WishboneSignature

__all__ = ["VARIANT", "VexRiscvCore", "vexriscv_verilog", "vexriscv_verilog_path"]

VARIANT = "VexRiscv_Full"


def vexriscv_verilog_path(variant: str = VARIANT) -> Path:
    """The Verilog file of ``variant`` in the installed pythondata-cpu-vexriscv."""
    # Imported here: only a design that holds the core needs the package.
    import pythondata_cpu_vexriscv

    path = Path(pythondata_cpu_vexriscv.data_location) / f"{variant}.v"
    if not path.is_file():
        raise FileNotFoundError(
            f"pythondata-cpu-vexriscv has no {variant}.v in {path.parent} "
            f"(its version: {pythondata_cpu_vexriscv.version_str})"
        )
    return path


def vexriscv_verilog(variant: str = VARIANT) -> str:
    """The Verilog text of ``variant`` (module ``VexRiscv`` and its caches)."""
    return vexriscv_verilog_path(variant).read_text()


class VexRiscvCore(wiring.Component):
    """The core, in the ``sync`` domain (its ``reset`` is the domain's).

    Members
    -------
    ibus, dbus : Out(WishboneSignature())
        Instruction fetches (cache line refills, bursts of 8 words) and data accesses
        (line refills, and single reads and writes: every store goes to the bus).
    timer_interrupt, software_interrupt : In(1)
        Machine timer and software interrupts (mip.MTIP, mip.MSIP).
    external_interrupts : In(32)
        LiteX's interrupt lines: masked by CSR 0xBC0, pending at CSR 0xFC0.

    ``reset_vector`` is the first instruction's address.
    """

    ibus: Out(WishboneSignature())
    dbus: Out(WishboneSignature())
    timer_interrupt: In(1)
    software_interrupt: In(1)
    external_interrupts: In(32)

    def __init__(self, reset_vector: int):
        self.reset_vector = reset_vector
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        ports = {}
        for name, bus in (("iBusWishbone", self.ibus), ("dBusWishbone", self.dbus)):
            ports.update(
                {
                    f"o_{name}_CYC": bus.cyc,
                    f"o_{name}_STB": bus.stb,
                    f"i_{name}_ACK": bus.ack,
                    f"o_{name}_WE": bus.we,
                    f"o_{name}_ADR": bus.adr,
                    f"i_{name}_DAT_MISO": bus.dat_r,
                    f"o_{name}_DAT_MOSI": bus.dat_w,
                    f"o_{name}_SEL": bus.sel,
                    f"i_{name}_ERR": bus.err,
                    f"o_{name}_CTI": bus.cti,
                    f"o_{name}_BTE": bus.bte,
                }
            )
        m.submodules.vexriscv = Instance(
            "VexRiscv",
            i_clk=ClockSignal(),
            i_reset=ResetSignal(),
            i_externalResetVector=C(self.reset_vector, 32),
            i_timerInterrupt=self.timer_interrupt,
            i_softwareInterrupt=self.software_interrupt,
            i_externalInterruptArray=self.external_interrupts,
            **ports,
        )
        return m
