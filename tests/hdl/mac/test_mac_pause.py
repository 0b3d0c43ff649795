"""802.3x flow control of ``macdma_eth_mac`` (tests/cocotb/mac_pause_tb.py) on each simulator."""

from cocotb_cases import run_cocotb_cases

TOP = "macdma_eth_mac"


def test_mac_pause(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top=TOP, test_module="mac_pause_tb", sim=sim)
