"""Full-duplex line rate through the SoC (tests/cocotb/soc_linerate_tb.py), 100 MHz
system clock, 32-bit bus, 64- and 1518-byte frames, on each simulator."""


def test_soc_full_duplex_line_rate(cocotb_run, sim):
    result = cocotb_run(top="macdma_soc", test_module="soc_linerate_tb", sim=sim)
    # run_cocotb raised already if a cocotb test failed or none ran; none may be skipped.
    assert [case.status for case in result.cases] == ["passed"] * len(result.cases)
