"""The SoC's RX system tests (tests/cocotb/soc_rx_tb.py) on each simulator."""

from cocotb_cases import run_cocotb_cases


def test_soc_rx(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top="macdma_soc", test_module="soc_rx_tb", sim=sim)
