"""``macdma_soc_hostmem``: ``macdma_soc`` with its host memory inside the simulated top.

The SoC's AXI4 master drives an :class:`~macdma.hdl.bus.axi4_ram.Axi4Ram` with bench ports
instead of leaving the ``m_axi_*`` ports to a Python memory model, so the per-beat work of
the bus runs in the simulator. Every other port is the SoC's (``clk``, the AXI4-Lite slave,
``irq``, the GMII side, MDIO), plus the RAM's bench ports under ``mem_``:
``mem_latency_cycles``, ``mem_err<i>_{start,end,read,write}`` and the burst record
``mem_{ar,aw}_bursts``, ``mem_{ar,aw}_burst_{addr,len}`` (see ``Axi4Ram``). ``macdma run``
and ``macdma regress`` use it with ``--memory hdl`` (sim/benches/hdl_memory.py is its bench
side); the SoC cocotb tests keep ``macdma_soc`` and cocotbext-axi's AxiRam, whose pause
generators they need.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .bus.axi4_ram import ARRAY_VERILOG, Axi4Ram
from .soc import SocTop

__all__ = ["HostMemSocTop", "bench_port_members", "connect_bench_ports"]

_AXI_PREFIX = "m_axi_"
_BENCH_PREFIX = "mem_"


def bench_port_members(ram: Axi4Ram) -> dict:
    """The top-level members for ``ram``'s bench ports (all but its AXI4 slave port),
    each named with ``mem_`` in front and flowing as on the RAM."""
    return {
        f"{_BENCH_PREFIX}{name}": (In if member.flow == In else Out)(member.shape)
        for name, member in ram.signature.members.items()
        if name != "axi"
    }


def connect_bench_ports(m: Module, ram: Axi4Ram, top) -> None:
    """Wire ``ram``'s bench ports to ``top``'s members from :func:`bench_port_members`."""
    for name, member in ram.signature.members.items():
        if name == "axi":
            continue
        port = getattr(top, f"{_BENCH_PREFIX}{name}")
        if member.flow == In:
            m.d.comb += getattr(ram, name).eq(port)
        else:
            m.d.comb += port.eq(getattr(ram, name))


class HostMemSocTop(wiring.Component):
    """``SocTop(**params)`` with ``memory_bytes`` of host memory (a power of two, 4 KiB ..
    64 MiB) on its AXI4 master. ``extra_verilog`` is the Verilog of the RAM's word array,
    which the exported file must carry beside the design."""

    extra_verilog = ARRAY_VERILOG

    def __init__(self, memory_bytes: int = 1 << 21, **params):
        self.soc = SocTop(**params)
        soc_members = self.soc.signature.members
        self.ram = Axi4Ram(
            memory_bytes,
            addr_width=len(self.soc.m_axi_awaddr),
            data_width=len(self.soc.m_axi_wdata),
            id_width=len(self.soc.m_axi_awid),
            bench_ports=True,
            verilog_array=True,
        )
        members = {
            name: member for name, member in soc_members.items() if not name.startswith(_AXI_PREFIX)
        }
        members.update(bench_port_members(self.ram))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        # The RAM runs on the SoC's system clock, under a name of its own: the SoC keeps
        # its clock domains to itself.
        m.domains.mem = ClockDomain("mem", local=True)
        m.d.comb += [ClockSignal("mem").eq(self.clk), ResetSignal("mem").eq(self.rst)]
        m.submodules.soc = soc = self.soc
        ram = self.ram
        m.submodules.host_ram = DomainRenamer("mem")(ram)
        for name, member in soc.signature.members.items():
            if name.startswith(_AXI_PREFIX):
                ram_signal = getattr(ram.axi, name[len(_AXI_PREFIX) :])
                soc_signal = getattr(soc, name)
                if member.flow == Out:  # the master drives it
                    m.d.comb += ram_signal.eq(soc_signal)
                else:
                    m.d.comb += soc_signal.eq(ram_signal)
            elif member.flow == In:
                m.d.comb += getattr(soc, name).eq(getattr(self, name))
            else:
                m.d.comb += getattr(self, name).eq(getattr(soc, name))
        connect_bench_ports(m, ram, self)
        return m
