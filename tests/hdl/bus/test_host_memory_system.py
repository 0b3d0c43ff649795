"""The memory system shared by the CPU and the DMA (issue 40): the host memory's CPU
traffic port (hdl/bus/cpu_traffic.py) behind one pair of arbiters with the DMA's port
(hdl/bus/host_memory.py), the RAM's shared timing (hdl/bus/axi4_ram.py ``_SharedPort``),
its parameters from a CPU file's ``[memory]`` (sim/model/cpus/memory.py; loading and
checking them: tests/sim/model/cpus/test_memory.py), and the platform's use of it
(sim/model/platform_cocotb.py).

The RTL tests run tests/cocotb/memory_system_tb.py on ``memory_system_top`` (the shared
host memory alone, cocotbext-axi's AxiMaster standing in for the DMA); each reads what
the bench measured and checks it against the timing model's arithmetic.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from macdma.hdl.bus.axi4_ram import ARRAY_VERILOG
from macdma.hdl.bus.host_memory import SharedHostMemory
from macdma.sim.model.cpus import load_cpu
from macdma.sim.model.cpus.memory import MemoryTiming
from macdma.sim.run.scenario import Scenario

TOP = "memory_system_top"
BENCH = "memory_system_tb"
TEST_CPU = Path(__file__).parents[2] / "cpus" / "memory-system.toml"
_AXI_PREFIX = "s_axi_"

#: The shared timing of the occupancy and contention tests: round numbers, one bank, the
#: memory as fast as the 32-bit bus (a beat of either master costs one clock).
TIMING = MemoryTiming(
    page_hit_cycles=3,
    page_miss_cycles=10,
    turnaround_cycles=2,
    page_bytes_log2=11,
    bank_bits=0,
    beat_cost_x16=16,
    cpu_beat_cost_x16=16,
    cpu_beat_bytes_log2=2,
    cpu_burst_bytes_log2=6,
)
#: Clocks a command spends outside the memory's occupancy: the command register, the
#: arbiter's grant, the R/B queues of the RAM and the completion register.
OVERHEAD_CYCLES = 6


class MemorySystemTop(wiring.Component):
    """A ``SharedHostMemory`` of ``memory_bytes``: its DMA port as ``s_axi_<name>``, its
    bench ports as ``mem_<name>`` (as in macdma_soc_hostmem)."""

    extra_verilog = ARRAY_VERILOG

    def __init__(self, memory_bytes: int = 65536):
        self.memory = SharedHostMemory(memory_bytes)
        members = {}
        for name, member in self.memory.signature.members.items():
            if name == "dma":
                for signal, inner in member.signature.members.items():
                    # The memory's side of the DMA port (a slave): flows as on the memory.
                    members[f"{_AXI_PREFIX}{signal}"] = inner.flow(inner.shape)
            else:
                members[f"mem_{name}"] = member
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.host_memory = memory = self.memory
        for name, member in memory.signature.members.items():
            if name == "dma":
                for signal, inner in member.signature.members.items():
                    ours = getattr(self, f"{_AXI_PREFIX}{signal}")
                    theirs = getattr(memory.dma, signal)
                    m.d.comb += theirs.eq(ours) if inner.flow == In else ours.eq(theirs)
                continue
            ours, theirs = getattr(self, f"mem_{name}"), getattr(memory, name)
            m.d.comb += theirs.eq(ours) if member.flow == In else ours.eq(theirs)
        return m


def _run(cocotb_run, tmp_path, sim, testcase, timing=TIMING, **env) -> dict:
    out = tmp_path / f"{testcase}-{len(list(tmp_path.glob('*.json')))}.json"
    extra = {"MEMORY_SYSTEM_OUT": str(out), **{k: str(v) for k, v in env.items()}}
    if timing is not None:
        extra["MEMORY_SYSTEM"] = json.dumps(dataclasses.asdict(timing))
    cocotb_run(
        top=TOP, factory=MemorySystemTop, test_module=BENCH, sim=sim, testcase=testcase,
        extra_env=extra,
    )  # fmt: skip
    return json.loads(out.read_text())


def test_commands_complete_with_the_memorys_occupancy(cocotb_run, tmp_path):
    """A 256-byte read = four 64-byte bursts of 16 beats: the first opens the page (miss),
    three hit it; the write then turns the bus round and hits the same page. Each command
    completes after its bursts' occupancy plus a fixed overhead, and moves no byte."""
    got = _run(cocotb_run, tmp_path, "verilator", "test_commands_move_occupancy_only")
    t = TIMING
    read = (t.page_miss_cycles + 16) + 3 * (t.page_hit_cycles + 16)
    # 0x2000 is page 4 of 2 KiB (a miss), after a read (a turnaround), then 7 hits.
    write = t.turnaround_cycles + (t.page_miss_cycles + 16) + 7 * (t.page_hit_cycles + 16)
    assert read <= got["read_cycles"] <= read + OVERHEAD_CYCLES, got
    assert write <= got["write_cycles"] <= write + OVERHEAD_CYCLES, got
    assert got["bursts"] == 4 + 8


def test_commands_complete_on_icarus(cocotb_run, tmp_path):
    """The same command on Icarus, the bench timing (no shared port): it completes, moves
    nothing and is not recorded as a DMA burst."""
    got = _run(cocotb_run, tmp_path, "icarus", "test_commands_move_occupancy_only", timing=None)
    assert got["bursts"] == 4 + 8
    assert 256 // 4 <= got["read_cycles"] <= 256 // 4 + 4 * OVERHEAD_CYCLES


@pytest.mark.parametrize("dma", ["read", "write"])
def test_a_cpu_burst_waits_for_the_dmas(cocotb_run, tmp_path, dma):
    """One port: a CPU read given while a 64-beat DMA burst (read or write) holds the memory
    waits for it; without the shared timing, a DMA write does not hold up a CPU read."""
    case = "test_cpu_waits_for_a_dma_burst"
    got = _run(cocotb_run, tmp_path, "verilator", case, DMA_KIND=json.dumps(dma))
    waited = got["contended"] - got["alone"]
    # The DMA burst's 64 beats minus the clocks it ran before the CPU's command came.
    assert waited >= 64 - 4 - OVERHEAD_CYCLES, got
    if dma == "write":
        bench = _run(
            cocotb_run, tmp_path, "verilator", case, timing=None, DMA_KIND=json.dumps(dma),
            RUN="bench",
        )  # fmt: skip
        assert bench["contended"] - bench["alone"] <= 2, bench


def test_the_dma_burst_length_moves_a_memory_bound_cpus_throughput(cocotb_run, tmp_path):
    """Issue 40's "done when": a CPU copying through the port while the DMA streams both
    ways, on the test CPU file's DDR2 (per-burst latencies, 16 bytes per SoC clock): with
    2-beat DMA bursts each DMA burst pays a first access for 8 bytes, so the memory is
    busy far longer per DMA byte and the CPU gets at least 30% less than with 16-beat
    bursts. (With the CPU's traffic taking a fixed time instead of the port's, both
    would be the same.)"""
    timing = load_cpu(str(TEST_CPU)).memory.timing(10.0)
    rates = {
        burst: _run(cocotb_run, tmp_path, "verilator", "test_cpu_throughput_under_streaming_dma",
                    timing=timing, DMA_BURST=burst)["cpu_bytes_per_us"]
        for burst in (2, 16)
    }  # fmt: skip
    assert rates[16] >= 1.3 * rates[2], rates


# -- the CPU file's [memory] ---------------------------------------------------------------


def test_a_memory_system_needs_the_hdl_memory_and_its_own_latencies():
    """The python host memory (cocotbext-axi's AxiRam) has no CPU port: a CPU file with a
    [memory] is refused there, as is a bench latency that the file's would override."""
    with pytest.raises(ValueError, match=r'needs memory = "hdl"'):
        Scenario(cpu=str(TEST_CPU), memory="python")
    with pytest.raises(ValueError, match="mem_latency_cycles must stay 0"):
        Scenario(cpu=str(TEST_CPU), mem_latency_cycles=4)
    Scenario(cpu=str(TEST_CPU))  # the HDL memory, the file's latencies: taken


def test_the_write_paths_stores_take_the_ports_time(cocotb_run, tmp_path):
    """The artefact gone: two 256-byte stores (eight 64-byte bursts in all) take the
    memory's occupancy, not a fixed rate, and longer while a DMA write stream holds the
    one port."""
    got = _run(cocotb_run, tmp_path, "verilator", "test_write_path_stores_land_through_the_port")
    times = got["store_cycles"]
    t = TIMING
    # Two pages (0x1000, 0x2000): a miss each, then three hits each; the first from rest.
    alone = 2 * ((t.page_miss_cycles + 16) + 3 * (t.page_hit_cycles + 16))
    assert alone <= times["alone"] <= alone + 2 * OVERHEAD_CYCLES, times
    assert times["contended"] >= times["alone"] + 2048 // 4 // 2, times


def test_memory_traffic_holds_the_cpu_for_what_the_memory_gives(cocotb_run, tmp_path):
    """``memory_traffic`` through the port: 4 KiB read and 4 KiB written take at least the
    memory's data time (8 KiB at 16 bytes a clock), the CPU is accounted exactly the time it
    was held, a DMA read stream of 2-beat bursts makes it slower, and the longest step
    bounds a preemption's wait."""
    timing = load_cpu(str(TEST_CPU)).memory.timing(10.0)
    got = _run(
        cocotb_run, tmp_path, "verilator", "test_memory_traffic_holds_the_cpu_for_the_ports_time",
        timing=timing, MEMORY_SYSTEM_CPU=TEST_CPU,
    )  # fmt: skip
    alone, contended = got["traffic"]["alone"], got["traffic"]["contended"]
    assert alone["ns"] >= 8192 / 16 * 10, got
    for took in (alone, contended):
        assert took["accounted_ns"] == pytest.approx(took["ns"]), got
    assert contended["ns"] > 1.2 * alone["ns"], got
    assert got["port_bytes"] == 2 * 8192
    # Each step (1 KiB each way) is one non-preemptible stall: longer than a 500-cycle
    # slice at 1 GHz, and counted in the preemption bound.
    assert got["slice_ns"] < got["max_stall_ns"] == got["bound_ns"], got
