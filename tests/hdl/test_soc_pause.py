"""802.3x flow control of ``macdma_soc`` under RX overload (tests/cocotb/soc_pause_tb.py)."""

from cocotb_cases import run_cocotb_cases


def test_soc_pause(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top="macdma_soc", test_module="soc_pause_tb", sim=sim)
