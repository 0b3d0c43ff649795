"""The SoC's basic cocotb tests (tests/cocotb/soc_tb.py) on each simulator, with the
default 32-bit and the optional 64-bit AXI4 data path."""

import pytest


@pytest.mark.parametrize("data_width", [32, 64])
def test_soc(cocotb_run, sim, data_width):
    result = cocotb_run(
        top="macdma_soc", test_module="soc_tb", sim=sim, params={"data_width": data_width}
    )
    # run_cocotb raised already if a cocotb test failed or none ran; none may be skipped.
    assert [case.status for case in result.cases] == ["passed"] * len(result.cases)
