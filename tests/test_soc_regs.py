"""The SoC's register-bank and IRQ cocotb tests (tests/cocotb/soc_regs_tb.py) on each simulator."""


def test_soc_regs(cocotb_run, sim):
    result = cocotb_run(top="macdma_soc", test_module="soc_regs_tb", sim=sim)
    assert result.failed == 0 and result.passed >= 11
