"""The SoC's RX system tests (tests/cocotb/soc_rx_tb.py) on each simulator."""


def test_soc_rx(cocotb_run, sim):
    result = cocotb_run(top="macdma_soc", test_module="soc_rx_tb", sim=sim)
    assert result.failed == 0 and result.passed >= 7
