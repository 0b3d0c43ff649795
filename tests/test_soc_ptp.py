"""PTP clock and timestamps of ``macdma_soc`` (tests/cocotb/soc_ptp_tb.py) on each simulator."""

from cocotb_cases import run_cocotb_cases


def test_soc_ptp(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top="macdma_soc", test_module="soc_ptp_tb", sim=sim)
