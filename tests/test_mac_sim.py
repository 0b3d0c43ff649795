"""The MAC's cocotb tests (tests/cocotb/mac_tb.py) on each simulator."""

TOP = "macdma_eth_mac"


def test_mac(cocotb_run, sim):
    result = cocotb_run(top=TOP, test_module="mac_tb", sim=sim)
    assert result.failed == 0 and result.passed > 20
