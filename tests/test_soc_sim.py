"""The SoC's cocotb tests (tests/cocotb/soc_tb.py) on each simulator."""


def test_soc(cocotb_run, sim):
    result = cocotb_run(top="macdma_soc", test_module="soc_tb", sim=sim)
    assert result.failed == 0 and result.passed >= 3
