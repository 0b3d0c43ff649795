"""``macdma_soc_hostmem``: ``macdma_soc`` with its host memory inside the simulated top.

The SoC's AXI4 master drives an :class:`~macdma.hdl.bus.axi4_ram.Axi4Ram` with bench ports
instead of leaving the ``m_axi_*`` ports to a Python memory model, so the per-beat work of
the bus runs in the simulator. Every other port is the SoC's (``clk``, the AXI4-Lite slave,
``irq``, the GMII side, MDIO), plus the RAM's bench ports under ``mem_``:
``mem_latency_cycles``, ``mem_err<i>_{start,end,read,write}``, the traffic counters
``mem_{ar,aw}_{bursts,beats}``, ``mem_{ar,aw}_class<i>_{bursts,beats}`` with their address
classes ``mem_class<i>_{start,end}``, ``mem_{ar,aw}_took``, ``mem_cycles`` and the last
burst ``mem_{ar,aw}_burst_{addr,len}`` (the DMA's bursts only) and the memory system's
timing ``mem_shared``, ``mem_page_{hit,miss}_cycles``, ``mem_turnaround_cycles``,
``mem_page_bytes_log2``, ``mem_bank_bits``, ``mem_{,cpu_}beat_cost_x16`` (see ``Axi4Ram``).

The memory has a second master: :class:`~macdma.hdl.bus.cpu_traffic.CpuTrafficMaster`,
the modelled CPU's own memory traffic, whose bench ports are under ``mem_cpu_``
(``mem_cpu_cmd_{addr,bytes,write,seq}``, ``mem_cpu_{beat,burst}_bytes_log2``,
``mem_cpu_done_seq``, ``mem_cpu_busy``, ``mem_cpu_bursts``). The SoC's master (0) and it
(1) reach the RAM through one pair of round-robin arbiters
(:mod:`~macdma.hdl.bus.axi4_arbiter`), so the CPU's bursts and the DMA's contend clock for
clock; idle, it leaves the DMA's timing as it was (the arbiters add no clock).
``macdma run``
and ``macdma regress`` use it with ``--memory hdl`` (sim/benches/hdl_memory.py is its bench
side); the SoC cocotb tests keep ``macdma_soc`` and cocotbext-axi's AxiRam, whose pause
generators they need.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .bus.axi4 import Axi4ReadSignature, Axi4WriteSignature
from .bus.axi4_ram import ARRAY_VERILOG, Axi4Ram
from .bus.host_memory import SharedHostMemory, join_half
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
    64 MiB) on its AXI4 master, shared with the CPU's traffic port
    (:class:`~.bus.host_memory.SharedHostMemory`). ``extra_verilog`` is the Verilog of the
    RAM's word array, which the exported file must carry beside the design."""

    extra_verilog = ARRAY_VERILOG

    def __init__(self, memory_bytes: int = 1 << 21, **params):
        self.soc = SocTop(**params)
        soc_members = self.soc.signature.members
        self.memory = SharedHostMemory(
            memory_bytes,
            addr_width=len(self.soc.m_axi_awaddr),
            data_width=len(self.soc.m_axi_wdata),
            id_width=len(self.soc.m_axi_awid),
        )
        members = {
            name: member for name, member in soc_members.items() if not name.startswith(_AXI_PREFIX)
        }
        for name, member in self.memory.signature.members.items():
            if name != "dma":
                members[f"{_BENCH_PREFIX}{name}"] = member
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        # The memory runs on the SoC's system clock, under a name of its own: the SoC keeps
        # its clock domains to itself.
        m.domains.mem = ClockDomain("mem", local=True)
        m.d.comb += [ClockSignal("mem").eq(self.clk), ResetSignal("mem").eq(self.rst)]
        m.submodules.soc = soc = self.soc
        memory = self.memory
        m.submodules.host_memory = DomainRenamer("mem")(memory)
        soc_axi = SimpleNamespace(
            **{
                name[len(_AXI_PREFIX) :]: getattr(soc, name)
                for name in soc.signature.members
                if name.startswith(_AXI_PREFIX)
            }
        )
        join_half(m, soc_axi, memory.dma, Axi4ReadSignature(*memory.widths))
        join_half(m, soc_axi, memory.dma, Axi4WriteSignature(*memory.widths))
        for name, member in memory.signature.members.items():
            if name == "dma":
                continue
            ours, theirs = getattr(self, f"{_BENCH_PREFIX}{name}"), getattr(memory, name)
            m.d.comb += theirs.eq(ours) if member.flow == In else ours.eq(theirs)
        for name, member in soc.signature.members.items():
            if name.startswith(_AXI_PREFIX):
                continue
            if member.flow == In:
                m.d.comb += getattr(soc, name).eq(getattr(self, name))
            else:
                m.d.comb += getattr(self, name).eq(getattr(soc, name))
        return m
