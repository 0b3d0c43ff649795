"""``macdma_eth_mac`` as ``eth_mac_1g`` in link-level flow control, both ways at once
(tests/cocotb/mac_lfc_tb.py), on each simulator."""

from cocotb_cases import run_cocotb_cases

TOP = "macdma_eth_mac"


def test_mac_lfc(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top=TOP, test_module="mac_lfc_tb", sim=sim)
