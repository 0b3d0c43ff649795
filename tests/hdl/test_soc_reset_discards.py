"""TX_RESET_DISCARDS / RX_RESET_DISCARDS (tests/cocotb/soc_reset_discards_tb.py) on each
simulator."""

from cocotb_cases import run_cocotb_cases


def test_soc_reset_discards(cocotb_run, sim, subtests):
    run_cocotb_cases(
        cocotb_run, subtests, top="macdma_soc", test_module="soc_reset_discards_tb", sim=sim
    )
