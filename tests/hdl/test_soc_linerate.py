"""Full-duplex line rate through the SoC (tests/cocotb/soc_linerate_tb.py), 100 MHz
system clock, 32-bit bus, 64- and 1518-byte frames, on each simulator."""

from cocotb_cases import run_cocotb_cases


def test_soc_full_duplex_line_rate(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top="macdma_soc", test_module="soc_linerate_tb", sim=sim)
