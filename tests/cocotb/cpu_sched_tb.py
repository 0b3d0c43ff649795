"""The modelled CPU's scheduler (sim/model/cpu.py ``CpuModel``) and the CPU write path
(sim/model/platform_cocotb.py ``CpuWritePath``) in simulated time. The SoC is only the
simulator's top here: nothing in these tests touches it.

Clock: a 100 MHz CPU, so a 500-cycle slice is 5 us.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import Timer
from cocotb.utils import get_sim_time

from macdma.firmware.costs import CpuCosts
from macdma.sim.model.cpu import CpuModel
from macdma.sim.model.platform_cocotb import CpuWritePath

SLICE_NS = 5000.0


def new_cpu() -> CpuModel:
    return CpuModel(100.0, CpuCosts())


def now() -> float:
    return round(get_sim_time("ns"))  # whole ns: every time in these tests is one


async def run_at(delay_ns: float, coroutine):
    await Timer(round(delay_ns), "ns")
    await coroutine


@cocotb.test()
async def test_a_hard_irq_preempts_process_context_at_the_next_slice(dut):
    cpu, log = new_cpu(), {}

    async def process():
        async with cpu.context("process"):
            await cpu.charge(2500, "work")  # 25 us: five slices
        log["process_done"] = now()

    async def hardirq():
        log["irq_asked"] = now()
        async with cpu.context("hardirq"):
            log["irq_ran"] = now()
            await cpu.charge(100, "isr")

    start = now()
    task = cocotb.start_soon(process())
    await cocotb.start_soon(run_at(7000, hardirq()))  # 2 us into the second slice
    await task
    assert log["irq_ran"] - start == SLICE_NS * 2, "taken at the end of the running slice"
    assert log["irq_ran"] - log["irq_asked"] == 3000
    assert [round(t) for t in cpu.preemption_ns] == [3000]
    assert max(cpu.preemption_ns) <= cpu.preemption_bound_ns()
    assert log["process_done"] - start == 25_000 + 1000, "resumed after the ISR"


@cocotb.test()
async def test_bottom_halves_disabled_keep_softirq_out_but_not_hard_irqs(dut):
    cpu, order = new_cpu(), []

    async def pktgen_xmit():
        async with cpu.context("process"):
            async with cpu.context("softirq"):  # local_bh_disable()
                await cpu.charge(1500, "xmit")  # 15 us
                order.append(("xmit done", now()))
            await cpu.charge(100, "process")  # after local_bh_enable()
            order.append(("process done", now()))

    async def ctx(level, cycles, name):
        async with cpu.context(level):
            order.append((f"{name} runs", now()))
            await cpu.charge(cycles, name)

    start = now()
    task = cocotb.start_soon(pktgen_xmit())
    cocotb.start_soon(run_at(1000, ctx("softirq", 200, "napi")))
    cocotb.start_soon(run_at(2000, ctx("hardirq", 100, "isr")))
    await task
    times = {name: t - start for name, t in order}
    assert [name for name, _ in order] == [
        "isr runs", "xmit done", "napi runs", "process done"
    ]  # fmt: skip
    assert times["isr runs"] == SLICE_NS  # preempts the bh-disabled xmit at its boundary
    assert times["xmit done"] == 15_000 + 1000
    assert times["napi runs"] == 16_000, "the pending softirq runs at local_bh_enable()"
    assert times["process done"] == 16_000 + 2000 + 1000


@cocotb.test()
async def test_a_softirq_runs_to_completion_against_process_context(dut):
    cpu, order = new_cpu(), []

    async def ctx(level, cycles, name):
        async with cpu.context(level):
            order.append((name, now()))
            await cpu.charge(cycles, name)
            await cpu.charge(cycles, name)

    start = now()
    soft = cocotb.start_soon(ctx("softirq", 1000, "napi"))
    await Timer(1, "ns")
    proc = cocotb.start_soon(ctx("process", 100, "stack"))
    await soft
    await proc
    assert [(n, t - start) for n, t in order] == [("napi", 0), ("stack", 20_000)]
    assert cpu.preemption_ns == [], "equal or lower levels wait, they do not preempt"


@cocotb.test()
async def test_spinning_holds_the_cpu_and_sleeping_gives_it_up(dut):
    cpu, log = new_cpu(), {}

    async def sleeper():
        async with cpu.context("softirq"):
            await cpu.sleep(10_000)
            log["sleeper back"] = now()

    async def worker():
        async with cpu.context("process"):
            log["worker runs"] = now()
            await cpu.charge(100, "work")

    start = now()
    first = cocotb.start_soon(sleeper())
    await Timer(1, "ns")
    await cocotb.start_soon(worker())
    assert log["worker runs"] - start == 1, "the sleeping softirq left the CPU free"
    await first
    assert cpu.busy_ns["work"] == 1000 and "sleep" not in cpu.busy_ns

    spin_start = now()
    async with cpu.context("process"):
        await cpu.spin(12_000, "pktgen_spin")
    assert now() - spin_start == 12_000
    assert cpu.busy_ns["pktgen_spin"] == 12_000 and cpu.totals()["spin_ns"] == 12_000


class FlatMemory:
    """A bytearray with the HostMemory surface CpuWritePath uses."""

    def __init__(self, size: int, latency_cycles: int):
        self.data = bytearray(size)
        self.latency_cycles = latency_cycles
        self.writes: list[tuple[float, int]] = []

    def read(self, address: int, length: int) -> bytes:
        return bytes(self.data[address : address + length])

    def write(self, address: int, data: bytes) -> None:
        self.writes.append((now(), address))
        self.data[address : address + len(data)] = data


@cocotb.test()
async def test_stores_land_in_order_taking_time_and_the_cpu_reads_its_own(dut):
    memory = FlatMemory(256, latency_cycles=10)
    path = CpuWritePath(memory, clock_ns=10.0)
    start = now()
    path.store(0x40, b"\x11" * 12)  # 10 + 3 cycles
    path.store(0x4C, b"\x22" * 4)  # 10 + 1 cycles, after the first
    assert memory.read(0x40, 16) == bytes(16), "nothing landed yet"
    assert path.read(0x44, 12) == b"\x11" * 8 + b"\x22" * 4, "the CPU sees its own stores"
    await path.idle.wait()
    assert [(t - start, a) for t, a in memory.writes] == [(130, 0x40), (240, 0x4C)]
    assert memory.read(0x40, 16) == b"\x11" * 12 + b"\x22" * 4


@cocotb.test()
async def test_contexts_on_two_cores_run_in_parallel_and_on_one_core_serialise(dut):
    """Two process contexts of 20 us each: on cores 0 and 1 both end at 20 us and each
    core is busy 20 us; on one core of a two-core CPU the second waits (ends at 40 us).
    A core that does not exist is refused, naming it."""
    cpu, done = CpuModel(100.0, CpuCosts(), cores=2), {}

    async def work(name: str, core: int):
        async with cpu.context("process", core=core):
            await cpu.charge(2000, "work")
        done[name] = now()

    start = now()
    first = cocotb.start_soon(work("a", 0))
    second = cocotb.start_soon(work("b", 1))
    await first
    await second
    assert (done["a"] - start, done["b"] - start) == (20_000, 20_000)
    totals = cpu.totals()
    assert [round(ns) for ns in totals["core_busy_ns"]] == [20_000, 20_000]
    assert round(totals["busy_ns"]) == 40_000

    start = now()
    first = cocotb.start_soon(work("c", 1))
    second = cocotb.start_soon(work("d", 1))
    await first
    await second
    assert sorted((done["c"] - start, done["d"] - start)) == [20_000, 40_000]

    try:
        async with cpu.context("process", core=2):
            pass
    except ValueError as error:
        assert "core 2 does not exist: this CPU has cores 0..1" in str(error)
    else:
        raise AssertionError("core 2 of a two-core CPU was accepted")
