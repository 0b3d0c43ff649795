"""``SharedHostMemory``: the simulated host memory with two masters, the DMA and the CPU.

A bench-port :class:`~.axi4_ram.Axi4Ram` (its words a Verilog array) behind one pair of
round-robin arbiters (:mod:`.axi4_arbiter`): master 0 is the ``dma`` port (the SoC's AXI4
master), master 1 a :class:`~.cpu_traffic.CpuTrafficMaster` carrying the modelled CPU's
own traffic. The CPU's bursts and the DMA's contend in the RTL clock for clock; while the
CPU port is idle the arbiters add no clock and the DMA sees the RAM's timing as if
alone. The RAM knows the CPU's bursts by the arbiters' master-index ID bit (its burst
record leaves them out; its shared timing costs their beats as the CPU port's).

Members: ``dma`` (In(Axi4Signature)), then ``ram``'s bench ports and ``cpu_port``'s,
under the names :func:`bench_members` gives them (``<ram port>`` and ``cpu_<port>``).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .axi4 import Axi4ReadSignature, Axi4Signature, Axi4WriteSignature
from .axi4_arbiter import Axi4ReadArbiter, Axi4WriteArbiter
from .axi4_ram import Axi4Ram
from .cpu_traffic import CpuTrafficMaster

__all__ = ["SharedHostMemory", "join_half"]

_CPU_PREFIX = "cpu_"


def join_half(m: Module, master, slave, signature) -> None:
    """Connect the ``signature`` half (read or write) of ``master`` (anything with the
    master-view signal names as attributes) to ``slave``'s port of that half."""
    for name, member in signature.members.items():
        if member.flow == Out:  # the master drives it
            m.d.comb += getattr(slave, name).eq(getattr(master, name))
        else:
            m.d.comb += getattr(master, name).eq(getattr(slave, name))


class SharedHostMemory(wiring.Component):
    """``memory_bytes`` of host memory (a power of two, 4 KiB .. 64 MiB) for a DMA master
    of ``addr_width``/``data_width``/``id_width``, with the CPU's traffic port."""

    def __init__(
        self, memory_bytes: int, *, addr_width: int = 32, data_width: int = 32, id_width: int = 2
    ):
        self.widths = (addr_width, data_width, id_width)
        self.cpu_port = CpuTrafficMaster(
            addr_width=addr_width, data_width=data_width, id_width=id_width
        )
        # The arbiters put the master's index above its own ID: the CPU port's is 1.
        self.ram = Axi4Ram(
            memory_bytes,
            addr_width=addr_width,
            data_width=data_width,
            id_width=id_width + 1,
            bench_ports=True,
            verilog_array=True,
            cpu_id_bit=id_width,
        )
        members = {"dma": In(Axi4Signature(*self.widths))}
        members.update(self._bench_members())
        super().__init__(members)

    def _bench_members(self) -> dict:
        members = {}
        for prefix, part in (("", self.ram), (_CPU_PREFIX, self.cpu_port)):
            for name, member in part.signature.members.items():
                if name != "axi":
                    members[f"{prefix}{name}"] = (In if member.flow == In else Out)(member.shape)
        return members

    def elaborate(self, platform):
        m = Module()
        m.submodules.host_ram = ram = self.ram
        m.submodules.cpu_port = cpu_port = self.cpu_port
        m.submodules.ram_read = read = Axi4ReadArbiter(2, *self.widths)
        m.submodules.ram_write = write = Axi4WriteArbiter(2, *self.widths)
        for index, master in enumerate((self.dma, cpu_port.axi)):
            join_half(m, master, read.inputs[index], Axi4ReadSignature(*self.widths))
            join_half(m, master, write.inputs[index], Axi4WriteSignature(*self.widths))
        addr_width, data_width, id_width = self.widths
        merged = (addr_width, data_width, id_width + 1)
        join_half(m, read.o, ram.axi, Axi4ReadSignature(*merged))
        join_half(m, write.o, ram.axi, Axi4WriteSignature(*merged))
        for prefix, part in (("", ram), (_CPU_PREFIX, cpu_port)):
            for name, member in part.signature.members.items():
                if name == "axi":
                    continue
                ours, theirs = getattr(self, f"{prefix}{name}"), getattr(part, name)
                m.d.comb += theirs.eq(ours) if member.flow == In else ours.eq(theirs)
        return m
