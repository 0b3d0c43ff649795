"""TX system tests of the SoC (tests/cocotb/soc_tx_tb.py) on each simulator."""


def test_soc_tx(cocotb_run, sim):
    result = cocotb_run(top="macdma_soc", test_module="soc_tx_tb", sim=sim)
    assert result.failed == 0 and result.passed == 13
