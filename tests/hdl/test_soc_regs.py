"""The SoC's register-bank and IRQ cocotb tests (tests/cocotb/soc_regs_tb.py) on each simulator."""

from cocotb_cases import run_cocotb_cases


def test_soc_regs(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top="macdma_soc", test_module="soc_regs_tb", sim=sim)
