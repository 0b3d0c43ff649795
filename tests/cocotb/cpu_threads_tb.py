"""Hardware threads in the modelled CPU (sim/model/cpu.py, ``threads_per_pipeline`` 2):
two contexts on the two threads of one pipeline each advance at ``thread_share`` of the
clock while both issue, and at the whole clock while the sibling issues nothing. The SoC
is only the simulator's top here: nothing in these tests touches it.

Clock: a 100 MHz CPU, so 2,000 cycles alone take 20 us.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import Timer
from cocotb.utils import get_sim_time

from macdma.firmware.costs import CpuCosts
from macdma.sim.model.cpu import CpuModel

SHARE = 0.6


def threaded(cores: int = 2) -> CpuModel:
    return CpuModel(100.0, CpuCosts(), cores=cores, threads_per_pipeline=2, thread_share=SHARE)


def now() -> float:
    return get_sim_time("ps") / 1000


def near(value: float, expected: float) -> bool:
    return abs(value - expected) <= 1.0  # ns: the timers are rounded to the picosecond


async def work(cpu: CpuModel, core: int, cycles: float, done: dict, name: str, delay_ns=0):
    if delay_ns:
        await Timer(round(delay_ns), "ns")
    async with cpu.context("process", core=core):
        await cpu.charge(cycles, "work")
    done[name] = now()


@cocotb.test()
async def test_two_busy_threads_of_one_pipeline_each_run_at_the_share(dut):
    cpu, done = threaded(), {}
    start = now()
    tasks = [cocotb.start_soon(work(cpu, core, 2000, done, f"t{core}")) for core in (0, 1)]
    for task in tasks:
        await task
    for name in ("t0", "t1"):
        assert near(done[name] - start, 20_000 / SHARE), (name, done[name] - start)
    busy = cpu.totals()["core_busy_ns"]
    assert all(near(ns, 20_000 / SHARE) for ns in busy), busy


@cocotb.test()
async def test_an_idle_sibling_costs_nothing(dut):
    """Alone, beside a sleeping sibling, and beside one stalled on the bus (an MMIO access
    does not issue): the whole clock, as on a core of its own."""
    cpu, done = threaded(), {}
    start = now()
    await work(cpu, 0, 2000, done, "alone")
    assert near(done["alone"] - start, 20_000)

    async def sleeper():
        async with cpu.context("process", core=1):
            await cpu.sleep(30_000)

    async def stalled():
        async with cpu.context("process", core=1):
            async with cpu.step("mmio_bus"):
                await Timer(30, "us")

    for sibling in (sleeper, stalled):
        start = now()
        other = cocotb.start_soon(sibling())
        await work(cpu, 0, 2000, done, sibling.__name__)
        assert near(done[sibling.__name__] - start, 20_000), sibling.__name__
        await other


@cocotb.test()
async def test_the_rate_follows_the_sibling_starting_and_stopping(dut):
    """A: 2,000 cycles from 0; B: 500 cycles from 5 us. A runs alone for 5 us (500
    cycles), both at the share until B's 500 are done (5 / 0.6 us later), then A alone
    for what is left of its 2,000."""
    cpu, done = threaded(), {}
    start = now()
    a = cocotb.start_soon(work(cpu, 0, 2000, done, "a"))
    b = cocotb.start_soon(work(cpu, 1, 500, done, "b", delay_ns=5000))
    await a
    await b
    shared = 5000 / SHARE
    assert near(done["b"] - start, 5000 + shared)
    a_left = 20_000 - 5000 - shared * SHARE
    assert near(done["a"] - start, 5000 + shared + a_left)


@cocotb.test()
async def test_threads_of_different_pipelines_do_not_share(dut):
    """Cores 0 and 2 of a four-thread CPU are on two pipelines: both at the whole clock;
    a thread's cache domain is its pipeline."""
    cpu, done = threaded(cores=4), {}
    start = now()
    tasks = [cocotb.start_soon(work(cpu, core, 2000, done, f"t{core}")) for core in (0, 2)]
    for task in tasks:
        await task
    assert near(done["t0"] - start, 20_000) and near(done["t2"] - start, 20_000)
    assert [cpu.cache_domain(core) for core in range(4)] == [0, 0, 1, 1]


@cocotb.test()
async def test_impossible_thread_settings_are_refused(dut):
    for kwargs, message in (
        ({"cores": 2, "threads_per_pipeline": 3}, "threads_per_pipeline must be 1 or 2"),
        ({"cores": 3, "threads_per_pipeline": 2}, "divide cores (3)"),
        ({"cores": 2, "threads_per_pipeline": 2, "thread_share": 0.4}, "thread_share must be"),
    ):
        try:
            CpuModel(100.0, CpuCosts(), **kwargs)
        except ValueError as error:
            assert message in str(error), (kwargs, str(error))
        else:
            raise AssertionError(f"{kwargs} was accepted")
