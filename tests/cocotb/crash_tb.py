"""A cocotb module whose simulator dies mid-test, leaving no results file
(tests/sim/test_cli_errors.py checks the one message the runner and the CLI give for it)."""

import os

import cocotb
from cocotb.triggers import Timer


@cocotb.test()
async def test_simulator_dies(dut) -> None:
    """Ends the simulator process at once, as a crash does."""
    await Timer(10, unit="ns")
    os._exit(3)
