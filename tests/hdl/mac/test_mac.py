"""The MAC's cocotb tests (tests/cocotb/mac_tb.py) on each simulator."""

from cocotb_cases import run_cocotb_cases

TOP = "macdma_eth_mac"


def test_mac(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top=TOP, test_module="mac_tb", sim=sim)
