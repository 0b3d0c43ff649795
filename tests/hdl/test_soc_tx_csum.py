"""TX CHECKSUM_PARTIAL insertion of ``macdma_soc`` (tests/cocotb/soc_tx_csum_tb.py) on each
simulator."""

from cocotb_cases import run_cocotb_cases


def test_soc_tx_csum(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top="macdma_soc", test_module="soc_tx_csum_tb", sim=sim)
