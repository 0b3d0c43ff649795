"""The machine timer (hdl/cpu/timer.py) in Amaranth's simulator: its interrupt rises when mtime
reaches mtimecmp."""

from __future__ import annotations

from amaranth import *
from amaranth.sim import Simulator
from wishbone_master import wishbone_cycle

from macdma.hdl.cpu.memory_map import TIMER_REGISTERS
from macdma.hdl.cpu.timer import MachineTimer


def test_the_machine_timer_interrupts_when_mtime_reaches_mtimecmp():
    timer = MachineTimer()
    seen = {}

    async def testbench(ctx):
        base = TIMER_REGISTERS
        lo, _ = await wishbone_cycle(ctx, timer.bus, base["MTIME_LO"] // 4)
        deadline = lo + 40
        await wishbone_cycle(ctx, timer.bus, base["MTIMECMP_LO"] // 4, we=1, data=deadline)
        await wishbone_cycle(ctx, timer.bus, base["MTIMECMP_HI"] // 4, we=1, data=0)
        seen["early"] = ctx.get(timer.interrupt)
        rose_at = None
        for _ in range(100):
            await ctx.tick()
            if ctx.get(timer.interrupt):
                rose_at, _ = await wishbone_cycle(ctx, timer.bus, base["MTIME_LO"] // 4)
                break
        seen["deadline"], seen["rose_at"] = deadline, rose_at

    sim = Simulator(timer)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    # The read of MTIME once the line is seen high returns the deadline or just past it.
    assert not seen["early"]
    assert seen["rose_at"] is not None and 0 <= seen["rose_at"] - seen["deadline"] <= 3
