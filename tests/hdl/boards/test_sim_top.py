"""The board design with its RGMII pins (``macdma_board``, tests/cocotb/board_tb.py) on each
simulator: the firmware driver over the UART bridge, cocotbext-eth's RGMII PHY models."""

from cocotb_cases import run_cocotb_cases


def test_board_sim(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top="macdma_board", test_module="board_tb", sim=sim)
