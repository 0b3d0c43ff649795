"""The SoC's register-bank and IRQ cocotb tests (tests/cocotb/soc_regs_tb.py) on each simulator."""


def test_soc_regs(cocotb_run, sim):
    result = cocotb_run(top="macdma_soc", test_module="soc_regs_tb", sim=sim)
    # run_cocotb raised already if a cocotb test failed or none ran; none may be skipped.
    assert [case.status for case in result.cases] == ["passed"] * len(result.cases)
