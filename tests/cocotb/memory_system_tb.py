"""cocotb bench for the host memory's CPU traffic port and shared timing
(tests/hdl/bus/test_host_memory_system.py), on ``memory_system_top``: a
``SharedHostMemory`` whose DMA port is ``s_axi_*`` (driven here by cocotbext-axi's
AxiMaster standing in for the DMA) and whose bench ports are ``mem_*``.

Each test reads its timing from env ``MEMORY_SYSTEM`` (JSON of a MemoryTiming, or
absent for the bench timing) and writes what it measured to env ``MEMORY_SYSTEM_OUT``
(JSON), which the pytest side checks against the model.
"""

from __future__ import annotations

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, Timer
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiBus, AxiMaster

from macdma.sim.benches.cpu_port import CpuMemoryPort, configure_memory_system
from macdma.sim.benches.hdl_memory import HdlHostMemory
from macdma.sim.model.cpus.memory import MemoryTiming

CLOCK_NS = 10
SIZE = 65536


async def _start(dut, burst_beats: int = 256):
    cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
    memory = HdlHostMemory(dut, SIZE, record_bursts=True)
    port = CpuMemoryPort(dut)
    timing = os.environ.get("MEMORY_SYSTEM")
    if timing:
        configure_memory_system(dut, MemoryTiming(**json.loads(timing)))
    dma = AxiMaster(AxiBus.from_prefix(dut, "s_axi"), dut.clk, dut.rst, max_burst_len=burst_beats)
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)
    memory.start()
    return memory, port, dma


def _record(**values) -> None:
    path = os.environ["MEMORY_SYSTEM_OUT"]
    existing = json.loads(open(path).read()) if os.path.exists(path) else {}
    existing.update(values)
    with open(path, "w") as out:
        json.dump(existing, out)


async def _timed_move(dut, port, address, length, write) -> int:
    """SoC clocks from giving the command (at a rising edge) to its completion."""
    await RisingEdge(dut.clk)
    started = get_sim_time("ns")
    await port.move(address, length, write=write)
    return round((get_sim_time("ns") - started) / CLOCK_NS)


@cocotb.test()
async def test_commands_move_occupancy_only(dut):
    """A read and a write command: their clocks and bursts; no byte changes, no DMA
    burst recorded."""
    memory, port, _ = await _start(dut)
    pattern = bytes(range(256)) * 2
    memory.write(0x2000, pattern)
    read = await _timed_move(dut, port, 0x1000, 256, False)
    write = await _timed_move(dut, port, 0x2000, 512, True)
    await ClockCycles(dut.clk, 2)
    assert memory.read(0x2000, 512) == pattern, "a CPU port write changed memory"
    assert memory.bursts == [], f"the DMA burst record took CPU bursts: {memory.bursts}"
    _record(read_cycles=read, write_cycles=write, bursts=int(dut.mem_cpu_bursts.value))


@cocotb.test()
async def test_cpu_waits_for_a_dma_burst(dut):
    """A CPU read command given while a DMA burst holds the memory: its extra clocks."""
    _, port, dma = await _start(dut)
    alone = await _timed_move(dut, port, 0x1000, 64, False)
    await ClockCycles(dut.clk, 20)
    await RisingEdge(dut.clk)
    kinds = json.loads(os.environ.get("DMA_KIND", '"read"'))
    if kinds == "read":
        dma_task = cocotb.start_soon(dma.read(0x8000, 256))
    else:
        dma_task = cocotb.start_soon(dma.write(0x8000, bytes(256)))
    await ClockCycles(dut.clk, 3)  # the DMA's burst is taken first
    contended = await _timed_move(dut, port, 0x1000, 64, False)
    await dma_task
    _record(alone=alone, contended=contended)


@cocotb.test()
async def test_cpu_throughput_under_streaming_dma(dut):
    """A CPU copying (1 KiB read, 1 KiB written, again and again) while the DMA streams
    both ways in bursts of ``DMA_BURST`` beats: the CPU's bytes per microsecond."""
    burst = int(os.environ.get("DMA_BURST", "16"))
    _, port, dma = await _start(dut, burst_beats=burst)
    stop = False

    async def stream(write: bool):
        while not stop:
            if write:
                await dma.write(0x8000, bytes(4096))
            else:
                await dma.read(0xC000, 4096)

    tasks = [cocotb.start_soon(stream(False)), cocotb.start_soon(stream(True))]
    await Timer(2, unit="us")  # the streams settle
    started, moved = get_sim_time("ns"), 0
    while get_sim_time("ns") - started < 20_000:
        await port.move(0x1000, 1024, write=False)
        await port.move(0x4000, 1024, write=True)
        moved += 2048
    elapsed_us = (get_sim_time("ns") - started) / 1000
    stop = True
    for task in tasks:
        await task
    _record(cpu_bytes_per_us=moved / elapsed_us)


@cocotb.test()
async def test_write_path_stores_land_through_the_port(dut):
    """The CPU's posted stores (CpuWritePath with the port): in program order, each when
    its write command completes (the first seen landed while the second is not), and
    later when a DMA write stream holds the one port."""
    from macdma.sim.model.platform_cocotb import CpuWritePath  # the bench's own import

    memory, port, dma = await _start(dut)
    path = CpuWritePath(memory, CLOCK_NS, port)
    times = {}
    for label, contended in (("alone", False), ("contended", True)):
        stream = cocotb.start_soon(dma.write(0x8000, bytes(2048))) if contended else None
        await RisingEdge(dut.clk)
        started = get_sim_time("ns")
        first, second = b"\x11" * 256, b"\x22" * 256
        path.store(0x1000, first)
        path.store(0x2000, second)
        while memory.read(0x1000, 256) != first:
            await RisingEdge(dut.clk)
        assert memory.read(0x2000, 256) != second, "the second store landed with the first"
        await path.idle.wait()
        assert memory.read(0x2000, 256) == second
        times[label] = round((get_sim_time("ns") - started) / CLOCK_NS)
        if stream is not None:
            await stream
        memory.write(0x1000, bytes(256))
        memory.write(0x2000, bytes(256))
    _record(store_cycles=times)


@cocotb.test()
async def test_memory_traffic_holds_the_cpu_for_the_ports_time(dut):
    """``CocotbPlatform.memory_traffic`` with the test CPU file's [memory]: the calling
    context is held, accounted to the work's name, for as long as the RTL takes; longer
    while the DMA streams; the accounting equals the simulated time it took."""
    from types import SimpleNamespace

    from macdma.sim.model.cpu import CpuModel
    from macdma.sim.model.cpus import load_cpu
    from macdma.sim.model.platform_cocotb import CocotbPlatform

    memory, _, dma = await _start(dut, burst_beats=2)
    spec = load_cpu(os.environ["MEMORY_SYSTEM_CPU"])
    bench = SimpleNamespace(dut=dut, memory=memory, memory_bytes=SIZE, sys_clk_ns=CLOCK_NS)
    cpu = CpuModel(spec.clock_mhz, spec.costs)
    platform = CocotbPlatform(bench, cpu, memory_system=spec.memory)
    took = {}
    for label in ("alone", "contended"):
        stream = None
        if label == "contended":
            stream = cocotb.start_soon(dma.read(0x8000, 8192))
            await ClockCycles(dut.clk, 4)
        before = cpu.busy_ns.get("per_byte_copy", 0.0)
        started = get_sim_time("ns")
        async with platform.context("softirq"):
            await platform.memory_traffic("per_byte_copy", 4096, 4096)
        took[label] = {
            "ns": get_sim_time("ns") - started,
            "accounted_ns": cpu.busy_ns["per_byte_copy"] - before,
        }
        if stream is not None:
            await stream
    _record(
        traffic=took,
        port_bytes=platform.memory_port.bytes,
        max_stall_ns=cpu.max_stall_ns,
        bound_ns=cpu.preemption_bound_ns(),
        slice_ns=cpu.slice_ns,
    )
