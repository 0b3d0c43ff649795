"""``macdma_soc_cpu``: the SoC with a soft core running its driver, and the host memory
they share, in one simulated top.

::

    CpuSubsystem ─ csr ────────────────────────────────> MacDmaSoc.csr
                 ─ axi ─┐                                MacDmaSoc ─ gmii_*, mdio ─> pins
    MacDmaSoc.axi ──────┴─> read / write arbiters ─> Axi4Ram (host memory, ``host_ram``)
    MacDmaSoc.irq ─> CpuSubsystem.irq, and the ``irq`` pin

The DMA and the core reach the host memory through one pair of round-robin arbiters
(:mod:`macdma.hdl.bus.axi4_arbiter`: master 0 the DMA, 1 the core), so the core's cache
refills and stores wait for the DMA's bursts and the other way round, as on a real SoC.
The host memory has the bench ports of ``macdma_soc_hostmem`` (``mem_*``, the same
:class:`~macdma.hdl.bus.axi4_ram.Axi4Ram`); the firmware's bench port is ``fw_*``
(:class:`~macdma.hdl.cpu.firmware_port.FirmwarePort`). The firmware image is loaded into
``cpu.ram.array.words`` while ``rst`` holds the core.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect

from ..bus.axi4 import Axi4ReadSignature, Axi4WriteSignature
from ..bus.axi4_arbiter import Axi4ReadArbiter, Axi4WriteArbiter
from ..bus.axi4_ram import ARRAY_VERILOG, Axi4Ram
from ..flatten import connect_flat, flat_clock_domains, flat_members
from ..hostmem_top import bench_port_members, connect_bench_ports
from ..mac.mdio import MDIO_PIN_NAMES
from ..soc import ADDR_WIDTH, MacDmaSoc, SocParams
from .ram import CPU_RAM_VERILOG
from .subsystem import CpuSubsystem
from .vexriscv import vexriscv_verilog

__all__ = ["CpuSocTop"]

#: AXI ID bits of each master (the SoC's: bit 1 tells its TX and RX channels apart).
_MASTER_ID_WIDTH = 2
_FIRMWARE_PORTS = ("console_valid", "console_data", "exit_valid", "exit_code", "command")


def _join_half(m, master, port, signature) -> None:
    """Join the members of ``signature`` (a read or write half) of ``master``, a
    master-view interface, to the same members of ``port``, the slave's side."""
    for name, member in signature.members.items():
        if member.flow == Out:  # driven by the master
            m.d.comb += getattr(port, name).eq(getattr(master, name))
        else:
            m.d.comb += getattr(master, name).eq(getattr(port, name))


class CpuSocTop(wiring.Component):
    """``MacDmaSoc(SocParams(**params))`` (32-bit data) with a :class:`CpuSubsystem` of
    ``ram_bytes`` of on-chip RAM driving it, and ``memory_bytes`` of host memory shared
    by both (a power of two, 4 KiB .. 64 MiB).

    Ports: ``clk``/``rst`` (system clock and reset, which also holds the core),
    ``tx_clk``, ``tx_rst``, ``rx_clk``, ``rx_rst``, ``gmii_*``, ``tx_clk_enable``,
    ``rx_clk_enable``, ``mdc``/``mdio_*`` (as on ``macdma_soc``), ``irq`` (the SoC's
    interrupt, also the core's external interrupt), ``mem_*`` (the host memory's bench
    ports, as on ``macdma_soc_hostmem``) and ``fw_*`` (the firmware's bench port).
    """

    def __init__(self, memory_bytes: int = 1 << 22, ram_bytes: int = 65536, **params):
        soc_params = SocParams(**params)
        if soc_params.data_width != 32:
            raise ValueError(
                f"macdma_soc_cpu has a 32-bit host memory bus, not data_width "
                f"{soc_params.data_width!r}"
            )
        self.soc = MacDmaSoc(soc_params)
        self.cpu = CpuSubsystem(ram_bytes, id_width=_MASTER_ID_WIDTH)
        self.host_ram = Axi4Ram(
            memory_bytes,
            addr_width=ADDR_WIDTH,
            data_width=32,
            id_width=_MASTER_ID_WIDTH + 1,  # the arbiters add the master's index
            bench_ports=True,
            verilog_array=True,
        )
        soc_members = self.soc.signature.members
        members = {name: In(1) for name in ("clk", "rst", "tx_clk", "tx_rst", "rx_clk", "rx_rst")}
        members.update(flat_members("gmii", soc_members["gmii_tx"]))
        members.update(flat_members("gmii", soc_members["gmii_rx"]))
        members["tx_clk_enable"] = In(1)
        members["rx_clk_enable"] = In(1)
        members.update(flat_members("mdio", soc_members["mdio"], MDIO_PIN_NAMES))
        members["irq"] = Out(1)
        members.update(bench_port_members(self.host_ram))
        cpu_members = self.cpu.signature.members
        members.update({f"fw_{name}": cpu_members[name] for name in _FIRMWARE_PORTS})
        super().__init__(members)

    @property
    def extra_verilog(self) -> str:
        """The hand-written and packaged modules the design instantiates: the two RAM
        arrays and the package's VexRiscv_Full."""
        return ARRAY_VERILOG + CPU_RAM_VERILOG + "\n" + vexriscv_verilog()

    def elaborate(self, platform):
        m = Module()
        flat_clock_domains(m, self)
        m.submodules.soc = soc = self.soc
        m.submodules.cpu = cpu = self.cpu
        m.submodules.host_ram = ram = self.host_ram
        connect(m, cpu.csr, soc.csr)
        m.d.comb += [cpu.irq.eq(soc.irq), self.irq.eq(soc.irq)]

        m.submodules.read_arbiter = read_arbiter = Axi4ReadArbiter(
            2, ADDR_WIDTH, 32, id_width_in=_MASTER_ID_WIDTH
        )
        m.submodules.write_arbiter = write_arbiter = Axi4WriteArbiter(
            2, ADDR_WIDTH, 32, id_width_in=_MASTER_ID_WIDTH
        )
        read_half = Axi4ReadSignature(ADDR_WIDTH, 32, _MASTER_ID_WIDTH)
        write_half = Axi4WriteSignature(ADDR_WIDTH, 32, _MASTER_ID_WIDTH)
        for index, master in enumerate((soc.axi, cpu.axi)):
            _join_half(m, master, read_arbiter.inputs[index], read_half)
            _join_half(m, master, write_arbiter.inputs[index], write_half)
        merged_id = _MASTER_ID_WIDTH + 1
        _join_half(m, read_arbiter.o, ram.axi, Axi4ReadSignature(ADDR_WIDTH, 32, merged_id))
        _join_half(m, write_arbiter.o, ram.axi, Axi4WriteSignature(ADDR_WIDTH, 32, merged_id))

        members = soc.signature.members
        connect_flat(m, self, "gmii", soc.gmii_tx, members["gmii_tx"])
        connect_flat(m, self, "gmii", soc.gmii_rx, members["gmii_rx"])
        connect_flat(m, self, "mdio", soc.mdio, members["mdio"], MDIO_PIN_NAMES)
        m.d.comb += [
            soc.tx_clk_enable.eq(self.tx_clk_enable),
            soc.rx_clk_enable.eq(self.rx_clk_enable),
        ]
        connect_bench_ports(m, ram, self)
        for name in _FIRMWARE_PORTS:
            if cpu.signature.members[name].flow == Out:
                m.d.comb += getattr(self, f"fw_{name}").eq(getattr(cpu, name))
            else:
                m.d.comb += getattr(cpu, name).eq(getattr(self, f"fw_{name}"))
        return m
