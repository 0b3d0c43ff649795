"""The SoC's RX system tests (tests/cocotb/soc_rx_tb.py) on each simulator."""


def test_soc_rx(cocotb_run, sim):
    result = cocotb_run(top="macdma_soc", test_module="soc_rx_tb", sim=sim)
    # run_cocotb raised already if a cocotb test failed or none ran; none may be skipped.
    assert [case.status for case in result.cases] == ["passed"] * len(result.cases)
