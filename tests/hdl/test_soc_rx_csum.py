"""RX CHECKSUM_COMPLETE of ``macdma_soc`` (tests/cocotb/soc_rx_csum_tb.py) on each simulator."""

from cocotb_cases import run_cocotb_cases


def test_soc_rx_csum(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top="macdma_soc", test_module="soc_rx_csum_tb", sim=sim)
