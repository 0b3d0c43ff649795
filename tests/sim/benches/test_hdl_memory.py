"""The HDL host memory's bench side (sim/benches/hdl_memory.py) on each simulator: its
burst record against the bursts a bench offers the RAM back to back on both channels
(tests/cocotb/hdl_memory_tb.py), on a top holding only the bench-port ``Axi4Ram``."""

from __future__ import annotations

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from cocotb_cases import run_cocotb_cases

from macdma.hdl.bus.axi4_ram import ARRAY_VERILOG, Axi4Ram
from macdma.hdl.hostmem_top import bench_port_members, connect_bench_ports

TOP = "hdl_memory_ram"
BENCH = "hdl_memory_tb"
_AXI_PREFIX = "s_axi_"


class RamTop(wiring.Component):
    """A bench-port, Verilog-array ``Axi4Ram`` of ``memory_bytes`` as ``host_ram``, named as
    in ``macdma_soc_hostmem``: its bench ports under ``mem_``, its AXI4 slave port's
    signals as ``s_axi_<name>``."""

    extra_verilog = ARRAY_VERILOG

    def __init__(self, memory_bytes: int = 16384):
        self.ram = Axi4Ram(memory_bytes, bench_ports=True, verilog_array=True)
        members = bench_port_members(self.ram)
        for name, member in self.ram.axi.signature.members.items():
            members[f"{_AXI_PREFIX}{name}"] = (In if member.flow == In else Out)(member.shape)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.host_ram = ram = self.ram
        connect_bench_ports(m, ram, self)
        for name, member in ram.axi.signature.members.items():
            if member.flow == In:
                m.d.comb += getattr(ram.axi, name).eq(getattr(self, f"{_AXI_PREFIX}{name}"))
            else:
                m.d.comb += getattr(self, f"{_AXI_PREFIX}{name}").eq(getattr(ram.axi, name))
        return m


def test_burst_record_has_every_back_to_back_burst(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top=TOP, factory=RamTop, test_module=BENCH, sim=sim)
