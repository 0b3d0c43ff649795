"""cocotb bench for the runner smoke test: an 8-bit counter with enable
(tests/sim/cosim/test_runner.py).

`test_counts_when_enabled` must pass; `test_deliberate_failure` must fail with the message
"deliberate failure: count=..." so the runner's failure reporting can be checked. The pytest
wrapper selects them with `testcase=`.
"""

import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge


async def reset(dut) -> None:
    """Start the clock and hold reset for two cycles with the counter disabled."""
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    dut.en.value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0
    await RisingEdge(dut.clk)


@cocotb.test()
async def test_counts_when_enabled(dut) -> None:
    """The counter holds while disabled and counts one per enabled clock, wrapping at 256."""
    await reset(dut)
    assert int(dut.count.value) == 0
    # `phase` is decoded in an `always @*` block from the register alone: under Icarus
    # -g2012 it stays X here unless the export wakes that block at time 0
    # (wake_processes_at_time_zero in sim/cosim/verilog.py).
    assert dut.phase.value.is_resolvable, f"phase is {dut.phase.value} after reset"
    assert int(dut.phase.value) == 0b0001
    cycles = int(os.environ["SMOKE_CYCLES"])  # set by the pytest wrapper: proves extra_env
    dut.en.value = 1
    await ClockCycles(dut.clk, cycles)
    dut.en.value = 0
    await RisingEdge(dut.clk)
    assert int(dut.count.value) == cycles % 256
    await ClockCycles(dut.clk, 3)
    assert int(dut.count.value) == cycles % 256, "counter moved while disabled"


@cocotb.test()
async def test_deliberate_failure(dut) -> None:
    """Fails on purpose so the runner's failure report can be checked."""
    await reset(dut)
    assert int(dut.count.value) == 99, f"deliberate failure: count={int(dut.count.value)}"
