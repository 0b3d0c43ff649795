"""The board design with its RGMII pins (``macdma_board``, tests/cocotb/board_tb.py) on each
simulator: the firmware driver over the UART bridge, cocotbext-eth's RGMII PHY models."""


def test_board_sim(cocotb_run, sim):
    result = cocotb_run(top="macdma_board", test_module="board_tb", sim=sim)
    # run_cocotb raised already if a cocotb test failed or none ran; none may be skipped.
    assert [case.status for case in result.cases] == ["passed"] * len(result.cases)
