"""TX system tests of the SoC (tests/cocotb/soc_tx_tb.py) on each simulator."""

from cocotb_cases import run_cocotb_cases


def test_soc_tx(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top="macdma_soc", test_module="soc_tx_tb", sim=sim)
